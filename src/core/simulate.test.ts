import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assignSubjects, type ConfigSubject, fleetOf, type InstanceLike } from './assignment.ts';
import { applyPoolChange, type PoolChange, simulate } from './simulate.ts';

const instance = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({
  metadata: { name },
  spec,
});
const member = (name: string, weight = 1) => instance(name, { sharding: { enabled: true, weight } });
const subject = (target: string, pinnedTo?: string): ConfigSubject => ({
  config: `CRDConversionConfig/${target}`,
  target,
  pinnedTo,
});
const NO_CHANGE: PoolChange = { add: [], remove: [], reweight: [] };

const poolArb = fc.uniqueArray(
  fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/), weight: fc.integer({ min: 1, max: 5 }) }),
  { minLength: 1, maxLength: 6, selector: (m) => m.name },
);
const targetsArb = fc.uniqueArray(fc.stringMatching(/^[a-z]{1,12}\.[a-z]{2,8}\.io$/), {
  minLength: 1,
  maxLength: 80,
});

/** What assign would do: the resolver over the fleet before and after, compared target by target. */
function resolverMoves(subjects: ConfigSubject[], before: InstanceLike[], after: InstanceLike[]) {
  const [a, b] = [assignSubjects(subjects, fleetOf(before)), assignSubjects(subjects, fleetOf(after))];
  return [...a]
    .flatMap(([target, was]) => {
      const now = b.get(target);
      return was.ok && now?.ok && was.instance !== now.instance
        ? [`${target}:${was.instance}>${now.instance}`]
        : [];
    })
    .sort();
}

describe('simulate', () => {
  it('predicts exactly the moves the resolver makes, for any pool and any add, remove or reweight', () => {
    fc.assert(
      fc.property(poolArb, targetsArb, fc.nat(), fc.integer({ min: 1, max: 9 }), (pool, targets, pick, w) => {
        const before = pool.map((m) => member(m.name, m.weight));
        const chosen = pool[pick % pool.length]?.name ?? '';
        const changes: PoolChange[] = [
          { ...NO_CHANGE, add: [{ name: 'newcomer', weight: w }] },
          { ...NO_CHANGE, reweight: [{ name: chosen, weight: w }] },
          ...(pool.length > 1 ? [{ ...NO_CHANGE, remove: [chosen] }] : []),
        ];
        const subjects = targets.map((t) => subject(t));
        for (const change of changes) {
          const after = applyPoolChange(before, change);
          const sim = simulate({ subjects, before, after, fanoutRatePerSecond: 50 });
          const predicted = sim.moves.map((m) => `${m.target}:${m.from}>${m.to}`).sort();
          expect(predicted).toEqual(resolverMoves(subjects, before, after));
          expect(sim.routes.reduce((n, r) => n + r.count, 0)).toBe(sim.moves.length);
          expect(sim.shares.reduce((n, s) => n + s.after, 0)).toBe(targets.length);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('an added member only takes targets, and only its own; a removed one only gives', () => {
    const before = [member('a'), member('b'), member('c')];
    const subjects = Array.from({ length: 300 }, (_, i) => subject(`t${i}.example.com`));
    const added = simulate({
      subjects,
      before,
      after: applyPoolChange(before, { ...NO_CHANGE, add: [{ name: 'd', weight: 1 }] }),
      fanoutRatePerSecond: 50,
    });
    expect(added.moves.every((m) => m.to === 'd')).toBe(true);
    expect(added.moves.length).toBeGreaterThan(40);
    expect(added.pacingFloorSeconds).toBeCloseTo(added.moves.length / 50);
    const removed = simulate({
      subjects,
      before,
      after: applyPoolChange(before, { ...NO_CHANGE, remove: ['c'] }),
      fanoutRatePerSecond: 50,
    });
    expect(removed.moves.every((m) => m.from === 'c')).toBe(true);
    expect(removed.shares.find((s) => s.instance === 'c')).toEqual({
      instance: 'c',
      before: removed.moves.length,
      after: 0,
    });
  });

  it('a pinned target never moves; removing what it is pinned to makes it stop resolving, not move', () => {
    const before = [member('a'), member('b'), instance('p')];
    const subjects = [subject('pinned.example.com', 'p'), subject('free.example.com')];
    const sim = simulate({
      subjects,
      before,
      after: applyPoolChange(before, { ...NO_CHANGE, remove: ['p'], add: [{ name: 'z', weight: 9 }] }),
      fanoutRatePerSecond: 50,
    });
    expect(sim.moves.map((m) => m.target)).not.toContain('pinned.example.com');
    expect(sim.stopResolving).toEqual([
      { target: 'pinned.example.com', instance: 'p', reason: 'PinnedInstanceMissing' },
    ]);
  });

  it('refuses a change that names what is not there or a weight the pool cannot take', () => {
    const before = [member('a'), instance('plain')];
    expect(() => applyPoolChange(before, { ...NO_CHANGE, remove: ['ghost'] })).toThrow(/no such/);
    expect(() => applyPoolChange(before, { ...NO_CHANGE, reweight: [{ name: 'plain', weight: 2 }] })).toThrow(
      /not in the sharding pool/,
    );
    expect(() => applyPoolChange(before, { ...NO_CHANGE, add: [{ name: 'x', weight: 0 }] })).toThrow(
      /positive integer/,
    );
    expect(() => applyPoolChange(before, { ...NO_CHANGE, add: [{ name: 'x', weight: 1.5 }] })).toThrow(
      /positive integer/,
    );
  });
});
