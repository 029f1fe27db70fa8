// A pool change planned before it is made: the same resolver the handlers run, over the fleet as
// it is and as it would be, so what it predicts is what assign then does. Pure: the CLI
// (`switchyard simulate`) reads the fleet and prints this.
import { MAX_SHARD_WEIGHT } from '../api/webhook-server.ts';
import {
  assignSubjects,
  type ConfigSubject,
  fleetOf,
  type InstanceLike,
  isValidWeight,
  type Resolution,
} from './assignment.ts';
import { compareNames } from './name-list.ts';

/** What to change: instances joining the pool, leaving it, or taking another weight. */
export interface PoolChange {
  /** A new instance, or an existing one, that joins the pool with this weight. */
  add: { name: string; weight: number }[];
  /** Deleted: neither in the pool nor a pin's target nor the default. */
  remove: string[];
  /** An existing pool member's new weight. */
  reweight: { name: string; weight: number }[];
}

export interface Move {
  target: string;
  from: string;
  to: string;
}

export interface Share {
  instance: string;
  before: number;
  after: number;
}

/** A target whose config would stop resolving, or start: not a move, a status change. */
export interface ResolutionChange {
  target: string;
  instance: string;
  reason: string;
}

export interface Simulation {
  targets: number;
  /** Targets handed over from one instance to another, sorted by target. */
  moves: Move[];
  /** How many move along each route, most first. */
  routes: { from: string; to: string; count: number }[];
  /** Targets per instance before and after. */
  shares: Share[];
  /** Resolved before, not after (the reason): they stay where they are served, their config says why. */
  stopResolving: ResolutionChange[];
  /** Unresolved before (the reason), resolved after: a first apply on the instance. */
  startResolving: ResolutionChange[];
  /** The least a rebalance takes: the moves released at the fan-out pace (`bus.fanoutRatePerSecond`). */
  pacingFloorSeconds: number;
}

/** The fleet after the change; a change that names what is not there, or a bad weight, is refused. */
export function applyPoolChange(instances: readonly InstanceLike[], change: PoolChange): InstanceLike[] {
  const byName = new Map(instances.map((i) => [i.metadata.name, i]));
  for (const { name, weight } of [...change.add, ...change.reweight])
    if (!isValidWeight(weight) || weight > MAX_SHARD_WEIGHT)
      throw new Error(
        `weight of ${name} must be a positive integer up to ${MAX_SHARD_WEIGHT}, got ${weight}`,
      );
  for (const name of change.remove) {
    if (!byName.delete(name)) throw new Error(`cannot remove ${name}: no such ConversionWebhookServer`);
  }
  for (const { name, weight } of change.add) {
    const current = byName.get(name);
    byName.set(name, {
      metadata: { name },
      spec: { default: current?.spec.default, sharding: { enabled: true, weight } },
    });
  }
  for (const { name, weight } of change.reweight) {
    const current = byName.get(name);
    if (current?.spec.sharding?.enabled !== true)
      throw new Error(`cannot reweight ${name}: it is not in the sharding pool (use --add)`);
    byName.set(name, { ...current, spec: { ...current.spec, sharding: { enabled: true, weight } } });
  }
  return [...byName.values()];
}

function countBy(resolutions: Map<string, Resolution>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const r of resolutions.values()) if (r.ok) counts.set(r.instance, (counts.get(r.instance) ?? 0) + 1);
  return counts;
}

function byTarget<T extends { target: string }>(items: T[]): T[] {
  return items.sort((a, b) => compareNames(a.target, b.target));
}

export function simulate(opts: {
  subjects: readonly ConfigSubject[];
  before: readonly InstanceLike[];
  after: readonly InstanceLike[];
  fanoutRatePerSecond: number;
}): Simulation {
  const fleetBefore = fleetOf(opts.before);
  const before = assignSubjects(opts.subjects, fleetBefore);
  const after = assignSubjects(opts.subjects, fleetOf(opts.after), {
    fleet: fleetBefore,
    resolutions: before,
  });
  const moves: Move[] = [];
  const stopResolving: ResolutionChange[] = [];
  const startResolving: ResolutionChange[] = [];
  for (const [target, was] of before) {
    const now = after.get(target) ?? was;
    if (was.ok && now.ok && was.instance !== now.instance)
      moves.push({ target, from: was.instance, to: now.instance });
    else if (was.ok && !now.ok) stopResolving.push({ target, instance: was.instance, reason: now.reason });
    else if (!was.ok && now.ok) startResolving.push({ target, instance: now.instance, reason: was.reason });
  }
  const routes = new Map<string, { from: string; to: string; count: number }>();
  for (const m of moves) {
    const key = `${m.from}\u0000${m.to}`;
    const route = routes.get(key) ?? { from: m.from, to: m.to, count: 0 };
    route.count++;
    routes.set(key, route);
  }
  const [countsBefore, countsAfter] = [countBy(before), countBy(after)];
  const names = new Set([...opts.before, ...opts.after].map((i) => i.metadata.name));
  const shares = [...names].sort(compareNames).map((instance) => ({
    instance,
    before: countsBefore.get(instance) ?? 0,
    after: countsAfter.get(instance) ?? 0,
  }));
  return {
    targets: before.size,
    moves: byTarget(moves),
    routes: [...routes.values()].sort((a, b) => b.count - a.count || compareNames(a.from, b.from)),
    shares,
    stopResolving: byTarget(stopResolving),
    startResolving: byTarget(startResolving),
    pacingFloorSeconds: moves.length / opts.fanoutRatePerSecond,
  };
}
