// What a webhook-server replica holds: a compiled plan for every target it must be able to
// convert, and why it holds none for the others (BRIEF §4, §6). No I/O: the replica feeds it the
// world it learns from the bus (configs, instances, targets) and asks it per request.
//
// Held while the resolver assigns the target to this replica's instance, or the live target's
// spec.conversion still names the instance's Service (`shouldHoldPlan`, the same rule the
// expected set is computed with): the losing side of a move keeps serving until the repoint
// lands. And for a drain after that: the apiserver does not stop calling the old Service the
// moment the repoint is stored. Requests already sent, and the resource's old storage, whose
// watch cache converts events for open watches until it is torn down about a second later,
// still reach it (the end-to-end move test counted ~160 failed conversions in the first second
// without a drain; a failed conversion inside a watch is invisible to the client, only the
// apiserver's metrics show it). A target that does not exist, or that two configs claim, is
// held nowhere.
//
// One bad config never takes a working plan away: a config that stops compiling keeps serving
// its last good plan, and the failure is reported (`failures`) until a fix compiles. A plan is
// compiled again only when what it is compiled from changes (the config's spec, the target's
// versions), never for a status write.
import { isDeepStrictEqual } from 'node:util';
import { type ConversionConfig, targetNameOf } from '../api/conversion-config.ts';
import { assignSubjects, fleetOf, type InstanceLike, subjectOf } from '../core/assignment.ts';
import { shouldHoldPlan } from '../core/handover.ts';
import { conversionServiceOf } from '../core/target-conversion.ts';
import { compile } from '../engine/compile.ts';
import { formatDiagnostic, isError } from '../engine/diagnostics.ts';
import type { Router } from '../engine/plan.ts';
import { targetVersions } from '../engine/target-versions.ts';

/** What the replica learned from the bus: parsed configs, the resolver's view of instances, live targets by name. */
export interface PlanWorld {
  configs: readonly ConversionConfig[];
  instances: readonly InstanceLike[];
  targets: ReadonlyMap<string, unknown>;
}

/** A request's answer to "can you convert this target": the plan, or why not (the Failure message). */
export type PlanLookup = { kind: 'plan'; router: Router; group: string } | { kind: 'none'; why: string };

/** What a plan was compiled from; a change compiles again (`sameSource`). */
interface Source {
  /** The config's uid and generation. */
  config: string;
  /** The live target's spec.versions, as last seen. */
  versions: unknown;
}

interface Held extends Source {
  router: Router;
  group: string;
}

/** What one `sync` changed: the targets that gained or lost a plan (the Lease republishes on either). */
export interface PlanSync {
  added: string[];
  removed: string[];
  /** Targets whose config does not compile now, with the diagnostics (a held one keeps its last good plan). */
  failed: string[];
  /** Targets no longer held that keep their plan until their drain ends (`nextDrainEndMs`). */
  draining: string[];
}

export interface HeldPlansOptions {
  /** How long a plan outlives the last reason to hold it, in ms (config webhook.drainSeconds). */
  drainMs: number;
  /**
   * false only for the negative control of test/e2e (config webhook.unsafeDropPlanOnReassign):
   * hold only what the resolver assigns here, and drop it at once.
   */
  holdWhileNamed?: boolean;
}

export class HeldPlans {
  private readonly instance: string;
  private readonly plans = new Map<string, Held>();
  private readonly failing = new Map<string, Source & { errors: string[] }>();
  private readonly notHeld = new Map<string, string>();
  /** Held plans no longer wanted, by when their drain ends (monotonic ms). */
  private readonly drainEnds = new Map<string, number>();
  private readonly holdWhileNamed: boolean;
  private readonly drainMs: number;

  constructor(instance: string, { drainMs, holdWhileNamed = true }: HeldPlansOptions) {
    this.instance = instance;
    this.holdWhileNamed = holdWhileNamed;
    this.drainMs = holdWhileNamed ? drainMs : 0;
  }

  /** Brings the plans in line with `world` at `nowMs` (monotonic); compiles only what changed. */
  sync(world: PlanWorld, nowMs: number): PlanSync {
    const before = new Set(this.plans.keys());
    const wanted = this.wantedTargets(world);
    const draining = this.drainUnwanted(wanted, nowMs);
    for (const target of [...this.failing.keys()]) if (!wanted.has(target)) this.failing.delete(target);
    const failed: string[] = [];
    for (const [target, { config, live }] of wanted) {
      if (!this.compileIfChanged(target, config, live)) failed.push(target);
    }
    const after = new Set(this.plans.keys());
    return {
      added: [...after].filter((t) => !before.has(t)).sort(),
      removed: [...before].filter((t) => !after.has(t)).sort(),
      failed: failed.sort(),
      draining,
    };
  }

  /** When the earliest drain ends (monotonic ms): the next `sync` that would drop a plan. */
  nextDrainEndMs(): number | undefined {
    return this.drainEnds.size === 0 ? undefined : Math.min(...this.drainEnds.values());
  }

  /**
   * Starts the drain of every held plan that is no longer wanted, drops those whose drain has
   * ended, and ends the drain of a target wanted again. Returns the targets that began draining.
   */
  private drainUnwanted(wanted: ReadonlyMap<string, unknown>, nowMs: number): string[] {
    const began: string[] = [];
    for (const target of [...this.plans.keys()]) {
      if (wanted.has(target)) {
        this.drainEnds.delete(target);
        continue;
      }
      let end = this.drainEnds.get(target);
      if (end === undefined) {
        end = nowMs + this.drainMs;
        this.drainEnds.set(target, end);
        if (this.drainMs > 0) began.push(target);
      }
      if (nowMs >= end) {
        this.plans.delete(target);
        this.drainEnds.delete(target);
      }
    }
    return began.sort();
  }

  lookup(target: string): PlanLookup {
    const held = this.plans.get(target);
    if (held) return { kind: 'plan', router: held.router, group: held.group };
    const failure = this.failing.get(target);
    if (failure) return { kind: 'none', why: `its config does not compile: ${failure.errors.join('; ')}` };
    return { kind: 'none', why: this.notHeld.get(target) ?? 'no config converts it' };
  }

  /** The targets with a compiled plan: what the replica's Lease reports. */
  servable(): ReadonlySet<string> {
    return new Set(this.plans.keys());
  }

  /** Targets whose config does not compile now, with the diagnostics; held ones still serve their last good plan. */
  failures(): ReadonlyMap<string, readonly string[]> {
    return new Map([...this.failing].map(([t, f]) => [t, f.errors]));
  }

  private wantedTargets(world: PlanWorld): Map<string, { config: ConversionConfig; live: unknown }> {
    this.notHeld.clear();
    const resolutions = assignSubjects(world.configs.map(subjectOf), fleetOf(world.instances));
    const wanted = new Map<string, { config: ConversionConfig; live: unknown }>();
    for (const config of world.configs) {
      const target = targetNameOf(config);
      const resolution = resolutions.get(target);
      if (resolution && !resolution.ok && resolution.reason === 'DuplicateTarget') {
        this.notHeld.set(target, resolution.message);
        continue;
      }
      const live = world.targets.get(target);
      if (live === undefined) {
        this.notHeld.set(target, `the target ${target} does not exist`);
        continue;
      }
      const assigned = resolution?.ok ? resolution.instance : undefined;
      const named = this.holdWhileNamed ? conversionServiceOf(live) : undefined;
      if (!shouldHoldPlan(this.instance, assigned, named)) {
        this.notHeld.set(
          target,
          `it is assigned to ${assigned ?? 'no instance'} and its conversion does not name ${this.instance}`,
        );
        continue;
      }
      wanted.set(target, { config, live });
    }
    return wanted;
  }

  /** False when the config does not compile now (a plan compiled before, if any, stays). */
  private compileIfChanged(target: string, config: ConversionConfig, live: unknown): boolean {
    const source: Source = { config: configRevision(config), versions: versionsOf(live) };
    const held = this.plans.get(target);
    if (held && sameSource(held, source)) {
      held.versions = source.versions;
      this.failing.delete(target);
      return true;
    }
    const failure = this.failing.get(target);
    if (failure && sameSource(failure, source)) {
      failure.versions = source.versions;
      return false;
    }
    const result = compile(config.spec, targetVersions(live));
    if (!result.ok) {
      this.failing.set(target, {
        ...source,
        errors: result.diagnostics.filter(isError).map(formatDiagnostic),
      });
      return false;
    }
    this.failing.delete(target);
    this.plans.set(target, { ...source, router: result.router, group: groupOf(live) });
    return true;
  }
}

/**
 * Whether a plan compiled from `a` still stands for `b`. The config by uid and generation, which
 * the apiserver bumps on every change of its spec and never for status: the config's status
 * writes, the common write, cost a string comparison. The target by its spec.versions, the
 * only part a plan reads: the same array when the record did not change, otherwise compared by
 * value (a repoint of spec.conversion, or a status write, compiles nothing).
 */
function sameSource(a: Source, b: Source): boolean {
  return a.config === b.config && (a.versions === b.versions || isDeepStrictEqual(a.versions, b.versions));
}

/** Without a generation (never so for objects as the apiserver returns them), any write counts. */
function configRevision(config: ConversionConfig): string {
  const { uid, generation, resourceVersion } = config.metadata as {
    uid?: string;
    generation?: number;
    resourceVersion?: string;
  };
  return typeof generation === 'number' ? `${uid}/g${generation}` : `${uid}/rv${resourceVersion}`;
}

function versionsOf(live: unknown): unknown {
  return (live as { spec?: { versions?: unknown } }).spec?.versions;
}

function groupOf(live: unknown): string {
  const group = (live as { spec?: { group?: unknown } }).spec?.group;
  return typeof group === 'string' ? group : '';
}
