import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyStep,
  assignedTargets,
  cloneWorld,
  depart,
  departureOf,
  destinations,
  emptyWorld,
  resolutions,
  type Step,
  settle,
  type World,
} from './lifecycle-model.ts';
import { planLifecycle, servedMoves, type Vocabulary } from './lifecycle-steps.ts';
import { seededRandom } from './seeded-random.ts';

const T1 = 'things1.lc.example';
const T2 = 'things2.lc.example';

function worldAfter(steps: Step[]): World {
  const world = emptyWorld();
  for (const step of steps) {
    const outcome = applyStep(world, step);
    for (const gone of outcome.goes) depart(world, gone);
  }
  return world;
}

const defaultA: Step = { kind: 'createInstance', name: 'a', spec: { default: true, replicas: 1 } };
const plainB: Step = { kind: 'createInstance', name: 'b', spec: { default: false, replicas: 1 } };

describe('the lifecycle model: admission', () => {
  it('predicts the refusal of a second default and of a pool that leaves the default out', () => {
    const world = worldAfter([defaultA, plainB]);
    const secondDefault = applyStep(cloneWorld(world), {
      kind: 'patchInstance',
      name: 'b',
      patch: { default: true },
    });
    expect(secondDefault).toMatchObject({ admitted: false, refusal: expect.stringMatching(/at most one/) });
    const poolWithoutDefault = applyStep(cloneWorld(world), {
      kind: 'patchInstance',
      name: 'b',
      patch: { sharding: { enabled: true, weight: 1 } },
    });
    expect(poolWithoutDefault).toMatchObject({
      admitted: false,
      refusal: expect.stringMatching(/not on the default instance "a"/),
    });
    // The safe order: the default joins first, then the other.
    expect(
      applyStep(world, {
        kind: 'patchInstance',
        name: 'a',
        patch: { sharding: { enabled: true, weight: 1 } },
      }).admitted,
    ).toBe(true);
    expect(
      applyStep(world, {
        kind: 'patchInstance',
        name: 'b',
        patch: { sharding: { enabled: true, weight: 1 } },
      }).admitted,
    ).toBe(true);
  });

  it('predicts the refusal of a second config for a target, and admits a pin to a missing instance', () => {
    const world = worldAfter([defaultA, { kind: 'createConfig', name: 'c1', target: T1 }]);
    expect(applyStep(world, { kind: 'createConfig', name: 'c2', target: T1 })).toMatchObject({
      admitted: false,
      refusal: expect.stringMatching(/already converted by CRDConversionConfig "c1"/),
    });
    expect(world.configs.has('c2')).toBe(false);
    expect(applyStep(world, { kind: 'pin', name: 'c1', instance: 'nowhere' }).admitted).toBe(true);
    expect(resolutions(world).get(T1)).toMatchObject({ ok: false, reason: 'PinnedInstanceMissing' });
  });
});

describe('the lifecycle model: assignment', () => {
  it('assigns as the resolver does: pinned first, then the default; lists each instance its targets', () => {
    const world = worldAfter([
      defaultA,
      plainB,
      { kind: 'createTarget', name: T1 },
      { kind: 'createConfig', name: 'c1', target: T1 },
      { kind: 'createConfig', name: 'c2', target: T2, pin: 'b' },
    ]);
    expect(resolutions(world).get(T1)).toMatchObject({ ok: true, instance: 'a', decidedBy: 'Default' });
    expect(resolutions(world).get(T2)).toMatchObject({ ok: true, instance: 'b', decidedBy: 'Pinned' });
    // Assigned whether or not the CRD exists; headed somewhere only when it does.
    expect(assignedTargets(world)).toEqual(
      new Map([
        ['a', [T1]],
        ['b', [T2]],
      ]),
    );
    expect(destinations(world)).toEqual(new Map([[T1, 'a']]));
  });

  it('lets a target keep whatever it may name when its config goes, and narrows it once quiet', () => {
    const world = worldAfter([
      defaultA,
      plainB,
      { kind: 'createTarget', name: T1 },
      { kind: 'createConfig', name: 'c1', target: T1 },
    ]);
    expect(world.targets.get(T1)?.mayName).toEqual(new Set([undefined, 'a']));
    settle(world);
    expect(world.targets.get(T1)?.mayName).toEqual(new Set(['a']));
    applyStep(world, { kind: 'pin', name: 'c1', instance: 'b' });
    applyStep(world, { kind: 'deleteConfig', name: 'c1' });
    settle(world);
    expect(world.targets.get(T1)?.mayName).toEqual(new Set(['a', 'b']));
  });
});

describe('the lifecycle model: a deleted instance', () => {
  const served: Step[] = [
    defaultA,
    plainB,
    { kind: 'createTarget', name: T1 },
    { kind: 'createConfig', name: 'c1', target: T1, pin: 'b' },
  ];

  it('is held while a config resolves to it, and goes once the target is headed elsewhere', () => {
    const world = worldAfter(served);
    settle(world);
    expect(applyStep(world, { kind: 'deleteInstance', name: 'b' })).toEqual({ admitted: true, goes: [] });
    expect(departureOf(world, 'b')).toBe('held');
    expect(applyStep(world, { kind: 'unpin', name: 'c1' })).toEqual({ admitted: true, goes: ['b'] });
  });

  it('is held by a target with no config that names it for sure, and unknown when it may name another', () => {
    const world = worldAfter(served);
    settle(world);
    applyStep(world, { kind: 'deleteConfig', name: 'c1' });
    applyStep(world, { kind: 'deleteInstance', name: 'b' });
    expect(departureOf(world, 'b')).toBe('held');

    const racing = worldAfter(served);
    settle(racing);
    applyStep(racing, { kind: 'unpin', name: 'c1' });
    applyStep(racing, { kind: 'deleteConfig', name: 'c1' });
    applyStep(racing, { kind: 'deleteInstance', name: 'b' });
    expect(departureOf(racing, 'b')).toBe('unknown');
    // Deleting the target decides it.
    expect(applyStep(racing, { kind: 'deleteTarget', name: T1 }).goes).toEqual(['b']);
  });

  it('stays in the fleet while held: it still resolves and still counts for admission', () => {
    const world = worldAfter(served);
    applyStep(world, { kind: 'deleteInstance', name: 'a' });
    applyStep(world, { kind: 'createConfig', name: 'c2', target: T2 });
    expect(resolutions(world).get(T2)).toMatchObject({ ok: true, instance: 'a' });
    expect(
      applyStep(world, { kind: 'createInstance', name: 'c', spec: { default: true, replicas: 1 } }).admitted,
    ).toBe(false);
  });
});

const VOCABULARY: Vocabulary = {
  instances: ['a', 'b', 'c', 'd'],
  maxInstances: 3,
  configs: ['c1', 'c2', 'c3', 'c4', 'c5'],
  targets: [T1, T2, 'things3.lc.example', 'things4.lc.example', 'things5.lc.example'],
  maxWeight: 4,
  maxReplicas: 2,
  maxBurst: 6,
};

describe('the step generator', () => {
  it('plans the same steps for the same seed', () => {
    expect(planLifecycle(seededRandom(7), 60, VOCABULARY)).toEqual(
      planLifecycle(seededRandom(7), 60, VOCABULARY),
    );
    expect(planLifecycle(seededRandom(7), 60, VOCABULARY)).not.toEqual(
      planLifecycle(seededRandom(8), 60, VOCABULARY),
    );
  });

  it('ends every plan empty, quiet, with every outcome determined along the way', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        fc.integer({ min: 1, max: 120 }),
        (seed, count) => {
          const plan = planLifecycle(seededRandom(seed), count, VOCABULARY);
          expect(plan.randomSteps).toBe(count);
          const last = plan.steps[plan.steps.length - 1];
          expect(last?.quiet).toEqual(emptyWorld());
          for (const { quiet } of plan.steps) {
            if (!quiet) continue;
            for (const i of quiet.instances.values())
              if (i.terminating) expect(departureOf(quiet, i.name)).toBe('held');
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('replays: the planned outcomes are what the model says when the steps are applied again', () => {
    const plan = planLifecycle(seededRandom(42), 150, VOCABULARY);
    const world = emptyWorld();
    for (const planned of plan.steps) {
      const outcome = applyStep(world, planned.step);
      expect(outcome).toEqual(planned.outcome);
      for (const gone of outcome.goes) depart(world, gone);
      if (planned.quiet) {
        settle(world);
        expect(world).toEqual(planned.quiet);
      }
    }
  });

  it('asks for moves: served targets change instance between quiet periods', () => {
    // Seeds and length as CI runs them (the names differ here, so the moves do too).
    const moves = [5, 7, 11].map((seed) => servedMoves(planLifecycle(seededRandom(seed), 45, VOCABULARY)));
    expect(moves.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(10);
  });

  it('covers the vocabulary: every kind of step, refusals and held deletions', () => {
    const plans = [1, 2, 3].map((seed) => planLifecycle(seededRandom(seed), 150, VOCABULARY));
    const steps = plans.flatMap((p) => p.steps);
    const kinds = new Set(steps.map((s) => s.step.kind));
    expect([...kinds].sort()).toEqual(
      [
        'createConfig',
        'createInstance',
        'createTarget',
        'deleteConfig',
        'deleteInstance',
        'deleteTarget',
        'patchInstance',
        'pin',
        'recreateConfig',
        'recreateInstance',
        'recreateTarget',
        'unpin',
      ].sort(),
    );
    expect(steps.filter((s) => !s.outcome.admitted).length).toBeGreaterThan(5);
    expect(
      steps.filter(
        (s) =>
          s.step.kind === 'deleteInstance' && s.outcome.admitted && !s.outcome.goes.includes(s.step.name),
      ).length,
    ).toBeGreaterThan(0);
  });
});
