// May a ConversionWebhookServer go? Not while a target still depends on it: deleting it
// collects its Deployment, and every conversion of such a target would then fail, which for a
// served CRD means every read of its objects fails. So a finalizer holds the instance while
// any target either
//   * resolves to it (core/assignment.ts over the fleet as it is: pinned, pool or default), or
//   * names its Service in the live spec.conversion (the move away has not been patched yet;
//     matched by Service name only, as the data plane's `shouldHoldPlan` does), or, for an XRD,
//     a CRD Crossplane generated from it still does (the XRD moved, Crossplane has not copied
//     the move yet: the apiserver still calls this instance).
// Both are needed: a target whose config was just re-pinned still names this Service until
// its verified handover, and a target that resolves here but was never patched would be
// patched to a Service that no longer exists.
//
// The way out is to move the targets first (docs/instances.md), after which the finalizer is
// released without anyone touching it. The break-glass annotation FORCE_DELETE_ANNOTATION
// lets a deletion through anyway, read at decision time, for the day an instance must go now.
import { FORCE_DELETE_ANNOTATION, webhookServiceName } from '../../api/constants.ts';
import { assignSubjects, type ConfigSubject, fleetOf, type InstanceLike } from '../assignment.ts';
import type { ConditionState } from '../conditions.ts';
import { compareNames } from '../name-list.ts';

export const DELETION_BLOCKED = 'DeletionBlocked';
/** How many target names a decision (and so the condition message) lists; the count says the rest. */
export const MAX_LISTED_TARGETS = 20;

export type DependencyKind = 'Pinned' | 'Pool' | 'Default' | 'NamedInConversion';

export interface DeletionInput {
  instance: { metadata: { name: string; annotations?: Readonly<Record<string, string>> | undefined } };
  /** Every instance, this one included: it still exists while its finalizer holds it. */
  fleet: readonly InstanceLike[];
  configs: readonly ConfigSubject[];
  /**
   * Each existing target with the Services its conversions may go to now: its spec.conversion's
   * and, for an XRD, those of the CRDs Crossplane generated from it (views/view-reads.ts
   * `readTargetServices`), which is what the apiserver calls.
   */
  targetServices: ReadonlyMap<string, readonly string[]>;
}

export interface Dependents {
  count: number;
  /** The first MAX_LISTED_TARGETS names, sorted. */
  listed: string[];
  /** How many targets depend on the instance for each reason (one target may have two). */
  byKind: Partial<Record<DependencyKind, number>>;
}

export type DeletionDecision =
  | {
      action: 'allow';
      reason: 'NotInUse' | 'ForceDeleteAnnotated';
      dependents: Dependents;
      condition: ConditionState;
    }
  | { action: 'block'; reason: 'TargetsStillServed'; dependents: Dependents; condition: ConditionState };

export function decideDeletion(input: DeletionInput): DeletionDecision {
  const name = input.instance.metadata.name;
  const dependents = dependentsOf(name, input);
  if (dependents.count === 0) {
    return {
      action: 'allow',
      reason: 'NotInUse',
      dependents,
      condition: notBlocked('NotInUse', 'no target resolves to or names this instance'),
    };
  }
  if (input.instance.metadata.annotations?.[FORCE_DELETE_ANNOTATION] === 'true') {
    const message = `${FORCE_DELETE_ANNOTATION} is "true": deleted although ${describe(dependents)}; their conversions fail until they are moved`;
    return {
      action: 'allow',
      reason: 'ForceDeleteAnnotated',
      dependents,
      condition: notBlocked('ForceDeleteAnnotated', message),
    };
  }
  return {
    action: 'block',
    reason: 'TargetsStillServed',
    dependents,
    condition: {
      type: DELETION_BLOCKED,
      status: 'True',
      reason: 'TargetsStillServed',
      message: `deletion waits: ${describe(dependents)}. ${howToMove(name, dependents)}`,
    },
  };
}

function notBlocked(reason: string, message: string): ConditionState {
  return { type: DELETION_BLOCKED, status: 'False', reason, message };
}

function dependentsOf(name: string, input: DeletionInput): Dependents {
  const service = webhookServiceName(name);
  const kinds = new Map<string, Set<DependencyKind>>();
  const add = (target: string, kind: DependencyKind) => {
    const set = kinds.get(target) ?? new Set<DependencyKind>();
    set.add(kind);
    kinds.set(target, set);
  };
  for (const [target, resolution] of assignSubjects(input.configs, fleetOf(input.fleet))) {
    if (resolution.ok && resolution.instance === name) add(target, resolution.decidedBy);
  }
  for (const [target, named] of input.targetServices)
    if (named.includes(service)) add(target, 'NamedInConversion');
  const byKind: Partial<Record<DependencyKind, number>> = {};
  for (const set of kinds.values()) for (const kind of set) byKind[kind] = (byKind[kind] ?? 0) + 1;
  const listed = [...kinds.keys()].sort(compareNames).slice(0, MAX_LISTED_TARGETS);
  return { count: kinds.size, listed, byKind };
}

function describe(d: Dependents): string {
  const more = d.count > d.listed.length ? ` and ${d.count - d.listed.length} more` : '';
  return `${d.count} target(s) still depend on it (${d.listed.join(', ')}${more})`;
}

/** One instruction per way the targets depend on the instance, so the message says what to do. */
function howToMove(name: string, d: Dependents): string {
  const steps: string[] = [];
  if (d.byKind.Pinned)
    steps.push(`re-pin the ${d.byKind.Pinned} config(s) whose spec.webhookServerRef names ${name}`);
  if (d.byKind.Pool)
    steps.push(
      `set spec.sharding.enabled: false on ${name} so the pool moves its ${d.byKind.Pool} target(s) through verified handovers`,
    );
  if (d.byKind.Default)
    steps.push(`mark another instance spec.default: true for the ${d.byKind.Default} unpinned target(s)`);
  if (d.byKind.NamedInConversion)
    steps.push(
      `wait for the ${d.byKind.NamedInConversion} target(s) still pointing at its Service to be handed over`,
    );
  return `Move them first: ${steps.join('; ')}. Or annotate ${FORCE_DELETE_ANNOTATION}: "true" to delete it anyway (their conversions then fail).`;
}
