// Which ConversionWebhookServer instance serves a target. A pure function of (config, fleet):
// every handler, the webhook-server replicas and offline tools compute the same answer from the
// same view, with no coordination and no network call.
//
// Precedence, strictly in this order:
//   1. pinned  — `spec.webhookServerRef` always wins; nothing automatic moves a pinned config;
//   2. pool    — if any instance has sharding enabled, weighted rendezvous over the pool, keyed
//                by the *target* name (renaming a config must not move what it converts);
//   3. default — the instance marked `spec.default`.
//
// Rendezvous rather than a hash ring: adding a member moves only the targets it now wins
// (about 1/(N+1)) and nothing between existing members; there is no virtual-node count to tune,
// and weights give exactly proportional shares. See rendezvous-hash.ts for the exact function.
import { type ConversionConfig, targetNameOf } from '../api/conversion-config.ts';
import { compareNames } from './name-list.ts';
import { drawFrom, type HashState, prefixState, scoreOf } from './rendezvous-hash.ts';

/** The part of a ConversionWebhookServer that assignment reads. */
export interface InstanceLike {
  metadata: { name: string };
  spec: {
    default?: boolean | undefined;
    sharding?: { enabled: boolean; weight?: number | undefined } | undefined;
  };
}

/** The part of a config that assignment reads: what it converts and where, if anywhere, it is pinned. */
export interface AssignmentSubject {
  target: string;
  pinnedTo?: string | undefined;
}

export type DecidingRule = 'Pinned' | 'Pool' | 'Default';

export type AssignmentErrorReason =
  | 'PinnedInstanceMissing'
  | 'NoInstance'
  | 'MultipleDefaults'
  | 'DuplicateTarget';

/** A subject with the config it comes from, `<kind>/<name>`: what tells two configs for one target apart. */
export interface ConfigSubject extends AssignmentSubject {
  config: string;
}

export type Resolution =
  | { ok: true; instance: string; decidedBy: DecidingRule }
  | { ok: false; reason: AssignmentErrorReason; message: string };

export interface PoolMember {
  name: string;
  weight: number;
  prefix: HashState;
  /** The answer for every target this member wins, shared: a recompute allocates nothing per target. */
  won: Resolution;
}

/** The fleet digested once for many resolutions: names, the sorted pool, the defaults. */
export interface Fleet {
  names: ReadonlySet<string>;
  pool: readonly PoolMember[];
  defaults: readonly string[];
}

export function subjectOf(config: ConversionConfig): ConfigSubject {
  return {
    config: `${config.kind}/${config.metadata.name}`,
    target: targetNameOf(config),
    pinnedTo: config.spec.webhookServerRef?.name,
  };
}

/** A member only with sharding enabled and a positive integer weight (admission rejects others). */
export function isPoolMember(instance: InstanceLike): boolean {
  const sharding = instance.spec.sharding;
  return sharding?.enabled === true && isValidWeight(sharding.weight ?? 1);
}

/** Whether two instances are the same to the resolver (name, default, sharding). */
export function sameInstanceLike(a: InstanceLike, b: InstanceLike): boolean {
  return (
    a.metadata.name === b.metadata.name &&
    a.spec.default === b.spec.default &&
    a.spec.sharding?.enabled === b.spec.sharding?.enabled &&
    a.spec.sharding?.weight === b.spec.sharding?.weight
  );
}

/** Whether two lists of instances are the same to the resolver, in order. */
export function sameInstanceLikes(a: readonly InstanceLike[], b: readonly InstanceLike[]): boolean {
  return a.length === b.length && a.every((x, i) => sameInstanceLike(x, b[i] as InstanceLike));
}

export function isValidWeight(weight: number): boolean {
  return Number.isInteger(weight) && weight >= 1;
}

export function fleetOf(instances: readonly InstanceLike[]): Fleet {
  const pool = instances
    .filter(isPoolMember)
    .map((i) => poolMember(i.metadata.name, i.spec.sharding?.weight ?? 1))
    .sort((a, b) => compareNames(a.name, b.name));
  const defaults = instances
    .filter((i) => i.spec.default === true)
    .map((i) => i.metadata.name)
    .sort(compareNames);
  return { names: new Set(instances.map((i) => i.metadata.name)), pool, defaults };
}

export function poolMember(name: string, weight: number): PoolMember {
  const won: Resolution = Object.freeze({ ok: true, instance: name, decidedBy: 'Pool' });
  return { name, weight, prefix: prefixState(name), won };
}

/** Resolves one config against the fleet as it is now. */
export function resolve(config: ConversionConfig, instances: readonly InstanceLike[]): Resolution {
  return resolveIn(fleetOf(instances), subjectOf(config));
}

/** Resolves every config at once; the fleet is digested once. Keyed by target name. */
export function assignAll(
  configs: readonly ConversionConfig[],
  instances: readonly InstanceLike[],
): Map<string, Resolution> {
  return assignSubjects(configs.map(subjectOf), fleetOf(instances));
}

/**
 * Resolves every subject, keyed by target name. Target names are unique across both config
 * kinds (admission rejects a second config for a target); a view that holds two anyway gets a
 * DuplicateTarget error for that target, the same whatever order the configs come in, and
 * never one of them picked by position. `earlier`: the resolutions in another fleet, which make
 * a fleet change that touches one pool member cheap (`resolverFrom`); the answer is the same.
 */
export function assignSubjects(
  subjects: readonly ConfigSubject[],
  fleet: Fleet,
  earlier?: ResolvedFleet,
): Map<string, Resolution> {
  const resolveOne = earlier
    ? resolverFrom(earlier, fleet)
    : (subject: ConfigSubject) => resolveIn(fleet, subject);
  // One pass, no per-target arrays: a second config for a target is rare, and this runs over
  // every config on each fleet change.
  const firstClaim = new Map<string, ConfigSubject>();
  const contested = new Map<string, Set<string>>();
  for (const subject of subjects) {
    const first = firstClaim.get(subject.target);
    if (first === undefined) firstClaim.set(subject.target, subject);
    else if (first.config !== subject.config) {
      const rivals = contested.get(subject.target) ?? new Set([first.config]);
      contested.set(subject.target, rivals.add(subject.config));
    }
  }
  const out = new Map<string, Resolution>();
  for (const [target, subject] of firstClaim) {
    const rivals = contested.get(target);
    out.set(target, rivals ? duplicate(target, [...rivals].sort(compareNames)) : resolveOne(subject));
  }
  return out;
}

/** Every target's resolution in a fleet: what the next fleet's resolutions can start from. */
export interface ResolvedFleet {
  fleet: Fleet;
  resolutions: ReadonlyMap<string, Resolution>;
}

/**
 * `resolveIn(fleet, ·)`, starting from each target's resolution in an earlier fleet. When the
 * two pools differ in one member (a join, a leave, a weight change: the common fleet change),
 * a target the pool gave to another member goes to that member or to the changed one, whichever
 * scores higher: two draws instead of one per member. Only the targets the changed member held
 * are drawn again in full. Any other change, or a target with no pool resolution before, is
 * resolved from scratch, so the answer is always `resolveIn`'s.
 */
function resolverFrom(earlier: ResolvedFleet, fleet: Fleet): (subject: ConfigSubject) => Resolution {
  const change = poolChange(earlier.fleet.pool, fleet.pool);
  if (change === 'many' || fleet.pool.length === 0) return (subject) => resolveIn(fleet, subject);
  const members = new Map(fleet.pool.map((m) => [m.name, m]));
  return (subject) => {
    const was = earlier.resolutions.get(subject.target);
    const held =
      was?.ok && was.decidedBy === 'Pool' && subject.pinnedTo === undefined ? was.instance : undefined;
    const holder = held === undefined || held === change.changed ? undefined : members.get(held);
    if (holder === undefined) return resolveIn(fleet, subject);
    const challenger = change.changed === undefined ? undefined : members.get(change.changed);
    return challenger && outscores(challenger, holder, subject.target) ? challenger.won : holder.won;
  };
}

/**
 * The one member two pools disagree on (added, removed or reweighted; `changed` undefined when
 * they agree on all), or `many`. Both pools are sorted by name.
 */
function poolChange(
  before: readonly PoolMember[],
  after: readonly PoolMember[],
): { changed: string | undefined } | 'many' {
  const differing: string[] = [];
  let i = 0;
  let j = 0;
  while (i < before.length || j < after.length) {
    const a = before[i];
    const b = after[j];
    const order = a === undefined ? 1 : b === undefined ? -1 : compareNames(a.name, b.name);
    if (order < 0) differing.push((a as PoolMember).name);
    else if (order > 0) differing.push((b as PoolMember).name);
    else if ((a as PoolMember).weight !== (b as PoolMember).weight) differing.push((a as PoolMember).name);
    if (order <= 0) i++;
    if (order >= 0) j++;
    if (differing.length > 1) return 'many';
  }
  return { changed: differing[0] };
}

/** Whether `a` beats `b` for `target` as `rendezvousWinner` ranks them: the higher score, ties to the smaller name. */
function outscores(a: PoolMember, b: PoolMember, target: string): boolean {
  const scoreA = scoreOf(a.weight, drawFrom(a.prefix, target));
  const scoreB = scoreOf(b.weight, drawFrom(b.prefix, target));
  return scoreA > scoreB || (scoreA === scoreB && compareNames(a.name, b.name) < 0);
}

function duplicate(target: string, configs: readonly string[]): Resolution {
  return {
    ok: false,
    reason: 'DuplicateTarget',
    message:
      `${configs.join(' and ')} all convert ${target}; target names are unique across CRDConversionConfig and ` +
      'XRDConversionConfig, so none of them is served until all but one are deleted or retargeted',
  };
}

export function resolveIn(fleet: Fleet, subject: AssignmentSubject): Resolution {
  if (subject.pinnedTo !== undefined) return resolvePinned(fleet, subject.pinnedTo);
  const winner = rendezvousWinner(fleet.pool, subject.target);
  if (winner !== undefined) return winner.won;
  return resolveDefault(fleet);
}

function resolvePinned(fleet: Fleet, instance: string): Resolution {
  if (fleet.names.has(instance)) return { ok: true, instance, decidedBy: 'Pinned' };
  return {
    ok: false,
    reason: 'PinnedInstanceMissing',
    message:
      `spec.webhookServerRef names ConversionWebhookServer "${instance}", which does not exist; ` +
      'create it, or remove the reference to let the pool or the default instance serve this target',
  };
}

function resolveDefault(fleet: Fleet): Resolution {
  const [only, ...others] = fleet.defaults;
  if (only === undefined) {
    return {
      ok: false,
      reason: 'NoInstance',
      message:
        'no ConversionWebhookServer has sharding enabled or is marked default, and spec.webhookServerRef is not set; ' +
        'mark one instance spec.default: true, enable spec.sharding on some, or pin this config',
    };
  }
  if (others.length > 0) {
    return {
      ok: false,
      reason: 'MultipleDefaults',
      message: `more than one ConversionWebhookServer is marked default (${fleet.defaults.join(', ')}); keep exactly one`,
    };
  }
  return { ok: true, instance: only, decidedBy: 'Default' };
}

/**
 * The highest-scoring member for a target (none for an empty pool). The pool is sorted by name and only a strictly
 * higher score replaces the leader, so ties go to the smaller name.
 *
 * Every draw is computed, but most logarithms are not: since −ln(u) ≥ 1 − u, a member's score
 * is at most weight / (1 − u), and a member whose bound (with a margin far above rounding error)
 * is below the leader's score cannot take the lead. The winner is the one the plain loop over
 * all scores picks; only the work differs (about ln N logarithms per target instead of N).
 */
export function rendezvousWinner(pool: readonly PoolMember[], target: string): PoolMember | undefined {
  let winner: PoolMember | undefined;
  let best = Number.NEGATIVE_INFINITY;
  for (const member of pool) {
    const u = drawFrom(member.prefix, target);
    if ((member.weight / (1 - u)) * BOUND_MARGIN < best) continue;
    const score = scoreOf(member.weight, u);
    if (score > best) {
      best = score;
      winner = member;
    }
  }
  return winner;
}

const BOUND_MARGIN = 1 + 1e-9;

export interface MemberScore {
  instance: string;
  weight: number;
  u: number;
  score: number;
}

export interface Explanation {
  target: string;
  resolution: Resolution;
  /** Every pool member's score, highest first; empty when the pool did not decide. */
  scores: MemberScore[];
}

/** Why a target resolves where it does: the deciding rule, and each pool member's score. */
export function explain(subject: AssignmentSubject, instances: readonly InstanceLike[]): Explanation {
  const fleet = fleetOf(instances);
  const resolution = resolveIn(fleet, subject);
  const scores =
    resolution.ok && resolution.decidedBy === 'Pool'
      ? fleet.pool
          .map((m) => {
            const u = drawFrom(m.prefix, subject.target);
            return { instance: m.name, weight: m.weight, u, score: scoreOf(m.weight, u) };
          })
          .sort((a, b) => b.score - a.score || compareNames(a.instance, b.instance))
      : [];
  return { target: subject.target, resolution, scores };
}
