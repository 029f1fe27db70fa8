import { describe, expect, it } from 'vitest';
import type { InstanceLike } from './assignment.ts';
import { fleetViolations, violationsIntroduced } from './fleet-admission.ts';

const cws = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({ metadata: { name }, spec });

describe('fleet admission rules', () => {
  it.each([
    { name: 'one default, no pool', fleet: [cws('a', { default: true }), cws('b')], rules: [] },
    {
      name: 'a second default',
      fleet: [cws('a', { default: true }), cws('b', { default: true })],
      rules: ['SingleDefault'],
    },
    {
      name: 'sharding on a non-default instance while the default is outside the pool',
      fleet: [cws('a', { default: true }), cws('b', { sharding: { enabled: true } })],
      rules: ['DefaultInPool'],
    },
    {
      name: 'sharding on the default first: a pool of one',
      fleet: [cws('a', { default: true, sharding: { enabled: true } }), cws('b')],
      rules: [],
    },
    {
      name: 'a pool without any default',
      fleet: [cws('a', { sharding: { enabled: true } }), cws('b', { sharding: { enabled: true } })],
      rules: [],
    },
    {
      name: 'weight 0',
      fleet: [cws('a', { sharding: { enabled: true, weight: 0 } })],
      rules: ['PositiveWeight'],
    },
    {
      name: 'weight 1.5',
      fleet: [cws('a', { sharding: { enabled: false, weight: 1.5 } })],
      rules: ['PositiveWeight'],
    },
  ])('$name → $rules', ({ fleet, rules }) => {
    expect(fleetViolations(fleet).map((v) => v.rule)).toEqual(rules);
  });

  it('tells the operator the safe order when rejecting a pool that skips the default', () => {
    const [v] = fleetViolations([cws('main', { default: true }), cws('b', { sharding: { enabled: true } })]);
    expect(v?.message).toMatch(/would move every unpinned config off "main" at once/);
    expect(v?.message).toMatch(/Enable spec.sharding on "main" first/);
  });

  it('accepts an edit that repairs a fleet already in violation, and rejects one that makes it worse', () => {
    const broken = [cws('a', { default: true }), cws('b', { default: true }), cws('c')];
    const repaired = [cws('a', { default: true }), cws('b'), cws('c')];
    const worse = [cws('a', { default: true }), cws('b', { default: true }), cws('c', { default: true })];
    expect(violationsIntroduced(broken, repaired)).toEqual([]);
    expect(violationsIntroduced(broken, worse).map((v) => v.rule)).toEqual(['SingleDefault']);
  });

  it('does not call a violation new because the fleet is listed in another order (repro: DefaultInPool)', () => {
    const d1 = cws('d1', { default: true });
    const d2 = cws('d2', { default: true });
    const x = cws('x', { sharding: { enabled: true } });
    expect(violationsIntroduced([d1, d2, x], [d2, x, d1])).toEqual([]);
    expect(violationsIntroduced([x, d2, d1], [d1, d2, x])).toEqual([]);
  });

  it('words a violation the same whatever the order of the fleet', () => {
    const fleet = [
      cws('d2', { default: true }),
      cws('y', { sharding: { enabled: true } }),
      cws('d1', { default: true }),
      cws('x', { sharding: { enabled: true } }),
    ];
    expect(fleetViolations(fleet)).toEqual(fleetViolations([...fleet].reverse()));
  });
});
