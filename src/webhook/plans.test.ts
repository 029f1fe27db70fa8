import { describe, expect, it } from 'vitest';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import type { InstanceLike } from '../core/assignment.ts';
import { convert } from '../engine/convert.ts';
import { HeldPlans, type PlanWorld, type SyncMoment } from './plans.ts';
import { gizmoTarget, renameConfig } from './test-support.ts';

const TARGET = 'gizmos.x.io';
const NO_DRAIN = { drainMs: 0 };

/** A sync at `nowMs` on a current view, with the Lease holding every set given. */
function at(nowMs: number, moment: Partial<SyncMoment> = {}): SyncMoment {
  return { nowMs, viewCurrent: true, leaseSettled: true, ...moment };
}

function gizmos(name = TARGET, service?: string, v1Field = 'replicas') {
  return gizmoTarget(name, { ...(service && { service }), v1Field });
}

function config(
  name: string,
  opts: { target?: string; pin?: string; spokePath?: string; generation?: number } = {},
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
  };
}

describe('the plans a replica holds', () => {
  it('holds a plan for a target assigned to its instance, and converts with it', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    expect(plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(0))).toEqual({
      added: [TARGET],
      removed: [],
      failed: [],
      draining: [],
    });
    const found = plans.lookup(TARGET, 0);
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
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    expect([...plans.servable()]).toEqual([]);
    expect([...plans.held()]).toEqual([]);
  });

  it('keeps serving on the losing side while the target still names its Service, and for the drain after the repoint', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = plans.sync(
      world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]),
      at(1_000),
    );
    expect(moved, 'repinned to b, but the target still names a').toMatchObject({ removed: [], draining: [] });
    expect(plans.lookup(TARGET, 0).kind).toBe('plan');
    const repointed = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    expect(plans.sync(repointed, at(2_000))).toMatchObject({ removed: [], draining: [TARGET] });
    expect(plans.nextDrainEndMs()).toBe(32_000);
    expect(plans.sync(repointed, at(31_999))).toMatchObject({ removed: [], draining: [] });
    expect([...plans.held()], 'still serving the calls the apiserver sent before').toEqual([TARGET]);
    expect([...plans.servable()], 'but no longer reporting it').toEqual([]);
    expect(plans.sync(repointed, at(32_000))).toMatchObject({ removed: [TARGET], draining: [] });
    expect([...plans.held()]).toEqual([]);
    expect(plans.nextDrainEndMs()).toBeUndefined();
  });

  it('ends the drain of a target that is wanted again, and drains it anew when it leaves again', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    const here = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    const gone = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    plans.sync(here, at(0));
    expect(plans.sync(gone, at(1_000)).draining).toEqual([TARGET]);
    expect(plans.sync(here, at(20_000))).toMatchObject({ added: [], removed: [], draining: [] });
    expect(plans.nextDrainEndMs()).toBeUndefined();
    expect(plans.sync(gone, at(40_000)).draining).toEqual([TARGET]);
    expect(plans.sync(gone, at(69_999)).removed, 'a fresh drain, not the first one’s end').toEqual([]);
    expect(plans.sync(gone, at(70_000)).removed).toEqual([TARGET]);
  });

  it('drops the plan at once on reassignment when told to hold only what it is assigned (the negative control)', () => {
    const plans = new HeldPlans('a', { drainMs: 0, holdWhileNamed: false });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = plans.sync(world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    expect(moved.removed, 'repinned to b; the target still names a, and a lets go anyway').toEqual([TARGET]);
    expect(plans.lookup(TARGET, 0)).toMatchObject({ kind: 'none' });
  });

  it('holds nothing for a target that does not exist, or that two configs claim', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(world([config('w', { pin: 'a' })], []), at(0));
    expect(plans.lookup(TARGET, 0)).toEqual({
      kind: 'none',
      why: `the target ${TARGET} does not exist in this replica's view of the bus`,
    });
    plans.sync(world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]), at(0));
    expect([...plans.servable()]).toEqual([]);
    const lookup = plans.lookup(TARGET, 0);
    expect(lookup.kind === 'none' && lookup.why).toContain('all convert');
  });

  it('keeps the last good plan when the config stops compiling, reports it, and takes a fix', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const before = plans.lookup(TARGET, 0);
    const broken = plans.sync(
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere', generation: 2 })], [gizmos()]),
      at(0),
    );
    expect(broken.failed).toEqual([TARGET]);
    expect(broken.removed, 'a bad edit must not take the working plan away').toEqual([]);
    expect(plans.lookup(TARGET, 0)).toEqual(before);
    expect(plans.failures().get(TARGET)?.join(' ')).toContain('spec.nowhere');
    const fixed = plans.sync(world([config('w', { pin: 'a', generation: 3 })], [gizmos()]), at(0));
    expect(fixed.failed).toEqual([]);
    expect(plans.failures().size).toBe(0);
  });

  it('serves nothing, and says why, for a config that never compiled', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const result = plans.sync(
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]),
      at(0),
    );
    expect(result).toEqual({ added: [], removed: [], failed: [TARGET], draining: [] });
    const lookup = plans.lookup(TARGET, 0);
    expect(lookup.kind === 'none' && lookup.why).toMatch(/^its config does not compile: /);
  });

  it('compiles again only when the rules or the target’s versions change, never for a status write', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const routerOf = () => {
      const found = plans.lookup(TARGET, 0);
      return found.kind === 'plan' ? found.router : undefined;
    };
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), at(0));
    const first = routerOf();
    expect(first).toBeDefined();
    const withStatus = { ...config('w', { pin: 'a' }), status: { phase: 'Applied' as const } };
    plans.sync(world([withStatus], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    expect(routerOf(), 'a status write and a repoint compile nothing').toBe(first);
    plans.sync(
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
    a.sync(world(configs, targets, pool), at(0));
    b.sync(world(configs, targets, pool), at(0));
    expect(a.servable().size + b.servable().size).toBe(40);
    expect([...a.servable()].filter((t) => b.servable().has(t))).toEqual([]);
    expect(a.servable().size).toBeGreaterThan(0);
    expect(b.servable().size).toBeGreaterThan(0);
  });

  it('takes a draining target out of the report at once: a report means "held for as long as it names me"', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    const named = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    plans.sync(named, at(0));
    expect([...plans.servable()]).toEqual([TARGET]);
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    expect(plans.sync(moved, at(1_000)).draining).toEqual([TARGET]);
    expect([...plans.servable()], 'not reported while it drains').toEqual([]);
    expect([...plans.held()], 'but still held and served').toEqual([TARGET]);
    expect(plans.lookup(TARGET, 1_000).kind).toBe('plan');
  });

  it('drops nothing while its view is behind the bus, however long: a stale view is no evidence', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    // The view says the target went to b, but the view is behind: it may not have seen it come back.
    const looksMoved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    for (let now = 1_000; now <= 600_000; now += 10_000)
      expect(plans.sync(looksMoved, at(now, { viewCurrent: false })).removed, `at ${now} ms`).toEqual([]);
    expect(plans.nextDrainEndMs(), 'no drain runs on a stale view').toBeUndefined();
    // Current again: the evidence starts now, and the drain runs from here.
    expect(plans.sync(looksMoved, at(600_000)).draining).toEqual([TARGET]);
    expect(plans.sync(looksMoved, at(629_999)).removed).toEqual([]);
    expect(plans.sync(looksMoved, at(630_000)).removed).toEqual([TARGET]);
  });

  it('starts the drain only once the Lease no longer reports the target', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    plans.sync(moved, at(1_000, { leaseSettled: false }));
    expect(
      plans.sync(moved, at(60_000, { leaseSettled: false })).removed,
      'the Lease may still report it',
    ).toEqual([]);
    plans.sync(moved, at(61_000));
    expect(plans.nextDrainEndMs()).toBe(91_000);
    expect(plans.sync(moved, at(90_999)).removed).toEqual([]);
    expect(plans.sync(moved, at(91_000)).removed).toEqual([TARGET]);
  });

  it('keeps a draining plan for a drain after the last review it served', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const moved = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    plans.sync(moved, at(1_000));
    expect(plans.lookup(TARGET, 25_000).kind).toBe('plan');
    expect(plans.sync(moved, at(31_000)).removed, 'used 6 s ago').toEqual([]);
    expect(plans.sync(moved, at(55_000)).removed).toEqual([TARGET]);
  });

  it('serves a review routed to it although its view says the target is elsewhere: compiles on demand', () => {
    const plans = new HeldPlans('b', { drainMs: 30_000 });
    // b's view: assigned to a, naming a. The apiserver calling b says otherwise: b's view is behind.
    const elsewhere = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    plans.sync(elsewhere, at(0));
    const found = plans.lookup(TARGET, 100);
    expect(found.kind).toBe('plan');
    if (found.kind !== 'plan') return;
    const object = { apiVersion: 'x.io/v1', kind: 'Gizmo', metadata: { name: 'g' }, spec: { replicas: 3 } };
    expect(convert(found.router, object, 'v1', 'v2')).toMatchObject({
      ok: true,
      object: { spec: { size: 3 } },
    });
    expect([...plans.servable()], 'compiled for a review, not reported').toEqual([]);
    expect(plans.sync(elsewhere, at(200)).draining).toEqual([TARGET]);
    expect(plans.sync(elsewhere, at(30_099)).removed).toEqual([]);
    expect(plans.sync(elsewhere, at(30_200)).removed, 'unused for a drain: gone').toEqual([TARGET]);
  });

  it('refuses on demand only what it cannot convert correctly, and says why', () => {
    const b = new HeldPlans('b', NO_DRAIN);
    b.sync(world([], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0)).toEqual({ kind: 'none', why: 'no config converts it' });
    b.sync(world([config('w', { pin: 'a' })], []), at(0));
    expect(b.lookup(TARGET, 0)).toMatchObject({
      kind: 'none',
      why: expect.stringContaining('does not exist'),
    });
    b.sync(world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0)).toMatchObject({ kind: 'none', why: expect.stringContaining('all convert') });
    b.sync(world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]), at(0));
    expect(b.lookup(TARGET, 0)).toMatchObject({
      kind: 'none',
      why: expect.stringMatching(/^its config does not compile: /),
    });
    expect(b.lookup(TARGET, 0).kind, 'the failed compile is remembered, not repeated').toBe('none');
  });

  it('keeps serving and reporting a target that names it after its config is deleted', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), at(0));
    const orphan = world([], [gizmos(TARGET, 'a-webhook-server')]);
    expect(plans.sync(orphan, at(100_000))).toMatchObject({ removed: [], draining: [] });
    expect([...plans.servable()]).toEqual([TARGET]);
    expect(plans.lookup(TARGET, 100_000).kind).toBe('plan');
  });
});
