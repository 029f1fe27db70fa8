// What a webhook-server replica holds: a compiled plan for every target it must be able to
// convert, and why it holds none for the others (BRIEF §4, §6). No I/O: the replica feeds it the
// world it learns from the bus (configs, instances, targets) and asks it per request.
//
// Held while the resolver assigns the target to this replica's instance, or what the apiserver
// routes the target by still names the instance's Service (`shouldHoldPlan`, the same rule the
// expected set is computed with; for an XRD, the XRD or any CRD Crossplane generated from it):
// the losing side of a move keeps serving until the repoint reaches what the apiserver reads. Those are the plans the replica *reports* in its Lease, and a report means exactly what
// the handover gate needs: "held, and held for as long as the target names this Service".
//
// A plan is dropped on evidence, never on a clock alone (BRIEF §6). The evidence is a *current*
// view (bus/view-lag.ts) showing the target neither assigned here nor naming this Service; from
// the moment it is seen the target leaves the report, and the plan is dropped only once the
// evidence has held for the drain (`drainMs`), the Lease no longer reports the target (every set
// given to the publisher is written), and no review used the plan for as long. The drain is
// there because the apiserver does not stop calling the old Service the moment the repoint is
// stored: requests already sent, and the resource's old storage, whose watch cache converts
// events for open watches until it is torn down about a second later, still reach it (the
// end-to-end move test counted ~160 failed conversions in the first second without a drain). A
// view that is behind the bus or cannot tell is no evidence: nothing is dropped while it lasts
// (after a NATS restart a replica's stalled view let a 30 s drain run out while the target was
// being repointed at it: 147 failed conversions, issue 27).
//
// A review that reaches the replica is served if the replica can convert it: the apiserver
// calling this Service is itself evidence that the target names it, and a view that says
// otherwise is behind (BRIEF §6). So a review for a target without a plan compiles one on
// demand from the config and target the view holds; only a target with no config, two configs,
// no definition in the view, or rules that do not compile is refused. A plan compiled on demand
// is not reported (the view does not call for it) and drains like any other once unused.
//
// A sync decides what to hold; it compiles nothing. The targets whose plan is missing or was
// compiled from another revision wait in `pending`, compiled a bounded slice at a time by the
// caller (`compilePending`, the replica yields to the event loop between slices) and at once by
// a review that needs one (`lookup`): a replica is ready once its view has caught up, not once
// it has compiled everything (issue 31). `servable` lists compiled plans only, so a report still
// means "held"; a pending recompile leaves the last good plan reported and serving meanwhile,
// as a failed one does.
//
// The world is what the replica's view keeps: configs without their rules, targets without their
// schemas (views/projection.ts). A compile reads both whole, which the caller fetches from the bus
// and hands in (`SourceOf`); nothing here holds a schema once its plan is compiled.
//
// One bad config never takes a working plan away, unless it asks to: a config that stops
// compiling keeps serving its last good plan (driftPolicy KeepServingStale, the default), and
// the failure is reported (`failures`) until a fix compiles. Under driftPolicy FailClosed the
// held plan is dropped the moment a recompile fails, whatever changed: the target's versions
// (schema drift) or the config's own spec (past admission, which refuses it when it can), as the
// reference operator reverts an Applied config on any failed re-validation; the target's
// reviews are then refused with a message naming the config and the policy, and the Lease no
// longer reports it. What is not a failure to compile drops nothing under either policy: sources
// that could not be read from the bus, a target gone from the view (its drain), a config that
// never compiled (it has no plan to drop). A review of a FailClosed target whose recompile is
// pending compiles it first, so no review is converted with a plan its view has seen drift. A
// plan is compiled again only when what it is compiled from changes (the config's spec, the
// target's versions), never for a status write: a new revision of the target whose versions are
// the same (a repoint of spec.conversion) is read and compared, not compiled.
import { createHash } from 'node:crypto';
import { type ConversionConfig, driftPolicyOf, targetNameOf } from '../api/conversion-config.ts';
import { assignSubjects, fleetOf, type InstanceLike, subjectOf } from '../core/assignment.ts';
import { shouldHoldPlan } from '../core/handover.ts';
import { compile } from '../engine/compile.ts';
import { formatDiagnostic, isError } from '../engine/diagnostics.ts';
import type { Router } from '../engine/plan.ts';
import { targetVersions } from '../engine/target-versions.ts';
import type { ConfigSources } from '../views/config-sources.ts';
import { objectRevision } from '../views/config-verdicts.ts';

/** What the replica learned from the bus: parsed configs, the resolver's view of instances, live targets by name (as its view keeps them). */
export interface PlanWorld {
  configs: readonly ConversionConfig[];
  instances: readonly InstanceLike[];
  targets: ReadonlyMap<string, unknown>;
  /**
   * By target name, the Services its conversions may go to now: its own spec.conversion's and,
   * for an XRD, those of the CRDs Crossplane generated from it (views/view-reads.ts
   * `readTargetServices`). Absent for a target that names none.
   */
  services: ReadonlyMap<string, readonly string[]>;
}

/** A request's answer to "can you convert this target": the plan, or why not (the Failure message). */
export type PlanLookup = { kind: 'plan'; router: Router; group: string } | { kind: 'none'; why: string };

/** When a sync happens, and whether what it sees is evidence. */
export interface SyncMoment {
  /** Monotonic ms. */
  nowMs: number;
  /** The view was confirmed current (bus/view-lag.ts): only then does "not named here" count. */
  viewCurrent: boolean;
  /** Every set given to the Lease publisher is on the Lease (or none ever was): a withdrawn target is not reported. */
  leaseSettled: boolean;
}

/**
 * What a plan was compiled from. A new revision of the config compiles again; a new revision of
 * the target compiles again only if its versions changed (`versions`).
 */
interface Source {
  /** The config's uid and generation. */
  config: string;
  /** The target's uid and generation. */
  target: string;
  /** A digest of the whole target's spec.versions, schemas included. */
  versions: string;
}

/** The whole config and target to compile a wanted target's plan from, read by the caller; undefined: not read (yet). */
export type SourceOf = (target: string, want: Wanted) => ConfigSources | undefined;

interface Held extends Source {
  router: Router;
  group: string;
  /** Since when a current view has shown the target neither assigned here nor naming this Service (monotonic ms). */
  unwantedSinceMs?: number;
  /** Since when, within that, the Lease has been known not to report the target. */
  unreportedSinceMs?: number;
  /** The last review this plan converted. */
  lastUsedMs?: number;
}

/** What one `sync` changed: the targets that lost a plan or began draining, and how many wait for a compile. */
export interface PlanSync {
  removed: string[];
  /** Targets that left the report this sync and drain until the evidence has held long enough (`nextDrainEndMs`). */
  draining: string[];
  /** Targets the view calls for here whose plan is not compiled from what the view holds now. */
  pending: number;
}

/** What one `compilePending` did: the targets that gained a plan, and those whose config does not compile. */
export interface PlanCompile {
  /** Targets that had no plan and have one now (a recompiled plan is in neither list). */
  added: string[];
  /** Targets whose config does not compile now, with the diagnostics (a held one keeps its last good plan). */
  failed: string[];
  /** Of those, the targets whose held plan was dropped because their config's driftPolicy is FailClosed. */
  dropped: string[];
}

/** A target the view calls for here (or a review asks for), and its config and target as the view keeps them. */
export interface Wanted {
  config: ConversionConfig;
  live: unknown;
}

export interface HeldPlansOptions {
  /** How long the evidence that a target left this instance must hold before its plan is dropped, in ms (webhook.drainSeconds). */
  drainMs: number;
  /**
   * false only for the negative control of test/e2e (config webhook.unsafeDropPlanOnReassign):
   * hold only what the resolver assigns here, drop it at once, and compile nothing on demand.
   */
  holdWhileNamed?: boolean;
}

export class HeldPlans {
  private readonly instance: string;
  private readonly plans = new Map<string, Held>();
  private readonly failing = new Map<string, Failure>();
  private readonly notHeld = new Map<string, string>();
  /** Wanted targets whose plan is not compiled from what the last sync saw, in the order they are compiled. */
  private pending = new Map<string, Wanted>();
  /** The targets the last sync's view calls for here (assigned or named): what the Lease reports. */
  private kept: ReadonlySet<string> = new Set();
  private world: PlanWorld | undefined;
  private readonly holdWhileNamed: boolean;
  private readonly drainMs: number;

  constructor(instance: string, { drainMs, holdWhileNamed = true }: HeldPlansOptions) {
    this.instance = instance;
    this.holdWhileNamed = holdWhileNamed;
    this.drainMs = holdWhileNamed ? drainMs : 0;
  }

  /**
   * Decides what to hold in line with `world`: drops only on evidence, and queues for a compile
   * (`compilePending`) only what changed. Compiles nothing itself.
   */
  sync(world: PlanWorld, moment: SyncMoment): PlanSync {
    this.world = world;
    const before = new Set(this.plans.keys());
    const { wanted, named } = this.wantedTargets(world);
    this.kept = new Set([...wanted.keys(), ...named]);
    const draining = this.drainUnkept(moment);
    for (const target of [...this.failing.keys()]) if (!wanted.has(target)) this.failing.delete(target);
    this.pending = new Map();
    for (const [target, want] of wanted)
      if (!this.compiledFrom(target, revisionsOf(want))) this.pending.set(target, want);
    return {
      removed: [...before].filter((t) => !this.plans.has(t)).sort(),
      draining,
      pending: this.pending.size,
    };
  }

  /**
   * Compiles pending plans in the order the sync queued them, from what `sourceOf` read: at
   * least one, then as long as `more(compiledSoFar)` says (the caller's time slice), and up to
   * the first whose sources are not read yet. Everything read when `more` is left out.
   */
  compilePending(sourceOf: SourceOf, more: (compiled: number) => boolean = () => true): PlanCompile {
    const added: string[] = [];
    const failed: string[] = [];
    const dropped: string[] = [];
    let compiled = 0;
    for (const [target, want] of this.pending) {
      if (compiled > 0 && !more(compiled)) break;
      const sources = sourceOf(target, want);
      if (sources === undefined) break;
      const had = this.plans.has(target);
      if (!this.compileQueued(target, sources)) {
        failed.push(target);
        if (had && !this.plans.has(target)) dropped.push(target);
      } else if (!had) added.push(target);
      compiled++;
    }
    return { added: added.sort(), failed: failed.sort(), dropped: dropped.sort() };
  }

  /** The pending targets' wants, in the order they will be compiled: what the caller reads the sources of. */
  pendingWants(): [string, Wanted][] {
    return [...this.pending];
  }

  /**
   * What a review of `target` compiles from: a plan not compiled yet, pending or one the view
   * does not call for here. Undefined when a plan is held (a pending recompile of it is the
   * background's: the review is served at once, as by a view a moment behind), or nothing can
   * serve it.
   */
  wantOf(target: string): Wanted | undefined {
    const pending = this.pending.get(target);
    // A FailClosed config's held plan serves only while no newer revision waits: the review
    // compiles it first, and is refused if it no longer compiles.
    if (this.plans.has(target)) return pending && failsClosed(pending.config) ? pending : undefined;
    return pending ?? this.onDemandWant(target);
  }

  /** Whether a plan for `target` is held (reported or draining). */
  holds(target: string): boolean {
    return this.plans.has(target);
  }

  /** How many plans the view calls for here are not compiled yet from what it holds. */
  pendingCount(): number {
    return this.pending.size;
  }

  /** The targets waiting for a compile, in the order they will be compiled. */
  pendingTargets(): string[] {
    return [...this.pending.keys()];
  }

  /** When the earliest drain can end (monotonic ms): the next `sync` that may drop a plan. */
  nextDrainEndMs(): number | undefined {
    let next: number | undefined;
    for (const held of this.plans.values()) {
      const end = drainEndOf(held, this.drainMs);
      if (end !== undefined && (next === undefined || end < next)) next = end;
    }
    return next;
  }

  /** Whether a plan is held that the report leaves out: the replica syncs again as the Lease and the view move. */
  draining(): boolean {
    for (const target of this.plans.keys()) if (!this.kept.has(target)) return true;
    return false;
  }

  /**
   * Starts the drain of every held plan the view no longer calls for (on a current view only),
   * drops those whose drain is over, and ends the drain of one called for again. Returns the
   * targets that began draining.
   */
  private drainUnkept(moment: SyncMoment): string[] {
    const began: string[] = [];
    for (const [target, held] of [...this.plans]) {
      if (this.kept.has(target)) {
        delete held.unwantedSinceMs;
        delete held.unreportedSinceMs;
        continue;
      }
      if (!this.holdWhileNamed) {
        this.plans.delete(target);
        continue;
      }
      if (!moment.viewCurrent) {
        // No evidence: a view behind the bus may not have seen the target come back here.
        delete held.unwantedSinceMs;
        delete held.unreportedSinceMs;
        continue;
      }
      if (held.unwantedSinceMs === undefined) {
        held.unwantedSinceMs = moment.nowMs;
        began.push(target);
      }
      if (moment.leaseSettled) held.unreportedSinceMs ??= moment.nowMs;
      const end = drainEndOf(held, this.drainMs);
      if (end !== undefined && moment.nowMs >= end) this.plans.delete(target);
    }
    return began.sort();
  }

  /**
   * The plan for a review of `target` at `nowMs` (monotonic): held, or compiled now from what
   * `sourceOf` read (`wantOf` says what to read). A pending compile is done first, so a review
   * never waits for the background queue nor converts with a plan its view has already replaced;
   * when its sources could not be read, the plan held serves.
   */
  lookup(target: string, nowMs: number, sourceOf: SourceOf): PlanLookup {
    const pending = this.pending.get(target);
    const pendingSources = pending && sourceOf(target, pending);
    if (pendingSources) this.compileQueued(target, pendingSources);
    const held = this.plans.get(target) ?? this.compileOnDemand(target, sourceOf);
    if (held) {
      held.lastUsedMs = nowMs;
      return { kind: 'plan', router: held.router, group: held.group };
    }
    const failure = this.failing.get(target);
    if (failure?.failClosed)
      return {
        kind: 'none',
        why: `its config ${failure.failClosed} does not compile and its driftPolicy is FailClosed, so its conversions are refused until it compiles again: ${failure.errors.join('; ')}`,
      };
    if (failure) return { kind: 'none', why: `its config does not compile: ${failure.errors.join('; ')}` };
    return { kind: 'none', why: this.notHeld.get(target) ?? 'no config converts it' };
  }

  /** The targets with a compiled plan that the view calls for here: what the replica's Lease reports. */
  servable(): ReadonlySet<string> {
    const out = new Set<string>();
    for (const target of this.plans.keys()) if (this.kept.has(target)) out.add(target);
    return out;
  }

  /** Every target with a compiled plan, reported or draining: what a review can be served with. */
  held(): ReadonlySet<string> {
    return new Set(this.plans.keys());
  }

  /** Targets whose config does not compile now, with the diagnostics; held ones still serve their last good plan. */
  failures(): ReadonlyMap<string, readonly string[]> {
    return new Map([...this.failing].map(([t, f]) => [t, f.errors]));
  }

  /**
   * The targets the view calls for here: `wanted`, with the config to compile (assigned here, or
   * naming this Service), and `named`, every target naming this Service whether or not a config
   * still converts it (its plan, if held, stays).
   */
  private wantedTargets(world: PlanWorld): {
    wanted: Map<string, { config: ConversionConfig; live: unknown }>;
    named: Set<string>;
  } {
    this.notHeld.clear();
    const resolutions = assignSubjects(world.configs.map(subjectOf), fleetOf(world.instances));
    const wanted = new Map<string, { config: ConversionConfig; live: unknown }>();
    const named = new Set<string>();
    if (this.holdWhileNamed)
      for (const [target, services] of world.services)
        if (shouldHoldPlan(this.instance, undefined, services)) named.add(target);
    for (const config of world.configs) {
      const target = targetNameOf(config);
      const resolution = resolutions.get(target);
      if (resolution && !resolution.ok && resolution.reason === 'DuplicateTarget') {
        this.notHeld.set(target, resolution.message);
        continue;
      }
      const live = world.targets.get(target);
      if (live === undefined) {
        this.notHeld.set(target, `the target ${target} does not exist in this replica's view of the bus`);
        continue;
      }
      const assigned = resolution?.ok ? resolution.instance : undefined;
      if (assigned === this.instance || named.has(target)) wanted.set(target, { config, live });
    }
    return { wanted, named };
  }

  /**
   * The one config and the target as the view holds them, for a target the view does not call
   * for here: what a review for it compiles from. Undefined when there is no such config or
   * definition.
   */
  private onDemandWant(target: string): Wanted | undefined {
    if (!this.holdWhileNamed || !this.world || this.notHeld.has(target)) return undefined;
    const configs = this.world.configs.filter((c) => targetNameOf(c) === target);
    const [config] = configs;
    if (config === undefined || configs.length > 1) return undefined;
    const live = this.world.targets.get(target);
    return live === undefined ? undefined : { config, live };
  }

  /**
   * A plan for a target the view does not call for here, compiled because a review for it came.
   * Undefined (the reason kept for the answer) when there is nothing to compile it from, its
   * sources could not be read, or the rules do not compile.
   */
  private compileOnDemand(target: string, sourceOf: SourceOf): Held | undefined {
    const want = this.onDemandWant(target);
    const sources = want && sourceOf(target, want);
    if (want === undefined || sources === undefined) return undefined;
    if (!this.compileIfChanged(target, revisionsOf(want), sources)) return undefined;
    return this.plans.get(target);
  }

  /** Compiles a pending target and takes it off the queue; false when its config does not compile. */
  private compileQueued(target: string, sources: ConfigSources): boolean {
    const want = this.pending.get(target);
    if (want === undefined) return true;
    this.pending.delete(target);
    return this.compileIfChanged(target, revisionsOf(want), sources);
  }

  /** Whether the target's plan (or its remembered failure) was compiled from these revisions. */
  private compiledFrom(target: string, revisions: Revisions): boolean {
    const held = this.plans.get(target);
    if (held && sameRevisionPair(held, revisions)) {
      this.failing.delete(target);
      return true;
    }
    const failure = this.failing.get(target);
    return failure !== undefined && sameRevisionPair(failure, revisions);
  }

  /**
   * Compiles from `sources` unless the plan held was compiled from the same config and versions
   * (then it now stands for `revisions`); false when the config does not compile now, or its
   * sources could not be read (a plan compiled before, if any, stays).
   */
  private compileIfChanged(target: string, revisions: Revisions, sources: ConfigSources): boolean {
    if (this.compiledFrom(target, revisions)) return !this.failing.has(target);
    if (sources.kind === 'unreadable') {
      this.failing.set(target, { ...revisions, errors: [sources.why] });
      return false;
    }
    const versions = versionsDigest(sources.target);
    const held = this.plans.get(target);
    if (held && held.config === revisions.config && held.versions === versions) {
      held.target = revisions.target;
      this.failing.delete(target);
      return true;
    }
    const result = compile(sources.config.spec, targetVersions(sources.target));
    if (!result.ok) {
      const failClosed = failsClosed(sources.config);
      this.failing.set(target, {
        ...revisions,
        errors: result.diagnostics.filter(isError).map(formatDiagnostic),
        ...(failClosed && { failClosed: `${sources.config.kind} ${sources.config.metadata.name}` }),
      });
      // FailClosed: the plan compiled before no longer stands for the config and target it serves.
      if (failClosed) this.plans.delete(target);
      return false;
    }
    this.failing.delete(target);
    this.plans.set(target, {
      ...held,
      ...revisions,
      versions,
      router: result.router,
      group: groupOf(sources.target),
    });
    return true;
  }
}

/** What the view holds a wanted target's sources at: the config's and the target's revisions. */
type Revisions = Pick<Source, 'config' | 'target'>;

/** A target whose config does not compile at these revisions, and why. */
interface Failure extends Revisions {
  errors: string[];
  /** Set when the config's driftPolicy is FailClosed: `<Kind> <name>`, for the refusal. */
  failClosed?: string;
}

function failsClosed(config: ConversionConfig): boolean {
  return driftPolicyOf(config.spec) === 'FailClosed';
}

/** Whether sources read for `a` may compile `b`: the same revisions of the config and the target. */
export function sameRevisions(a: Wanted, b: Wanted): boolean {
  return sameRevisionPair(revisionsOf(a), revisionsOf(b));
}

function revisionsOf(want: Wanted): Revisions {
  return {
    config: objectRevision(want.config),
    target: objectRevision(want.live as { metadata: object }),
  };
}

function sameRevisionPair(a: Revisions, b: Revisions): boolean {
  return a.config === b.config && a.target === b.target;
}

/** When a draining plan may be dropped: the evidence, the Lease's silence and the last use, each a drain old. */
function drainEndOf(held: Held, drainMs: number): number | undefined {
  if (held.unwantedSinceMs === undefined || held.unreportedSinceMs === undefined) return undefined;
  return Math.max(held.unwantedSinceMs, held.unreportedSinceMs, held.lastUsedMs ?? 0) + drainMs;
}

/** The target's spec.versions, schemas included, as a digest: the only part of the target a plan reads. */
function versionsDigest(live: unknown): string {
  const versions = (live as { spec?: { versions?: unknown } }).spec?.versions;
  return createHash('sha256')
    .update(JSON.stringify(versions) ?? '')
    .digest('base64');
}

function groupOf(live: unknown): string {
  const group = (live as { spec?: { group?: unknown } }).spec?.group;
  return typeof group === 'string' ? group : '';
}
