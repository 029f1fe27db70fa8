import { describe, expect, it } from 'vitest';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import type { InstanceLike } from '../core/assignment.ts';
import { servicesNamingTarget } from '../core/routing.ts';
import { conversionServiceOf } from '../core/target-conversion.ts';
import { convert } from '../engine/convert.ts';
import { HeldPlans, type PlanWorld, type SourceOf, type SyncMoment } from './plans.ts';
import { fromWorld, gizmoTarget, renameConfig } from './test-support.ts';

const TARGET = 'gizmos.x.io';
const NO_DRAIN = { drainMs: 0 };

/** A sync at `nowMs` on a current view, with the Lease holding every set given. */
function at(nowMs: number, moment: Partial<SyncMoment> = {}): SyncMoment {
  return { nowMs, viewCurrent: true, leaseSettled: true, ...moment };
}

/** A sync and every compile it queued, as the replica's background slices would do by and by. */
function syncAll(plans: HeldPlans, w: PlanWorld, moment: SyncMoment) {
  const { removed, draining } = plans.sync(w, moment);
  const { added, failed } = plans.compilePending(fromWorld);
  return { added, removed, failed, draining };
}

function gizmos(name = TARGET, service?: string, v1Field = 'replicas') {
  return gizmoTarget(name, { ...(service && { service }), v1Field });
}

function config(
  name: string,
  opts: {
    target?: string;
    pin?: string;
    spokePath?: string;
    generation?: number;
    driftPolicy?: 'KeepServingStale' | 'FailClosed';
  } = {},
): ConversionConfig {
  return conversionConfigSchema.parse(renameConfig(name, opts.target ?? TARGET, opts));
}

const instance = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({
  metadata: { name },
  spec,
});

function world(
  configs: ConversionConfig[],
  targets: unknown[],
  instances = [instance('a'), instance('b')],
): PlanWorld {
  return {
    configs,
    instances,
    targets: new Map(targets.map((t) => [(t as { metadata: { name: string } }).metadata.name, t])),
    services: new Map(
      targets.map((t) => [
        (t as { metadata: { name: string } }).metadata.name,
        servicesNamingTarget(conversionServiceOf(t)),
      ]),
    ),
  };
}

describe('the plans a replica holds', () => {
  it('holds a plan for a target assigned to its instance, and converts with it', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    expect(syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0))).toEqual({
      added: [TARGET],
      removed: [],
      failed: [],
      draining: [],
    });
    const found = plans.lookup(TARGET, 0, fromWorld);
    expect(found.kind).toBe('plan');
    if (found.kind !== 'plan') return;
    expect(found.group).toBe('x.io');
    const object = { apiVersion: 'x.io/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec: { replicas: 3 } };
    expect(convert(found.router, object, 'v1', 'v2')).toMatchObject({
      ok: true,
      object: { apiVersion: 'x.io/v2', spec: { size: 3 } },
    });
    expect([...plans.servable()]).toEqual([TARGET]);
  });

  it('reports nothing for a target assigned elsewhere that does not name it', () => {
    const plans = new HeldPlans('b', NO_DRAIN);
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    expect([...plans.servable()]).toEqual([]);
    expect([...plans.held()]).toEqual([]);
  });

  it('keeps serving on the losing side while the target still names its Service, and for the drain after the repoint', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = syncAll(
      plans,
      world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]),
      at(1_000),
    );
    expect(moved, 'repinned to b, but the target still names a').toMatchObject({ removed: [], draining: [] });
    expect(plans.lookup(TARGET, 0, fromWorld).kind).toBe('plan');
    const repointed = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    expect(syncAll(plans, repointed, at(2_000))).toMatchObject({ removed: [], draining: [TARGET] });
    expect(plans.nextDrainEndMs()).toBe(32_000);
    expect(syncAll(plans, repointed, at(31_999))).toMatchObject({ removed: [], draining: [] });
    expect([...plans.held()], 'still serving the calls the apiserver sent before').toEqual([TARGET]);
    expect([...plans.servable()], 'but no longer reporting it').toEqual([]);
    expect(syncAll(plans, repointed, at(32_000))).toMatchObject({ removed: [TARGET], draining: [] });
    expect([...plans.held()]).toEqual([]);
    expect(plans.nextDrainEndMs()).toBeUndefined();
  });

  it('ends the drain of a target that is wanted again, and drains it anew when it leaves again', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    const here = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    const gone = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    syncAll(plans, here, at(0));
    expect(syncAll(plans, gone, at(1_000)).draining).toEqual([TARGET]);
    expect(syncAll(plans, here, at(20_000))).toMatchObject({ added: [], removed: [], draining: [] });
    expect(plans.nextDrainEndMs()).toBeUndefined();
    expect(syncAll(plans, gone, at(40_000)).draining).toEqual([TARGET]);
    expect(syncAll(plans, gone, at(69_999)).removed, 'a fresh drain, not the first one’s end').toEqual([]);
    expect(syncAll(plans, gone, at(70_000)).removed).toEqual([TARGET]);
  });

  it('drops the plan at once on reassignment when told to hold only what it is assigned (the negative control)', () => {
    const plans = new HeldPlans('a', { drainMs: 0, holdWhileNamed: false });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = syncAll(
      plans,
      world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]),
      at(0),
    );
    expect(moved.removed, 'repinned to b; the target still names a, and a lets go anyway').toEqual([TARGET]);
    expect(plans.lookup(TARGET, 0, fromWorld)).toMatchObject({ kind: 'none' });
  });

  it('holds nothing for a target that does not exist, or that two configs claim', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    syncAll(plans, world([config('w', { pin: 'a' })], []), at(0));
    expect(plans.lookup(TARGET, 0, fromWorld)).toEqual({
      kind: 'none',
      why: `the target ${TARGET} does not exist in this replica's view of the bus`,
    });
    syncAll(plans, world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]), at(0));
    expect([...plans.servable()]).toEqual([]);
    const lookup = plans.lookup(TARGET, 0, fromWorld);
    expect(lookup.kind === 'none' && lookup.why).toContain('all convert');
  });

  it('keeps the last good plan when the config stops compiling, reports it, and takes a fix', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const before = plans.lookup(TARGET, 0, fromWorld);
    const broken = syncAll(
      plans,
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere', generation: 2 })], [gizmos()]),
      at(0),
    );
    expect(broken.failed).toEqual([TARGET]);
    expect(broken.removed, 'a bad edit must not take the working plan away').toEqual([]);
    expect(plans.lookup(TARGET, 0, fromWorld)).toEqual(before);
    expect(plans.failures().get(TARGET)?.join(' ')).toContain('spec.nowhere');
    const fixed = syncAll(plans, world([config('w', { pin: 'a', generation: 3 })], [gizmos()]), at(0));
    expect(fixed.failed).toEqual([]);
    expect(plans.failures().size).toBe(0);
  });

  it('serves nothing, and says why, for a config that never compiled', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const result = syncAll(
      plans,
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]),
      at(0),
    );
    expect(result).toEqual({ added: [], removed: [], failed: [TARGET], draining: [] });
    const lookup = plans.lookup(TARGET, 0, fromWorld);
    expect(lookup.kind === 'none' && lookup.why).toMatch(/^its config does not compile: /);
  });

  describe('driftPolicy FailClosed', () => {
    const failClosed = (opts: { spokePath?: string; generation?: number } = {}) =>
      config('w', { pin: 'a', driftPolicy: 'FailClosed', ...opts });
    /** The target after its v1 field was renamed to spec.count: the config's rule no longer resolves. */
    const drifted = () => gizmos(TARGET, undefined, 'count');
    const refusal =
      /^its config CRDConversionConfig w does not compile and its driftPolicy is FailClosed, so its conversions are refused until it compiles again: .*spec\.replicas/;

    it('drops the held plan when the target’s schema drifts under it, refuses its reviews naming the config and the policy, and stops reporting it', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      syncAll(plans, world([failClosed()], [gizmos()]), at(0));
      expect([...plans.servable()]).toEqual([TARGET]);
      const { removed } = plans.sync(world([failClosed()], [drifted()]), at(1));
      expect(removed, 'a sync decides, it does not compile').toEqual([]);
      expect(plans.compilePending(fromWorld)).toEqual({ added: [], failed: [TARGET], dropped: [TARGET] });
      expect([...plans.held()]).toEqual([]);
      expect([...plans.servable()]).toEqual([]);
      const lookup = plans.lookup(TARGET, 2, fromWorld);
      expect(lookup.kind === 'none' && lookup.why).toMatch(refusal);
      expect(
        plans.sync(world([failClosed()], [drifted()]), at(3)).pending,
        'remembered, not compiled again',
      ).toBe(0);
    });

    it('keeps the last good plan under KeepServingStale (the default) for the same drift', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      const stale = config('w', { pin: 'a', driftPolicy: 'KeepServingStale' });
      syncAll(plans, world([stale], [gizmos()]), at(0));
      const before = plans.lookup(TARGET, 0, fromWorld);
      expect(syncAll(plans, world([stale], [drifted()]), at(1))).toMatchObject({
        failed: [TARGET],
        removed: [],
      });
      expect(plans.lookup(TARGET, 1, fromWorld)).toEqual(before);
      expect([...plans.servable()]).toEqual([TARGET]);
    });

    it('refuses the first review after the view shows the drift: it compiles the pending revision before answering', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      syncAll(plans, world([failClosed()], [gizmos()]), at(0));
      plans.sync(world([failClosed()], [drifted()]), at(1));
      expect(plans.wantOf(TARGET), 'the review reads what the pending compile needs').toBeDefined();
      expect(plans.holds(TARGET)).toBe(true);
      const lookup = plans.lookup(TARGET, 2, fromWorld);
      expect(lookup.kind === 'none' && lookup.why).toMatch(refusal);
      expect(plans.holds(TARGET)).toBe(false);
      expect(plans.pendingCount()).toBe(0);
    });

    it('drops the plan when the config’s own spec stops compiling, as the reference reverts on any failed re-validation', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      syncAll(plans, world([failClosed()], [gizmos()]), at(0));
      const edited = syncAll(
        plans,
        world([failClosed({ spokePath: 'spec.nowhere', generation: 2 })], [gizmos()]),
        at(1),
      );
      expect(edited).toMatchObject({ failed: [TARGET] });
      const lookup = plans.lookup(TARGET, 2, fromWorld);
      expect(lookup.kind === 'none' && lookup.why).toContain('spec.nowhere');
      expect(lookup.kind === 'none' && lookup.why).toContain('driftPolicy is FailClosed');
    });

    it('serves again once the config compiles against the target again', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      syncAll(plans, world([failClosed()], [gizmos()]), at(0));
      syncAll(plans, world([failClosed()], [drifted()]), at(1));
      const fixed = syncAll(
        plans,
        world([failClosed({ spokePath: 'spec.count', generation: 2 })], [drifted()]),
        at(2),
      );
      expect(fixed).toMatchObject({ added: [TARGET], failed: [] });
      expect(plans.lookup(TARGET, 3, fromWorld).kind).toBe('plan');
    });

    it('drops nothing for what is not a failure to compile: sources that could not be read', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      syncAll(plans, world([failClosed()], [gizmos()]), at(0));
      plans.sync(world([failClosed()], [drifted()]), at(1));
      const unreadable: SourceOf = () => ({ kind: 'unreadable', why: 'the bus did not answer' });
      expect(plans.compilePending(unreadable)).toEqual({ added: [], failed: [TARGET], dropped: [] });
      expect([...plans.servable()], 'no evidence of drift: the plan held serves').toEqual([TARGET]);
    });

    it('has no plan to drop for a config that never compiled, and refuses naming the policy all the same', () => {
      const plans = new HeldPlans('a', NO_DRAIN);
      expect(syncAll(plans, world([failClosed()], [drifted()]), at(0))).toMatchObject({
        added: [],
        failed: [TARGET],
      });
      const lookup = plans.lookup(TARGET, 1, fromWorld);
      expect(lookup.kind === 'none' && lookup.why).toMatch(refusal);
    });
  });

  it('compiles again only when the rules or the target’s versions change, never for a status write', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const routerOf = () => {
      const found = plans.lookup(TARGET, 0, fromWorld);
      return found.kind === 'plan' ? found.router : undefined;
    };
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const first = routerOf();
    expect(first).toBeDefined();
    const withStatus = { ...config('w', { pin: 'a' }), status: { phase: 'Applied' as const } };
    syncAll(plans, world([withStatus], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    expect(routerOf(), 'a status write and a repoint compile nothing').toBe(first);
    syncAll(
      plans,
      world(
        [config('w', { pin: 'a', spokePath: 'spec.count', generation: 2 })],
        [gizmos(TARGET, undefined, 'count')],
      ),
      at(0),
    );
    expect(routerOf()).not.toBe(first);
    expect(routerOf()).toBeDefined();
  });

  it('follows the pool: an unpinned config is held by the member the resolver picks, and by no other', () => {
    const pool = [
      instance('a', { sharding: { enabled: true } }),
      instance('b', { sharding: { enabled: true } }),
    ];
    const configs = Array.from({ length: 40 }, (_, i) => config(`c${i}`, { target: `gizmos${i}.x.io` }));
    const targets = configs.map((_, i) => gizmos(`gizmos${i}.x.io`));
    const a = new HeldPlans('a', NO_DRAIN);
    const b = new HeldPlans('b', NO_DRAIN);
    syncAll(a, world(configs, targets, pool), at(0));
    syncAll(b, world(configs, targets, pool), at(0));
    expect(a.servable().size + b.servable().size).toBe(40);
    expect([...a.servable()].filter((t) => b.servable().has(t))).toEqual([]);
    expect(a.servable().size).toBeGreaterThan(0);
    expect(b.servable().size).toBeGreaterThan(0);
  });

  it('takes a draining target out of the report at once: a report means "held for as long as it names me"', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    const named = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    syncAll(plans, named, at(0));
    expect([...plans.servable()]).toEqual([TARGET]);
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    expect(syncAll(plans, moved, at(1_000)).draining).toEqual([TARGET]);
    expect([...plans.servable()], 'not reported while it drains').toEqual([]);
    expect([...plans.held()], 'but still held and served').toEqual([TARGET]);
    expect(plans.lookup(TARGET, 1_000, fromWorld).kind).toBe('plan');
  });

  it('drops nothing while its view is behind the bus, however long: a stale view is no evidence', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    // The view says the target went to b, but the view is behind: it may not have seen it come back.
    const looksMoved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    for (let now = 1_000; now <= 600_000; now += 10_000)
      expect(syncAll(plans, looksMoved, at(now, { viewCurrent: false })).removed, `at ${now} ms`).toEqual([]);
    expect(plans.nextDrainEndMs(), 'no drain runs on a stale view').toBeUndefined();
    // Current again: the evidence starts now, and the drain runs from here.
    expect(syncAll(plans, looksMoved, at(600_000)).draining).toEqual([TARGET]);
    expect(syncAll(plans, looksMoved, at(629_999)).removed).toEqual([]);
    expect(syncAll(plans, looksMoved, at(630_000)).removed).toEqual([TARGET]);
  });

  it('starts the drain only once the Lease no longer reports the target', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    syncAll(plans, moved, at(1_000, { leaseSettled: false }));
    expect(
      syncAll(plans, moved, at(60_000, { leaseSettled: false })).removed,
      'the Lease may still report it',
    ).toEqual([]);
    syncAll(plans, moved, at(61_000));
    expect(plans.nextDrainEndMs()).toBe(91_000);
    expect(syncAll(plans, moved, at(90_999)).removed).toEqual([]);
    expect(syncAll(plans, moved, at(91_000)).removed).toEqual([TARGET]);
  });

  it('keeps a draining plan for a drain after the last review it served', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    syncAll(plans, moved, at(1_000));
    expect(plans.lookup(TARGET, 25_000, fromWorld).kind).toBe('plan');
    expect(syncAll(plans, moved, at(31_000)).removed, 'used 6 s ago').toEqual([]);
    expect(syncAll(plans, moved, at(55_000)).removed).toEqual([TARGET]);
  });

  it('serves a review routed to it although its view says the target is elsewhere: compiles on demand', () => {
    const plans = new HeldPlans('b', { drainMs: 30_000 });
    // b's view: assigned to a, naming a. The apiserver calling b says otherwise: b's view is behind.
    const elsewhere = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    syncAll(plans, elsewhere, at(0));
    const found = plans.lookup(TARGET, 100, fromWorld);
    expect(found.kind).toBe('plan');
    if (found.kind !== 'plan') return;
    const object = { apiVersion: 'x.io/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec: { replicas: 3 } };
    expect(convert(found.router, object, 'v1', 'v2')).toMatchObject({
      ok: true,
      object: { spec: { size: 3 } },
    });
    expect([...plans.servable()], 'compiled for a review, not reported').toEqual([]);
    expect(syncAll(plans, elsewhere, at(200)).draining).toEqual([TARGET]);
    expect(syncAll(plans, elsewhere, at(30_099)).removed).toEqual([]);
    expect(syncAll(plans, elsewhere, at(30_200)).removed, 'unused for a drain: gone').toEqual([TARGET]);
  });

  it('refuses on demand only what it cannot convert correctly, and says why', () => {
    const b = new HeldPlans('b', NO_DRAIN);
    syncAll(b, world([], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0, fromWorld)).toEqual({ kind: 'none', why: 'no config converts it' });
    syncAll(b, world([config('w', { pin: 'a' })], []), at(0));
    expect(b.lookup(TARGET, 0, fromWorld)).toMatchObject({
      kind: 'none',
      why: expect.stringContaining('does not exist'),
    });
    syncAll(b, world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0, fromWorld)).toMatchObject({
      kind: 'none',
      why: expect.stringContaining('all convert'),
    });
    syncAll(b, world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0, fromWorld)).toMatchObject({
      kind: 'none',
      why: expect.stringMatching(/^its config does not compile: /),
    });
    expect(b.lookup(TARGET, 0, fromWorld).kind, 'the failed compile is remembered, not repeated').toBe(
      'none',
    );
  });

  it('keeps serving and reporting a target that names it after its config is deleted', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const orphan = world([], [gizmos(TARGET, 'a-webhook-server')]);
    expect(syncAll(plans, orphan, at(100_000))).toMatchObject({ removed: [], draining: [] });
    expect([...plans.servable()]).toEqual([TARGET]);
    expect(plans.lookup(TARGET, 100_000, fromWorld).kind).toBe('plan');
  });
});

describe('compiling after the decision: a sync decides, compiles run by and by or for a review', () => {
  const NAMES = ['gizmos1.x.io', 'gizmos2.x.io', 'gizmos3.x.io'];
  const three = () =>
    world(
      NAMES.map((t, i) => config(`c${i}`, { target: t, pin: 'a' })),
      NAMES.map((t) => gizmos(t)),
    );
  const v1 = { apiVersion: 'x.io/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec: { replicas: 3 } };

  it('decides what to hold without compiling; reports nothing it has not compiled, then grows slice by slice', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    expect(plans.sync(three(), at(0))).toEqual({ removed: [], draining: [], pending: 3 });
    expect(plans.pendingTargets()).toEqual(NAMES);
    expect([...plans.servable()], 'nothing compiled, nothing reported').toEqual([]);
    expect([...plans.held()]).toEqual([]);
    const slices: string[][] = [];
    while (plans.pendingCount() > 0) {
      const { added, failed } = plans.compilePending(fromWorld, (compiled) => compiled < 2);
      expect(failed).toEqual([]);
      slices.push(added);
      for (const target of plans.servable())
        expect(plans.pendingTargets(), `${target} reported while its compile waits`).not.toContain(target);
    }
    expect(slices, 'two a slice, then the rest').toEqual([NAMES.slice(0, 2), NAMES.slice(2)]);
    expect([...plans.servable()].sort()).toEqual(NAMES);
  });

  it('compiles a pending target for the review that needs it, serves it, and reports it from then on', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(three(), at(0));
    const found = plans.lookup('gizmos3.x.io', 5, fromWorld);
    expect(found.kind, 'compiled and served, not refused').toBe('plan');
    if (found.kind !== 'plan') return;
    expect(convert(found.router, v1, 'v1', 'v2')).toMatchObject({ ok: true, object: { spec: { size: 3 } } });
    expect([...plans.servable()]).toEqual(['gizmos3.x.io']);
    expect(plans.pendingTargets()).toEqual(NAMES.slice(0, 2));
    expect(plans.compilePending(fromWorld).added, 'compiled once, by the review').toEqual(NAMES.slice(0, 2));
    expect(plans.lookup('gizmos3.x.io', 6, fromWorld)).toEqual(found);
  });

  it('takes a failing compile as a failure, not a crash: the others compile and a review says why', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const bad = world(
      [config('w', { pin: 'a', spokePath: 'spec.nowhere' }), config('o', { target: 'other.x.io', pin: 'a' })],
      [gizmos(), gizmos('other.x.io')],
    );
    plans.sync(bad, at(0));
    const lookup = plans.lookup(TARGET, 0, fromWorld);
    expect(lookup.kind === 'none' && lookup.why).toMatch(/^its config does not compile: .*spec\.nowhere/);
    expect(plans.compilePending(fromWorld)).toEqual({ added: ['other.x.io'], failed: [], dropped: [] });
    expect([...plans.servable()]).toEqual(['other.x.io']);
    expect(plans.failures().get(TARGET)?.join(' ')).toContain('spec.nowhere');
    expect(plans.sync(bad, at(1)).pending, 'a failure is remembered, not compiled again').toBe(0);
  });

  it('takes sources it cannot read as a failure of that revision: not read again until the config or target changes', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const unreadable: SourceOf = () => ({
      kind: 'unreadable',
      why: 'the record of CRDConversionConfig w could not be read again from the bus',
    });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    expect(plans.compilePending(unreadable)).toEqual({ added: [], failed: [TARGET], dropped: [] });
    expect(plans.lookup(TARGET, 0, unreadable)).toEqual({
      kind: 'none',
      why: 'its config does not compile: the record of CRDConversionConfig w could not be read again from the bus',
    });
    expect(plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(1)).pending).toBe(0);
    expect(plans.sync(world([config('w', { pin: 'a', generation: 2 })], [gizmos()]), at(2)).pending).toBe(1);
    expect(plans.compilePending(fromWorld)).toEqual({ added: [TARGET], failed: [], dropped: [] });
  });

  it('compiles nothing until its sources are read, and serves the plan held when a review’s cannot be', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const notRead: SourceOf = () => undefined;
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const held = plans.lookup(TARGET, 0, notRead);
    expect(held.kind).toBe('plan');
    plans.sync(
      world(
        [config('w', { pin: 'a', spokePath: 'spec.count', generation: 2 })],
        [gizmos(TARGET, undefined, 'count')],
      ),
      at(1),
    );
    expect(plans.compilePending(notRead)).toEqual({ added: [], failed: [], dropped: [] });
    expect(plans.pendingTargets()).toEqual([TARGET]);
    expect(plans.lookup(TARGET, 1, notRead), 'the last good plan serves').toEqual(held);
    expect(plans.lookup(TARGET, 2, fromWorld)).not.toEqual(held);
    expect(plans.pendingTargets()).toEqual([]);
  });

  it('queues a recompile: the last good plan stays reported meanwhile, and a review gets the new plan', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    syncAll(plans, world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const first = plans.lookup(TARGET, 0, fromWorld);
    const edited = world(
      [config('w', { pin: 'a', spokePath: 'spec.count', generation: 2 })],
      [gizmos(TARGET, undefined, 'count')],
    );
    expect(plans.sync(edited, at(1)).pending).toBe(1);
    expect([...plans.servable()], 'still held: the last good plan').toEqual([TARGET]);
    const next = plans.lookup(TARGET, 1, fromWorld);
    expect(next.kind).toBe('plan');
    expect(next, 'the review converts with what the view holds now').not.toEqual(first);
    if (next.kind !== 'plan') return;
    const count = { ...v1, spec: { count: 3 } };
    expect(convert(next.router, count, 'v1', 'v2')).toMatchObject({
      ok: true,
      object: { spec: { size: 3 } },
    });
    expect(plans.pendingCount()).toBe(0);
  });

  it('forgets a pending compile once the target is no longer called for here', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(three(), at(0));
    const moved = world(
      NAMES.map((t, i) => config(`c${i}`, { target: t, pin: i === 0 ? 'b' : 'a' })),
      NAMES.map((t) => gizmos(t)),
    );
    expect(plans.sync(moved, at(1)).pending).toBe(2);
    expect(plans.compilePending(fromWorld).added).toEqual(NAMES.slice(1));
    expect(plans.servable().has(NAMES[0] as string)).toBe(false);
  });
});
