import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import { arrayOf, compiled, int, obj, object, refusal, specOf, str } from '../test-support.ts';

const zone = obj({ name: str(), size: int() });
/** An array schema with maxItems, which TargetSchema leaves out but a CRD's schema carries. */
const atMostOne = (items: TargetSchema, maxItems = 1): TargetSchema =>
  Object.assign(arrayOf(items), { maxItems });

const toObject = (hubPath: string, spokePath: string) => ({
  strategy: 'SingletonArrayToObject',
  singletonArrayToObject: { hubPath, spokePath },
});
const toArray = (hubPath: string, spokePath: string) => ({
  strategy: 'ObjectToSingletonArray',
  objectToSingletonArray: { hubPath, spokePath },
});

// Both strategies in one plan: the hub's zones (at most one) are the spoke's zone, the hub's
// primary is the spoke's regions (at most one).
const bounded = compiled({ zones: atMostOne(zone), primary: zone }, { zone, regions: atMostOne(zone) }, [
  toObject('spec.zones', 'spec.zone'),
  toArray('spec.primary', 'spec.regions'),
]);

describe('SingletonArrayToObject and ObjectToSingletonArray', () => {
  it('takes the first element one way and wraps the object the other', () => {
    const down = convert(
      bounded,
      object('v2', { zones: [{ name: 'a', size: 1 }], primary: { name: 'p', size: 2 } }),
      'v2',
      'v1',
    );
    expect(specOf(down)).toEqual({ zone: { name: 'a', size: 1 }, regions: [{ name: 'p', size: 2 }] });
    const up = convert(bounded, object('v1', { zone: { name: 'b' }, regions: [{ name: 'r' }] }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ zones: [{ name: 'b' }], primary: { name: 'r' } });
  });

  it('is lossless both ways where the array allows at most one element (maxItems 1 or 0)', () => {
    expect(bounded.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    const empty = compiled({ zones: atMostOne(zone, 0) }, { zone }, [toObject('spec.zones', 'spec.zone')]);
    expect(empty.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('without maxItems, loses the other elements towards the object, and needs acknowledging', () => {
    const rules = [
      { ...toObject('spec.zones', 'spec.zone'), acknowledgeLossy: true },
      { ...toArray('spec.primary', 'spec.regions'), acknowledgeLossy: true },
    ];
    const router = compiled({ zones: arrayOf(zone), primary: zone }, { zone, regions: arrayOf(zone) }, rules);
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    const down = convert(router, object('v2', { zones: [{ name: 'a' }, { name: 'b' }] }), 'v2', 'v1');
    expect(specOf(down)).toEqual({ zone: { name: 'a' } });
    const up = convert(router, object('v1', { regions: [{ name: 'x' }, { name: 'y' }] }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ primary: { name: 'x' } });

    const toObjectOnly = compiled({ zones: arrayOf(zone) }, { zone }, [rules[0]]);
    expect(toObjectOnly.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: true });
    const toArrayOnly = compiled({ primary: zone }, { regions: arrayOf(zone) }, [rules[1]]);
    expect(toArrayOnly.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: false });

    const unacknowledged = refusal({ zones: arrayOf(zone) }, { zone }, [toObject('spec.zones', 'spec.zone')]);
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/spec\.zones may hold more than one element/);
  });

  it('carries scalar elements as the reference test does', () => {
    const router = compiled({ replicas: atMostOne(str()) }, { replica: str() }, [
      toObject('spec.replicas', 'spec.replica'),
    ]);
    expect(specOf(convert(router, object('v2', { replicas: ['r1'] }), 'v2', 'v1'))).toEqual({
      replica: 'r1',
    });
    expect(specOf(convert(router, object('v1', { replica: 'r1' }), 'v1', 'v2'))).toEqual({
      replicas: ['r1'],
    });
  });

  it('writes nothing for an absent, empty, null or non-array array, as the reference does', () => {
    for (const zones of [undefined, [], null, 'a', { name: 'a' }]) {
      const fields = zones === undefined ? {} : { zones };
      expect(specOf(convert(bounded, object('v2', fields), 'v2', 'v1'))).toEqual({});
    }
    expect(specOf(convert(bounded, object('v2', { zones: [null] }), 'v2', 'v1'))).toEqual({ zone: null });
  });

  it('wraps whatever the object side holds, null included', () => {
    expect(specOf(convert(bounded, object('v2', { primary: null }), 'v2', 'v1'))).toEqual({
      regions: [null],
    });
    expect(specOf(convert(bounded, object('v2', { primary: 'p' }), 'v2', 'v1'))).toEqual({ regions: ['p'] });
  });

  it('does not restore an empty array: the reference converts [] to nothing yet counts it lossless', () => {
    const there = convert(bounded, object('v2', { zones: [] }), 'v2', 'v1');
    const back = there.ok ? convert(bounded, there.object, 'v1', 'v2') : there;
    expect(specOf(back)).toEqual({});
  });

  it('refuses unknown paths', () => {
    const diagnostics = refusal({ zones: atMostOne(zone) }, { zone }, [toObject('spec.zone', 'spec.zones')]);
    expect(diagnostics.map((d) => d.code)).toEqual(['UnknownPath', 'UnknownPath']);
  });

  it('refuses an array side that is not an array', () => {
    const diagnostics = refusal({ zones: zone }, { zone }, [toObject('spec.zones', 'spec.zone')]);
    expect(diagnostics.map((d) => d.code)).toEqual(['ShapeMismatch']);
    expect(diagnostics[0]?.message).toMatch(/needs an array on the hub, but hub spec\.zones is an object/);
    const mirrored = refusal({ primary: zone }, { regions: zone }, [toArray('spec.primary', 'spec.regions')]);
    expect(mirrored[0]?.message).toMatch(/needs an array on the spoke/);
  });

  it('refuses items and object of different shapes', () => {
    const diagnostics = refusal({ zones: atMostOne(zone) }, { zone: obj({ name: str() }) }, [
      toObject('spec.zones', 'spec.zone'),
    ]);
    expect(diagnostics.map((d) => d.code)).toEqual(['ShapeMismatch']);
    expect(diagnostics[0]?.message).toMatch(/the element moves unchanged/);
  });
});

describe('SingletonArrayToObject and ObjectToSingletonArray properties', () => {
  const zoneValue = fc.record({ name: fc.string(), size: fc.integer() }, { requiredKeys: [] });

  it('hub → spoke → hub restores every non-empty hub object (lossless)', () => {
    const hubSpec = fc.record(
      { zones: fc.array(zoneValue, { minLength: 1, maxLength: 1 }), primary: zoneValue },
      {
        requiredKeys: [],
      },
    );
    fc.assert(
      fc.property(hubSpec, (fields) => {
        const there = convert(bounded, object('v2', fields), 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(bounded, there.object, 'v1', 'v2')).toEqual({
          ok: true,
          object: object('v2', fields),
        });
      }),
    );
  });

  it('spoke → hub → spoke restores every spoke object (lossless)', () => {
    const spokeSpec = fc.record(
      { zone: zoneValue, regions: fc.array(zoneValue, { minLength: 1, maxLength: 1 }) },
      {
        requiredKeys: [],
      },
    );
    fc.assert(
      fc.property(spokeSpec, (fields) => {
        const there = convert(bounded, object('v1', fields), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(bounded, there.object, 'v2', 'v1')).toEqual({
          ok: true,
          object: object('v1', fields),
        });
      }),
    );
  });

  it('converts any JSON in either direction without throwing', () => {
    const anyValue = fc.oneof(fc.jsonValue(), fc.array(fc.jsonValue(), { maxLength: 300 }));
    const anySpec = fc.dictionary(fc.constantFrom('zones', 'primary', 'zone', 'regions', 'other'), anyValue);
    fc.assert(
      fc.property(anySpec, fc.boolean(), (fields, down) => {
        const result = down
          ? convert(bounded, object('v2', fields), 'v2', 'v1')
          : convert(bounded, object('v1', fields), 'v1', 'v2');
        expect(typeof result.ok).toBe('boolean');
      }),
    );
  });
});
