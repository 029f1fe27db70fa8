// Which assign work a recorded change wakes: the predicate and the key mapping of the router
// (controller-runtime's predicate + handler split), pure, so a test or `replay` reproduces it.
//
// The change is compared with the object's previous record (what it looked like just before),
// not with the view: the view may already be ahead, and only the previous record says what
// this change itself did. Everything else is read from the view.
//
// * A config change wakes only when what assignment reads changed: existence, target, pin.
//   It wakes the config, every other config claiming the old or new target (a duplicate
//   appears or goes away), and the instances the target resolved to before and after (their
//   `assignedTargets` lists). A status write, a rules edit, a label: nothing.
// * An instance change wakes only when what the resolver reads changed: existence, `default`,
//   pool membership, weight. The configs woken are exactly those whose resolution differs
//   between the fleet before and after (a new member: what it now wins; a removed one: what
//   it held), and they go through the paced fan-out, since one change can reach thousands.
//   The instances whose lists change are woken at once: there are few.
// * An EndpointSlice of an instance's Service that had no ready Pod and now has one wakes, paced,
//   every config that resolves to the instance: the moves assign held while the instance could
//   not take them (core/assign-decision.ts). Woken for a slice, not for the Service as a whole:
//   an instance with a second slice already ready costs no-op reconciles, never a missed one.
//   A source losing its last ready Pod wakes nothing: a move held off it is then no longer held
//   by the decision's rule, but it stays unrecorded until its destination's first ready Pod (or a
//   resync) wakes it; the handover could not act on it before that either.
// * Without a previous record (a creation, or history aged out) the object counts as absent
//   before: the superset is woken, which costs a few no-op reconciles and never misses one.

import { instanceOfService, SERVICE_NAME_LABEL } from '../../api/constants.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import {
  assignSubjects,
  fleetOf,
  type InstanceLike,
  isPoolMember,
  type Resolution,
} from '../../core/assignment.ts';
import { readyPodsOfSlice } from '../../views/view-reads.ts';
import { formatWorkKey, type ObjectWorkKey } from '../work-keys.ts';
import { type AssignWorld, configSubjectOf, INSTANCE_KIND, instanceOf, isConfigKind } from './world.ts';

export interface RecordedChange {
  kind: string;
  op: 'upsert' | 'delete';
  object: RecordedObject;
}

export interface AssignTriggers {
  /** Published straight to the work subject. */
  now: ObjectWorkKey[];
  /** Published through the paced fan-out. */
  paced: ObjectWorkKey[];
}

const NOTHING: AssignTriggers = { now: [], paced: [] };

export function assignTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  world: AssignWorld,
): AssignTriggers {
  if (isConfigKind(change.kind)) return configTriggers(change, previous, world);
  if (change.kind === INSTANCE_KIND) return instanceTriggers(change, previous, world);
  if (change.kind === 'endpointslice') return readinessTriggers(change, previous, world);
  return NOTHING;
}

function readinessTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  world: AssignWorld,
): AssignTriggers {
  const after = change.op === 'upsert' ? change.object : undefined;
  if (readyPodsOfSlice(previous).length > 0 || readyPodsOfSlice(after).length === 0) return NOTHING;
  const labels = (after as { metadata: { labels?: Record<string, string> } }).metadata.labels;
  const instance = instanceOfService(labels?.[SERVICE_NAME_LABEL]);
  if (instance === undefined || !world.instances.some((i) => i.metadata.name === instance)) return NOTHING;
  const resolved = assignSubjects(world.configs, fleetOf(world.instances));
  const paced = world.configs.filter((c) => {
    const resolution = resolved.get(c.target);
    return resolution?.ok === true && resolution.instance === instance;
  });
  return { now: [], paced: paced.map((c) => c.key) };
}

function configTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  world: AssignWorld,
): AssignTriggers {
  const before = previous && configSubjectOf(change.kind, previous);
  const after = change.op === 'upsert' ? configSubjectOf(change.kind, change.object) : undefined;
  if (before && after && before.target === after.target && before.pinnedTo === after.pinnedTo) return NOTHING;
  const targets = new Set([before?.target, after?.target].filter((t) => t !== undefined));
  const self = formatWorkKey({ kind: change.kind, name: change.object.metadata.name });
  // A target resolves from its own claimants and the fleet alone: resolving only the claimants of
  // the targets this change touches, not every config, keeps routing a config record from
  // growing with the fleet (resolving them all: 535 ms at the p99 of 50,000 configs, BENCHMARKS.md).
  const rivals = world.configs.filter((c) => targets.has(c.target) && formatWorkKey(c.key) !== self);
  const fleet = fleetOf(world.instances);
  const resolvedBefore = assignSubjects(before ? [...rivals, before] : rivals, fleet);
  const resolvedAfter = assignSubjects(after ? [...rivals, after] : rivals, fleet);
  const configs = rivals.map((c) => c.key);
  if (after) configs.push(after.key);
  const instances = new Set<string>();
  for (const target of targets) {
    addInstance(instances, resolvedBefore.get(target));
    addInstance(instances, resolvedAfter.get(target));
  }
  return { now: [...configs, ...instanceKeys(instances)], paced: [] };
}

/** What the resolver reads of an instance; equal projections resolve every config alike. */
function fleetProjection(instance: InstanceLike | undefined): string {
  if (instance === undefined) return 'absent';
  const member = isPoolMember(instance);
  return JSON.stringify({
    default: instance.spec.default === true,
    member,
    weight: member ? (instance.spec.sharding?.weight ?? 1) : undefined,
  });
}

function instanceTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  world: AssignWorld,
): AssignTriggers {
  const name = change.object.metadata.name;
  const before = previous && instanceOf(previous);
  const after = change.op === 'upsert' ? instanceOf(change.object) : undefined;
  if (fleetProjection(before) === fleetProjection(after)) return NOTHING;
  const others = world.instances.filter((i) => i.metadata.name !== name);
  const fleetBefore = fleetOf(before ? [...others, before] : others);
  const resolvedBefore = assignSubjects(world.configs, fleetBefore);
  // One instance changed: each target resolves again from where it was, not from scratch.
  const resolvedAfter = assignSubjects(world.configs, fleetOf(after ? [...others, after] : others), {
    fleet: fleetBefore,
    resolutions: resolvedBefore,
  });
  const instances = new Set([name]);
  const changedTargets = new Set<string>();
  for (const [target, was] of resolvedBefore) {
    const is = resolvedAfter.get(target);
    if (sameResolution(was, is)) continue;
    changedTargets.add(target);
    addInstance(instances, was);
    addInstance(instances, is);
  }
  const paced = world.configs.filter((c) => changedTargets.has(c.target)).map((c) => c.key);
  return { now: instanceKeys(instances), paced };
}

/** Same instance by the same rule, or the same failure: the config's status would not change. */
export function sameResolution(a: Resolution | undefined, b: Resolution | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.ok && b.ok) return a.instance === b.instance && a.decidedBy === b.decidedBy;
  if (!a.ok && !b.ok) return a.reason === b.reason && a.message === b.message;
  return false;
}

function addInstance(into: Set<string>, resolution: Resolution | undefined): void {
  if (resolution?.ok) into.add(resolution.instance);
}

function instanceKeys(names: Iterable<string>): ObjectWorkKey[] {
  return [...names].map((name) => ({ kind: INSTANCE_KIND, name }));
}
