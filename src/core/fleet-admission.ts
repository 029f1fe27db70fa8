// The rules the admission webhook enforces on ConversionWebhookServers, as pure functions over
// the fleet *as it will be* after a change.
//
// The pool rule exists because of precedence: the first instance to enable sharding forms a
// pool that outranks the default, so enabling it on a non-default instance would move every
// unpinned config onto that instance in one write. Requiring the default to be a member makes
// the safe order the only order: enable sharding on the default first (a pool of one moves
// nothing), then on the others, each of which takes only the targets it wins.
import { type InstanceLike, isPoolMember, isValidWeight } from './assignment.ts';
import { compareNames } from './name-list.ts';

export type FleetRule = 'SingleDefault' | 'DefaultInPool' | 'PositiveWeight';

export interface FleetViolation {
  rule: FleetRule;
  /**
   * What is wrong, canonically: the rule and the sorted names it concerns. Two fleets break a
   * rule the same way exactly when the keys are equal, whatever order they list instances in
   * and however the message is worded.
   */
  key: string;
  message: string;
}

function keyOf(rule: FleetRule, names: readonly string[]): string {
  return JSON.stringify([rule, [...names].sort(compareNames)]);
}

export function checkSingleDefault(fleet: readonly InstanceLike[]): FleetViolation | undefined {
  const defaults = fleet
    .filter((i) => i.spec.default === true)
    .map((i) => i.metadata.name)
    .sort(compareNames);
  if (defaults.length <= 1) return undefined;
  return {
    rule: 'SingleDefault',
    key: keyOf('SingleDefault', defaults),
    message: `at most one ConversionWebhookServer may be marked default, found ${defaults.length}: ${defaults.join(', ')}`,
  };
}

export function checkDefaultInPool(fleet: readonly InstanceLike[]): FleetViolation | undefined {
  const pool = fleet
    .filter(isPoolMember)
    .map((i) => i.metadata.name)
    .sort(compareNames);
  const outsiders = fleet
    .filter((i) => i.spec.default === true && !isPoolMember(i))
    .map((i) => i.metadata.name)
    .sort(compareNames);
  const [outsider] = outsiders;
  if (pool.length === 0 || outsider === undefined) return undefined;
  // Keyed by the defaults left outside, not the pool: a pool that grows around a default
  // already outside moves nothing more off it.
  return {
    rule: 'DefaultInPool',
    key: keyOf('DefaultInPool', outsiders),
    message:
      `sharding is enabled on ${pool.join(', ')} but not on the default instance "${outsider}": ` +
      `this would move every unpinned config off "${outsider}" at once. ` +
      `Enable spec.sharding on "${outsider}" first (a pool of one moves nothing), then on the others`,
  };
}

export function checkWeight(instance: InstanceLike): FleetViolation | undefined {
  const weight = instance.spec.sharding?.weight;
  if (weight === undefined || isValidWeight(weight)) return undefined;
  return {
    rule: 'PositiveWeight',
    key: keyOf('PositiveWeight', [instance.metadata.name]),
    message: `spec.sharding.weight of "${instance.metadata.name}" must be a positive integer, got ${weight}`,
  };
}

/** Every rule the fleet breaks. */
export function fleetViolations(fleet: readonly InstanceLike[]): FleetViolation[] {
  const fleetWide = [checkSingleDefault(fleet), checkDefaultInPool(fleet)];
  return [...fleetWide, ...fleet.map(checkWeight)].filter((v): v is FleetViolation => v !== undefined);
}

/**
 * The violations a change introduces. A fleet that already breaks a rule (say, two defaults
 * written while admission was down) must still accept the edits that repair it, so only what
 * the change makes newly wrong is rejected.
 */
export function violationsIntroduced(
  before: readonly InstanceLike[],
  after: readonly InstanceLike[],
): FleetViolation[] {
  const existing = new Set(fleetViolations(before).map((v) => v.key));
  return fleetViolations(after).filter((v) => !existing.has(v.key));
}
