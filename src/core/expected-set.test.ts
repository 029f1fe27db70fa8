import { describe, expect, it } from 'vitest';
import type { InstanceLike } from './assignment.ts';
import {
  type ExpectationView,
  type ExpectedSetCache,
  expectedSets,
  sameExpectation,
  type ViewConfig,
} from './expected-set.ts';
import { decodeServedSet, encodeServedSet } from './served-set-codec.ts';

const instance = (name: string, spec: InstanceLike['spec'] = {}): InstanceLike => ({
  metadata: { name },
  spec,
});
const config = (name: string, target: string, extra: Partial<ViewConfig> = {}): ViewConfig => ({
  config: `CRDConversionConfig/${name}`,
  target,
  usable: true,
  ...extra,
});

/** a is the default, b a second instance; every listed target exists and names no Service unless given. */
function view(
  configs: ViewConfig[],
  named: Record<string, string | readonly string[] | undefined> = {},
  extraTargets: string[] = [],
): ExpectationView {
  const targets = new Map<string, readonly string[]>();
  for (const c of configs) targets.set(c.target, [named[c.target] ?? []].flat());
  for (const t of extraTargets) targets.set(t, []);
  return { configs, instances: [instance('a', { default: true }), instance('b')], targets };
}
const expectedOn = (v: ExpectationView, name: string) => [...expectedSets(v)(name).names].sort();

describe('the expected set of an instance', () => {
  it('holds what the resolver assigns to the instance', () => {
    const v = view([config('w', 'widgets.x.io'), config('g', 'gadgets.x.io')]);
    expect(expectedOn(v, 'a')).toEqual(['gadgets.x.io', 'widgets.x.io']);
    expect(expectedOn(v, 'b')).toEqual([]);
  });

  it('holds a pinned config on the instance it is pinned to, and nowhere else', () => {
    const v = view([config('w', 'widgets.x.io', { pinnedTo: 'b' })]);
    expect(expectedOn(v, 'b')).toEqual(['widgets.x.io']);
    expect(expectedOn(v, 'a')).toEqual([]);
  });

  it('holds nothing for a config pinned to a missing instance', () => {
    const v = view([config('w', 'widgets.x.io', { pinnedTo: 'gone' })]);
    expect([...expectedOn(v, 'a'), ...expectedOn(v, 'b'), ...expectedOn(v, 'gone')]).toEqual([]);
  });

  it('holds nothing for an invalid config', () => {
    expect(expectedOn(view([config('w', 'widgets.x.io', { usable: false })]), 'a')).toEqual([]);
  });

  it('holds an XRD target on the source while a CRD generated from it still names its Service, after the XRD moved', () => {
    // The XRD names b; Crossplane has not copied that into the composite CRD, which names a.
    const v = view([config('w', 'xwidgets.x.io', { pinnedTo: 'b' })], {
      'xwidgets.x.io': ['a-webhook-server', 'b-webhook-server'],
    });
    expect(expectedOn(v, 'a')).toEqual(['xwidgets.x.io']);
    expect(expectedOn(v, 'b')).toEqual(['xwidgets.x.io']);
  });

  it('holds a target on the source while the target still names its Service (hold-while-named)', () => {
    const v = view([config('w', 'widgets.x.io', { pinnedTo: 'b' })], { 'widgets.x.io': 'a-webhook-server' });
    expect(expectedOn(v, 'a')).toEqual(['widgets.x.io']);
    expect(expectedOn(v, 'b')).toEqual(['widgets.x.io']);
  });

  it('does not hold a target for the owner of a foreign Service the target names', () => {
    const v = view([config('w', 'widgets.x.io')], { 'widgets.x.io': 'legacy-converter' });
    expect(expectedOn(v, 'a')).toEqual(['widgets.x.io']);
    expect(expectedOn(v, 'b')).toEqual([]);
  });

  it('holds nothing for a config whose target does not exist yet', () => {
    const v = view([config('w', 'widgets.x.io')]);
    const noTarget = { ...v, targets: new Map<string, readonly string[]>() };
    expect(expectedOn(noTarget, 'a')).toEqual([]);
    expect(expectedOn(v, 'a')).toEqual(['widgets.x.io']);
  });

  it('holds nothing for a target two configs claim', () => {
    const v = view([
      config('w', 'widgets.x.io'),
      { ...config('x', 'widgets.x.io'), config: 'XRDConversionConfig/x' },
    ]);
    expect(expectedOn(v, 'a')).toEqual([]);
  });

  it('holds nothing for a target without a config', () => {
    expect(expectedOn(view([], {}, ['orphans.x.io']), 'a')).toEqual([]);
  });

  it('does not depend on the order of the view', () => {
    const configs = [
      config('w', 'widgets.x.io', { pinnedTo: 'b' }),
      config('g', 'gadgets.x.io'),
      config('h', 'h.x.io', { usable: false }),
    ];
    const v = view(configs, { 'gadgets.x.io': 'b-webhook-server' });
    const reversed = { ...v, configs: [...configs].reverse(), instances: [...v.instances].reverse() };
    for (const name of ['a', 'b']) expect(expectedOn(reversed, name)).toEqual(expectedOn(v, name));
  });

  it('lets the encoding replica and the decoding aggregate agree from the same view', () => {
    const configs = Array.from({ length: 3_000 }, (_, i) => config(`c${i}`, `widgets${i}.x.io`));
    const v = view(configs);
    const writer = expectedSets(v)('a');
    const served = [...writer.names].slice(10);
    const value = encodeServedSet(served, writer);
    expect(value.startsWith('v2.e.')).toBe(true);
    const decoded = decodeServedSet(value, expectedSets(v)('a'));
    expect(decoded.kind === 'set' && [...decoded.served].sort()).toEqual([...served].sort());
  });
});

describe('expected sets carried across views', () => {
  it('gives an instance whose targets did not change the same prepared set, and a new one otherwise', () => {
    const cache: ExpectedSetCache = new Map();
    const before = view([config('w', 'widgets.x.io', { pinnedTo: 'b' }), config('g', 'gadgets.x.io')]);
    const a1 = expectedSets(before, cache)('a');
    const b1 = expectedSets(before, cache)('b');
    // widgets moves from b to a: b's set changes (it still names b: hold-while-named keeps it), a's too.
    const after = view([config('w', 'widgets.x.io'), config('g', 'gadgets.x.io')], {
      'widgets.x.io': 'b-webhook-server',
    });
    const a2 = expectedSets(after, cache)('a');
    expect([...a2.names].sort()).toEqual(['gadgets.x.io', 'widgets.x.io']);
    expect(a2).not.toBe(a1);
    expect(expectedSets(after, cache)('b'), 'b still holds widgets while it is named').toBe(b1);
    const moved = view([config('w', 'widgets.x.io'), config('g', 'gadgets.x.io')]);
    expect([...expectedSets(moved, cache)('b').names]).toEqual([]);
    expect(expectedSets(moved, cache)('a')).toBe(a2);
  });

  it('forgets the sets of instances no longer in the view', () => {
    const cache: ExpectedSetCache = new Map();
    expectedSets(view([config('w', 'widgets.x.io', { pinnedTo: 'b' })]), cache)('b');
    expect(cache.has('b')).toBe(true);
    const withoutB: ExpectationView = { ...view([]), instances: [instance('a', { default: true })] };
    expectedSets(withoutB, cache);
    expect(cache.has('b')).toBe(false);
  });
});

describe('sameExpectation', () => {
  const base = () => view([config('w', 'widgets.x.io'), config('g', 'gadgets.x.io', { pinnedTo: 'b' })]);

  it('holds for equal facts in new objects', () => {
    expect(sameExpectation(base(), base())).toBe(true);
  });

  it.each([
    [
      'a config retargeted',
      (v: ExpectationView) => ({ ...v, configs: [config('w', 'other.x.io'), v.configs[1]] }),
    ],
    [
      'a config repinned',
      (v: ExpectationView) => ({
        ...v,
        configs: [config('w', 'widgets.x.io', { pinnedTo: 'a' }), v.configs[1]],
      }),
    ],
    [
      'a config turned Invalid',
      (v: ExpectationView) => ({
        ...v,
        configs: [config('w', 'widgets.x.io', { usable: false }), v.configs[1]],
      }),
    ],
    ['a config removed', (v: ExpectationView) => ({ ...v, configs: v.configs.slice(1) })],
    [
      'an instance joining the pool',
      (v: ExpectationView) => ({
        ...v,
        instances: [v.instances[0], instance('b', { sharding: { enabled: true } })],
      }),
    ],
    [
      'a pool weight',
      (v: ExpectationView) => ({
        ...v,
        instances: [instance('a', { default: true, sharding: { enabled: true, weight: 2 } }), v.instances[1]],
      }),
    ],
    [
      'a target naming another Service',
      (v: ExpectationView) => ({
        ...v,
        targets: new Map([...v.targets, ['widgets.x.io', ['b-webhook-server']]]),
      }),
    ],
    ['a target deleted', (v: ExpectationView) => ({ ...v, targets: new Map([...v.targets].slice(1)) })],
  ] as const)('does not hold after %s', (_, change) => {
    expect(sameExpectation(base(), change(base()) as ExpectationView)).toBe(false);
  });
});
