import { describe, expect, it } from 'vitest';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import type { InstanceLike } from '../core/assignment.ts';
import { convert } from '../engine/convert.ts';
import { HeldPlans, type PlanWorld } from './plans.ts';
import { gizmoTarget, renameConfig } from './test-support.ts';

const TARGET = 'gizmos.x.io';

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
    const plans = new HeldPlans('a');
    expect(plans.sync(world([config('w', { pin: 'a' })], [gizmos()]))).toEqual({
      added: [TARGET],
      removed: [],
      failed: [],
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
    const plans = new HeldPlans('b');
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]));
    expect([...plans.servable()]).toEqual([]);
    expect(plans.lookup(TARGET)).toEqual({
      kind: 'none',
      why: 'it is assigned to a and its conversion does not name b',
    });
  });

  it('keeps serving on the losing side while the target still names its Service, and lets go once it does not', () => {
    const plans = new HeldPlans('a');
    plans.sync(world([config('w', { pin: 'a' })], [gizmos(TARGET, 'a-webhook-server')]));
    const moved = plans.sync(world([config('w', { pin: 'b' })], [gizmos(TARGET, 'a-webhook-server')]));
    expect(moved.removed, 'repinned to b, but the target still names a').toEqual([]);
    expect(plans.lookup(TARGET).kind).toBe('plan');
    const repointed = plans.sync(world([config('w', { pin: 'b' })], [gizmos(TARGET, 'b-webhook-server')]));
    expect(repointed.removed).toEqual([TARGET]);
    expect(plans.lookup(TARGET).kind).toBe('none');
  });

  it('holds nothing for a target that does not exist, or that two configs claim', () => {
    const plans = new HeldPlans('a');
    plans.sync(world([config('w', { pin: 'a' })], []));
    expect(plans.lookup(TARGET)).toEqual({ kind: 'none', why: `the target ${TARGET} does not exist` });
    plans.sync(world([config('w', { pin: 'a' }), config('v', { pin: 'a' })], [gizmos()]));
    expect([...plans.servable()]).toEqual([]);
    const lookup = plans.lookup(TARGET);
    expect(lookup.kind === 'none' && lookup.why).toContain('all convert');
  });

  it('keeps the last good plan when the config stops compiling, reports it, and takes a fix', () => {
    const plans = new HeldPlans('a');
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]));
    const before = plans.lookup(TARGET);
    const broken = plans.sync(
      world([config('w', { pin: 'a', spokePath: 'spec.nowhere', generation: 2 })], [gizmos()]),
    );
    expect(broken.failed).toEqual([TARGET]);
    expect(broken.removed, 'a bad edit must not take the working plan away').toEqual([]);
    expect(plans.lookup(TARGET)).toEqual(before);
    expect(plans.failures().get(TARGET)?.join(' ')).toContain('spec.nowhere');
    const fixed = plans.sync(world([config('w', { pin: 'a', generation: 3 })], [gizmos()]));
    expect(fixed.failed).toEqual([]);
    expect(plans.failures().size).toBe(0);
  });

  it('serves nothing, and says why, for a config that never compiled', () => {
    const plans = new HeldPlans('a');
    const result = plans.sync(world([config('w', { pin: 'a', spokePath: 'spec.nowhere' })], [gizmos()]));
    expect(result).toEqual({ added: [], removed: [], failed: [TARGET] });
    const lookup = plans.lookup(TARGET);
    expect(lookup.kind === 'none' && lookup.why).toMatch(/^its config does not compile: /);
  });

  it('compiles again only when the rules or the target’s versions change, never for a status write', () => {
    const plans = new HeldPlans('a');
    const routerOf = () => {
      const found = plans.lookup(TARGET);
      return found.kind === 'plan' ? found.router : undefined;
    };
    plans.sync(world([config('w', { pin: 'a' })], [gizmos()]));
    const first = routerOf();
    expect(first).toBeDefined();
    const withStatus = { ...config('w', { pin: 'a' }), status: { phase: 'Applied' as const } };
    plans.sync(world([withStatus], [gizmos(TARGET, 'a-webhook-server')]));
    expect(routerOf(), 'a status write and a repoint compile nothing').toBe(first);
    plans.sync(
      world(
        [config('w', { pin: 'a', spokePath: 'spec.count', generation: 2 })],
        [gizmos(TARGET, undefined, 'count')],
      ),
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
    const a = new HeldPlans('a');
    const b = new HeldPlans('b');
    a.sync(world(configs, targets, pool));
    b.sync(world(configs, targets, pool));
    expect(a.servable().size + b.servable().size).toBe(40);
    expect([...a.servable()].filter((t) => b.servable().has(t))).toEqual([]);
    expect(a.servable().size).toBeGreaterThan(0);
    expect(b.servable().size).toBeGreaterThan(0);
  });
});
