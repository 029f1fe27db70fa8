import { describe, expect, it } from 'vitest';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import type { InstanceLike } from '../core/assignment.ts';
import { convert } from '../engine/convert.ts';
import { HeldPlans, type PlanWorld } from './plans.ts';
import { gizmoTarget, renameConfig } from './test-support.ts';

const TARGET = 'gizmos.x.io';
const NO_DRAIN = { drainMs: 0 };

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
    expect(plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), 0)).toEqual({
      added: [TARGET],
      removed: [],
      failed: [],
      draining: [],
    });
    const found = plans.lookup(TARGET);
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

  it('holds nothing for a target assigned elsewhere that does not name it, and says why', () => {
    const plans = new HeldPlans('b', NO_DRAIN);
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), 0);
    expect([...plans.servable()]).toEqual([]);
    expect(plans.lookup(TARGET)).toEqual({
      kind: 'none',
      why: 'it is assigned to a and its conversion does not name b',
    });
  });

  it('keeps serving on the losing side while the target still names its Service, and for the drain after the repoint', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), 0);
    const moved = plans.sync(world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]), 1_000);
    expect(moved, 'repinned to b, but the target still names a').toMatchObject({ removed: [], draining: [] });
    expect(plans.lookup(TARGET).kind).toBe('plan');
    const repointed = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    expect(plans.sync(repointed, 2_000)).toMatchObject({ removed: [], draining: [TARGET] });
    expect(plans.nextDrainEndMs()).toBe(32_000);
    expect(plans.sync(repointed, 31_999)).toMatchObject({ removed: [], draining: [] });
    expect(plans.lookup(TARGET).kind, 'still serving the calls the apiserver sent before').toBe('plan');
    expect([...plans.servable()]).toEqual([TARGET]);
    expect(plans.sync(repointed, 32_000)).toMatchObject({ removed: [TARGET], draining: [] });
    expect(plans.lookup(TARGET).kind).toBe('none');
    expect(plans.nextDrainEndMs()).toBeUndefined();
  });

  it('ends the drain of a target that is wanted again, and drains it anew when it leaves again', () => {
    const plans = new HeldPlans('a', { drainMs: 30_000 });
    const here = world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]);
    const gone = world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]);
    plans.sync(here, 0);
    expect(plans.sync(gone, 1_000).draining).toEqual([TARGET]);
    expect(plans.sync(here, 20_000)).toMatchObject({ added: [], removed: [], draining: [] });
    expect(plans.nextDrainEndMs()).toBeUndefined();
    expect(plans.sync(gone, 40_000).draining).toEqual([TARGET]);
    expect(plans.sync(gone, 69_999).removed, 'a fresh drain, not the first one’s end').toEqual([]);
    expect(plans.sync(gone, 70_000).removed).toEqual([TARGET]);
  });

  it('drops the plan at once on reassignment when told to hold only what it is assigned (the negative control)', () => {
    const plans = new HeldPlans('a', { drainMs: 0, holdWhileNamed: false });
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]), 0);
    const moved = plans.sync(world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]), 0);
    expect(moved.removed, 'repinned to b; the target still names a, and a lets go anyway').toEqual([TARGET]);
    expect(plans.lookup(TARGET)).toMatchObject({ kind: 'none' });
  });

  it('holds nothing for a target that does not exist, or that two configs claim', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(world([config('w', { pin: 'a' })], []), 0);
    expect(plans.lookup(TARGET)).toEqual({ kind: 'none', why: `the target ${TARGET} does not exist` });
    plans.sync(world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]), 0);
    expect([...plans.servable()]).toEqual([]);
    const lookup = plans.lookup(TARGET);
    expect(lookup.kind === 'none' && lookup.why).toContain('all convert');
  });

  it('keeps the last good plan when the config stops compiling, reports it, and takes a fix', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), 0);
    const before = plans.lookup(TARGET);
    const broken = plans.sync(
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere', generation: 2 })], [gizmos()]),
      0,
    );
    expect(broken.failed).toEqual([TARGET]);
    expect(broken.removed, 'a bad edit must not take the working plan away').toEqual([]);
    expect(plans.lookup(TARGET)).toEqual(before);
    expect(plans.failures().get(TARGET)?.join(' ')).toContain('spec.nowhere');
    const fixed = plans.sync(world([config('w', { pin: 'a', generation: 3 })], [gizmos()]), 0);
    expect(fixed.failed).toEqual([]);
    expect(plans.failures().size).toBe(0);
  });

  it('serves nothing, and says why, for a config that never compiled', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const result = plans.sync(world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]), 0);
    expect(result).toEqual({ added: [], removed: [], failed: [TARGET], draining: [] });
    const lookup = plans.lookup(TARGET);
    expect(lookup.kind === 'none' && lookup.why).toMatch(/^its config does not compile: /);
  });

  it('compiles again only when the rules or the target’s versions change, never for a status write', () => {
    const plans = new HeldPlans('a', NO_DRAIN);
    const routerOf = () => {
      const found = plans.lookup(TARGET);
      return found.kind === 'plan' ? found.router : undefined;
    };
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]), 0);
    const first = routerOf();
    expect(first).toBeDefined();
    const withStatus = { ...config('w', { pin: 'a' }), status: { phase: 'Applied' as const } };
    plans.sync(world([withStatus], [gizmos(TARGET, 'a-webhook-server')]), 0);
    expect(routerOf(), 'a status write and a repoint compile nothing').toBe(first);
    plans.sync(
      world(
        [config('w', { pin: 'a', spokePath: 'spec.count', generation: 2 })],
        [gizmos(TARGET, undefined, 'count')],
      ),
      0,
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
    a.sync(world(configs, targets, pool), 0);
    b.sync(world(configs, targets, pool), 0);
    expect(a.servable().size + b.servable().size).toBe(40);
    expect([...a.servable()].filter((t) => b.servable().has(t))).toEqual([]);
    expect(a.servable().size).toBeGreaterThan(0);
    expect(b.servable().size).toBeGreaterThan(0);
  });
});
