import { describe, expect, it } from 'vitest';
import type { InstanceLike } from './assignment.ts';
import { type ExpectationView, expectedSets, type ViewConfig } from './expected-set.ts';
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
  named: Record<string, string | undefined> = {},
  extraTargets: string[] = [],
): ExpectationView {
  const targets = new Map<string, string | undefined>();
  for (const c of configs) targets.set(c.target, named[c.target]);
  for (const t of extraTargets) targets.set(t, undefined);
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
    const noTarget = { ...v, targets: new Map<string, string | undefined>() };
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
