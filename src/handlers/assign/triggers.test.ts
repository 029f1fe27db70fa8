import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RecordedObject } from '../../bus/messages.ts';
import { assignSubjects, fleetOf, type Resolution, resolveIn } from '../../core/assignment.ts';
import { formatWorkKey } from '../work-keys.ts';
import { assignTriggers, type RecordedChange } from './triggers.ts';
import { type AssignWorld, configSubjectOf, instanceOf } from './world.ts';

let rv = 0;
function object(
  name: string,
  spec: Record<string, unknown>,
  status?: Record<string, unknown>,
): RecordedObject {
  rv++;
  return {
    metadata: { name, uid: `uid-${name}`, resourceVersion: String(rv) },
    spec,
    ...(status && { status }),
  };
}
const config = (name: string, target: string, pin?: string) =>
  object(name, { targetCRD: { name: target }, ...(pin && { webhookServerRef: { name: pin } }) });
const member = (name: string, extra: Record<string, unknown> = {}, weight = 1) =>
  object(name, { sharding: { enabled: true, weight }, ...extra });

function worldOf(instances: RecordedObject[], configs: RecordedObject[]): AssignWorld {
  return {
    instances: instances.map(instanceOf),
    configs: configs.map((c) => configSubjectOf('crdconfig', c)).filter((c) => c !== undefined),
  };
}
const upsert = (kind: string, o: RecordedObject): RecordedChange => ({ kind, op: 'upsert', object: o });
const keys = (ks: { kind: string; name: string }[]) => ks.map(formatWorkKey).sort();

const pool3 = [member('a', { default: true }), member('b'), member('c')];
const configs60 = Array.from({ length: 60 }, (_, i) => config(`cfg-${i}`, `widgets${i}.example.com`));

describe('config changes', () => {
  const world = worldOf(pool3, configs60);

  it('a status write or a rules edit wakes nothing (same target, same pin)', () => {
    const before = config('cfg-1', 'widgets1.example.com');
    const after = {
      ...before,
      status: { assignedWebhookServer: 'a' },
      metadata: { ...before.metadata, resourceVersion: '999' },
    };
    expect(assignTriggers(upsert('crdconfig', after), before, world)).toEqual({ now: [], paced: [] });
  });

  it('a new config wakes itself and the instance it resolves to', () => {
    const created = config('new', 'gizmos.example.com');
    const owner = resolvedOwner(world, 'gizmos.example.com');
    const t = assignTriggers(upsert('crdconfig', created), undefined, world);
    expect(keys(t.now)).toEqual(['crdconfig/new', `webhookserver/${owner}`].sort());
    expect(t.paced).toEqual([]);
  });

  it('a pin wakes the config and both the old and the new instance', () => {
    const before = config('cfg-2', 'widgets2.example.com');
    const owner = resolvedOwner(world, 'widgets2.example.com');
    const other = ['a', 'b', 'c'].find((n) => n !== owner) ?? '';
    const t = assignTriggers(
      upsert('crdconfig', config('cfg-2', 'widgets2.example.com', other)),
      before,
      world,
    );
    expect(keys(t.now)).toEqual(
      ['crdconfig/cfg-2', `webhookserver/${owner}`, `webhookserver/${other}`].sort(),
    );
  });

  it('a second config for a target wakes the first one too (it becomes a DuplicateTarget)', () => {
    const t = assignTriggers(upsert('crdconfig', config('dup', 'widgets3.example.com')), undefined, world);
    expect(keys(t.now)).toContain('crdconfig/cfg-3');
    expect(keys(t.now)).toContain('crdconfig/dup');
  });

  it('a deleted config wakes the instance that held it, not itself', () => {
    const gone = config('cfg-4', 'widgets4.example.com');
    const owner = resolvedOwner(world, 'widgets4.example.com');
    const t = assignTriggers({ kind: 'crdconfig', op: 'delete', object: gone }, gone, world);
    expect(keys(t.now)).toEqual([`webhookserver/${owner}`]);
  });
});

describe('config changes, against resolving every config', () => {
  const TARGETS = ['t0.x.io', 't1.x.io', 't2.x.io', 't3.x.io'];
  const INSTANCES = ['a', 'b', 'c'];
  const arbitraryConfig = fc.record({
    name: fc.constantFrom('c0', 'c1', 'c2', 'c3', 'c4', 'c5'),
    target: fc.constantFrom(...TARGETS),
    pin: fc.option(fc.constantFrom(...INSTANCES, 'gone'), { nil: undefined }),
  });

  it('wakes what resolving the whole world before and after would say changes', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(arbitraryConfig, { selector: (c) => c.name, maxLength: 6 }),
        arbitraryConfig,
        fc.boolean(),
        (existing, changed, deleted) => {
          const world = worldOf(
            [member('a', { default: true }), member('b', {}, 2), member('c', {}, 3)],
            existing.map((c) => config(c.name, c.target, c.pin)),
          );
          const previousSpec = existing.find((c) => c.name === changed.name);
          const previous = previousSpec && config(previousSpec.name, previousSpec.target, previousSpec.pin);
          const object = config(changed.name, changed.target, changed.pin);
          const change: RecordedChange = { kind: 'crdconfig', op: deleted ? 'delete' : 'upsert', object };
          expect(keys(assignTriggers(change, previous, world).now)).toEqual(
            keys(wokenResolvingEverything(change, previous, world)),
          );
        },
      ),
    );
  });
});

/** What a config change wakes, found by resolving every config of the world before and after it. */
function wokenResolvingEverything(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  world: AssignWorld,
): { kind: string; name: string }[] {
  const before = previous && configSubjectOf(change.kind, previous);
  const after = change.op === 'upsert' ? configSubjectOf(change.kind, change.object) : undefined;
  if (before && after && before.target === after.target && before.pinnedTo === after.pinnedTo) return [];
  const targets = new Set([before?.target, after?.target].filter((t) => t !== undefined));
  const others = world.configs.filter((c) => c.key.name !== change.object.metadata.name);
  const fleet = fleetOf(world.instances);
  const was = assignSubjects(before ? [...others, before] : others, fleet);
  const is = assignSubjects(after ? [...others, after] : others, fleet);
  const woken = others.filter((c) => targets.has(c.target)).map((c) => c.key);
  if (after) woken.push(after.key);
  const instances = new Set<string>();
  for (const target of targets)
    for (const r of [was.get(target), is.get(target)]) if (r?.ok) instances.add(r.instance);
  return [...woken, ...[...instances].map((name) => ({ kind: 'webhookserver', name }))];
}

describe('instance changes', () => {
  const world = worldOf(pool3, [...configs60, config('pinned', 'pinned.example.com', 'a')]);
  const before = resolutions(world);

  it('a replicas change (nothing the resolver reads) wakes nothing', () => {
    const prev = member('b');
    const next = member('b', { replicas: 5 });
    expect(assignTriggers(upsert('webhookserver', next), prev, world)).toEqual({ now: [], paced: [] });
  });

  it('a fourth member wakes exactly the configs it wins, paced; never a pinned one', () => {
    const d = member('d');
    const after = resolutions({ ...world, instances: [...world.instances, instanceOf(d)] });
    const won = [...after].filter(([, r]) => r.ok && r.instance === 'd').map(([t]) => t);
    expect(won.length).toBeGreaterThan(5);
    const t = assignTriggers(upsert('webhookserver', d), undefined, world);
    const expected = won.map((target) => `crdconfig/cfg-${target.match(/\d+/)?.[0]}`).sort();
    expect(keys(t.paced)).toEqual(expected);
    expect(keys(t.paced)).not.toContain('crdconfig/pinned');
    // The losers' lists and the new member's list change; nothing moves between a, b and c.
    const losers = new Set(won.map((target) => ownerIn(before, target)));
    expect(keys(t.now)).toEqual(['webhookserver/d', ...[...losers].map((n) => `webhookserver/${n}`)].sort());
  });

  it('a removed member wakes exactly what it held, paced', () => {
    const c = member('c');
    const held = [...before].filter(([, r]) => r.ok && r.instance === 'c').map(([t]) => t);
    const t = assignTriggers({ kind: 'webhookserver', op: 'delete', object: c }, c, world);
    expect(t.paced.length).toBe(held.length);
  });

  it('a weight change wakes only configs whose owner changes', () => {
    const t = assignTriggers(upsert('webhookserver', member('b', {}, 3)), member('b'), world);
    const after = resolutions({
      ...world,
      instances: world.instances.map((i) => (i.metadata.name === 'b' ? instanceOf(member('b', {}, 3)) : i)),
    });
    const moved = [...after].filter(([target, r]) => r.ok && ownerIn(before, target) !== r.instance);
    expect(t.paced.length).toBe(moved.length);
    expect(moved.every(([, r]) => r.ok && r.instance === 'b')).toBe(true);
  });

  it('creating the pinned instance wakes the pinned config; without a previous record it counts as new', () => {
    const w = worldOf([member('a', { default: true })], [config('p', 'p.example.com', 'x')]);
    const t = assignTriggers(upsert('webhookserver', object('x', {})), undefined, w);
    expect(keys(t.paced)).toEqual(['crdconfig/p']);
  });
});

function resolutions(world: AssignWorld): Map<string, Resolution> {
  return assignSubjects(world.configs, fleetOf(world.instances));
}
function ownerIn(map: Map<string, Resolution>, target: string): string | undefined {
  const r = map.get(target);
  return r?.ok ? r.instance : undefined;
}
function resolvedOwner(world: AssignWorld, target: string): string | undefined {
  const r = resolveIn(fleetOf(world.instances), { target });
  return r.ok ? r.instance : undefined;
}

describe("an instance's first ready Pod", () => {
  const world = worldOf(pool3, configs60);
  const slice = (instance: string, ready: boolean[]): RecordedObject => ({
    ...object(`${instance}-webhook-server-abc`, {}),
    metadata: {
      name: `${instance}-webhook-server-abc`,
      uid: `uid-slice-${instance}`,
      resourceVersion: String(++rv),
      labels: { 'kubernetes.io/service-name': `${instance}-webhook-server` },
    },
    endpoints: ready.map((r, i) => ({
      conditions: { ready: r },
      targetRef: { kind: 'Pod', name: `${instance}-${i}` },
    })),
  });
  const resolvedTo = (instance: string) =>
    configs60
      .map((c) => configSubjectOf('crdconfig', c))
      .filter((s) => s !== undefined && resolvedOwner(world, s.target) === instance)
      .map((s) => ({ kind: 'crdconfig', name: s?.key.name ?? '' }));

  it('wakes, paced, exactly the configs that resolve to the instance (the moves held until then)', () => {
    const t = assignTriggers(
      upsert('endpointslice', slice('b', [false, true])),
      slice('b', [false, false]),
      world,
    );
    expect(t.now).toEqual([]);
    expect(keys(t.paced)).toEqual(keys(resolvedTo('b')));
    expect(t.paced.length).toBeGreaterThan(0);
    const created = assignTriggers(upsert('endpointslice', slice('c', [true])), undefined, world);
    expect(keys(created.paced)).toEqual(keys(resolvedTo('c')));
  });

  it('a slice that had a ready Pod, one with none, or one of no instance of ours wakes nothing', () => {
    const nothing = { now: [], paced: [] };
    expect(
      assignTriggers(upsert('endpointslice', slice('b', [true, true])), slice('b', [true]), world),
    ).toEqual(nothing);
    expect(assignTriggers(upsert('endpointslice', slice('b', [false])), undefined, world)).toEqual(nothing);
    expect(assignTriggers(upsert('endpointslice', slice('zz', [true])), undefined, world)).toEqual(nothing);
    expect(
      assignTriggers({ kind: 'endpointslice', op: 'delete', object: slice('b', [true]) }, undefined, world),
    ).toEqual(nothing);
  });
});
