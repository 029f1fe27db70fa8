import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import { arrayOf, compiled, int, mapOf, obj, object, refusal, specOf, str } from '../test-support.ts';
import { compareUtf8 } from './array-map-key.ts';

const openMap: TargetSchema = { type: 'object', additionalProperties: true };
const endpoint = obj({ name: str(), url: str() });
const endpointValue = obj({ url: str() });

const toMap = (hubPath: string, spokePath: string, keyField = 'name') => ({
  strategy: 'ArrayToMapByKey',
  arrayToMapByKey: { hubPath, spokePath, keyField },
  acknowledgeLossy: true,
});
const toArray = (hubPath: string, spokePath: string, keyField = 'name') => ({
  strategy: 'MapToArrayByKey',
  mapToArrayByKey: { hubPath, spokePath, keyField },
  acknowledgeLossy: true,
});

// The docs' examples: the hub's endpoints array is the spoke's endpoints map, the hub's
// limitsByTier map is the spoke's tierLimits array.
const tier = obj({ tier: str(), limit: str() });
const docs = compiled(
  { endpoints: arrayOf(endpoint), limitsByTier: mapOf(obj({ limit: str() })) },
  { endpoints: mapOf(endpointValue), tierLimits: arrayOf(tier) },
  [toMap('spec.endpoints', 'spec.endpoints'), toArray('spec.limitsByTier', 'spec.tierLimits', 'tier')],
);

describe('ArrayToMapByKey and MapToArrayByKey', () => {
  it('keys the array by keyField, leaving it out of the values, and lists the map sorted by key', () => {
    const down = convert(
      docs,
      object('v2', {
        endpoints: [{ name: 'web', url: 'https://web' }],
        limitsByTier: { silver: { limit: '500' }, gold: { limit: '1000' } },
      }),
      'v2',
      'v1',
    );
    expect(specOf(down)).toEqual({
      endpoints: { web: { url: 'https://web' } },
      tierLimits: [
        { tier: 'gold', limit: '1000' },
        { tier: 'silver', limit: '500' },
      ],
    });
    const up = convert(
      docs,
      object('v1', {
        endpoints: { b: { url: 'B' }, a: { url: 'A' } },
        tierLimits: [{ tier: 'x', limit: '1' }],
      }),
      'v1',
      'v2',
    );
    expect(specOf(up)).toEqual({
      endpoints: [
        { name: 'a', url: 'A' },
        { name: 'b', url: 'B' },
      ],
      limitsByTier: { x: { limit: '1' } },
    });
  });

  it('counts array → map lossy (the array comes back sorted), map → array lossless: the reference charges the other direction', () => {
    const arrayOnHub = compiled({ e: arrayOf(endpoint) }, { e: mapOf(endpointValue) }, [
      toMap('spec.e', 'spec.e'),
    ]);
    expect(arrayOnHub.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: true });
    const mapOnHub = compiled({ e: mapOf(endpointValue) }, { e: arrayOf(endpoint) }, [
      toArray('spec.e', 'spec.e'),
    ]);
    expect(mapOnHub.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: false });
    const unacknowledged = refusal({ e: arrayOf(endpoint) }, { e: mapOf(endpointValue) }, [
      { ...toMap('spec.e', 'spec.e'), acknowledgeLossy: false },
    ]);
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/converting hub → spoke.*sorted by it/);
  });

  it('fails on a duplicate, missing or non-string key, and on elements or values that are not objects', () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ endpoints: [{ name: 'a' }, { name: 'a' }] }, /spec\.endpoints has the key "a" twice/],
      [{ endpoints: [{ url: 'u' }] }, /element 0 of spec\.endpoints has no key field name/],
      [
        { endpoints: [{ name: 'a' }, { name: 1 }] },
        /element 1 of spec\.endpoints: key field name is not a string/,
      ],
      [{ endpoints: [{ name: null }] }, /key field name is not a string/],
      [{ endpoints: ['a'] }, /element 0 of spec\.endpoints is not an object/],
      [{ endpoints: [null] }, /element 0 of spec\.endpoints is not an object/],
      [{ endpoints: { a: {} } }, /spec\.endpoints is not an array/],
      [{ endpoints: null }, /spec\.endpoints is not an array/],
      [{ limitsByTier: { a: 'x' } }, /spec\.limitsByTier\["a"\] is not an object/],
      [{ limitsByTier: { a: null } }, /is not an object/],
      [{ limitsByTier: [] }, /spec\.limitsByTier is not an object/],
    ];
    for (const [fields, message] of cases) {
      expect(convert(docs, object('v2', fields), 'v2', 'v1')).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(message) },
      });
    }
  });

  it('writes an empty map or array for an empty one, and nothing for an absent one', () => {
    expect(specOf(convert(docs, object('v2', { endpoints: [], limitsByTier: {} }), 'v2', 'v1'))).toEqual({
      endpoints: {},
      tierLimits: [],
    });
    expect(specOf(convert(docs, object('v2', {}), 'v2', 'v1'))).toEqual({});
  });

  it("lets a value's own keyField override its key, as the reference does", () => {
    const router = compiled(
      { e: openMap },
      { e: arrayOf({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true }) },
      [toArray('spec.e', 'spec.e')],
    );
    expect(specOf(convert(router, object('v2', { e: { a: { name: 'b', x: 1 } } }), 'v2', 'v1'))).toEqual({
      e: [{ name: 'b', x: 1 }],
    });
  });

  it('sorts keys byte-wise, as Go does (code points above U+FFFF after U+E000–U+FFFF)', () => {
    const keys = ['b', '\u{1F600}', '\uFF21', 'a', 'B', '', '\u00e9'];
    expect([...keys].sort(compareUtf8)).toEqual(['', 'B', 'a', 'b', '\u00e9', '\uFF21', '\u{1F600}']);
    const utf8 = (s: string) => Buffer.from(s, 'utf8');
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.string({ unit: 'grapheme' }), (a, b) => {
        expect(Math.sign(compareUtf8(a, b))).toBe(Math.sign(Buffer.compare(utf8(a), utf8(b))));
      }),
    );
  });

  it('converts large arrays and maps', () => {
    const endpoints = Array.from({ length: 5000 }, (_, i) => ({
      name: `e${String(i).padStart(5, '0')}`,
      url: `u${i}`,
    }));
    const there = convert(docs, object('v2', { endpoints }), 'v2', 'v1');
    const back = there.ok ? convert(docs, there.object, 'v1', 'v2') : there;
    expect(specOf(back)).toEqual({ endpoints });
  });

  it('refuses unknown paths', () => {
    const diagnostics = refusal({ e: arrayOf(endpoint) }, { e: mapOf(endpointValue) }, [
      toMap('spec.x', 'spec.e'),
    ]);
    expect(diagnostics.map((d) => d.code)).toEqual(['UnknownPath']);
  });

  it('refuses an array side that is not an array of objects', () => {
    const notArray = refusal({ e: endpoint }, { e: openMap }, [toMap('spec.e', 'spec.e')]);
    expect(notArray[0]?.message).toMatch(
      /needs an array of objects on the hub, but hub spec\.e is an object/,
    );
    const ofStrings = refusal({ e: openMap }, { e: arrayOf(str()) }, [toArray('spec.e', 'spec.e')]);
    expect(ofStrings[0]?.message).toMatch(/the elements of spoke spec\.e are string/);
  });

  it('refuses a keyField the elements do not declare, or declare as other than a string', () => {
    const missing = refusal({ e: arrayOf(endpoint) }, { e: openMap }, [toMap('spec.e', 'spec.e', 'id')]);
    expect(missing.map((d) => d.code)).toEqual(['UnknownPath']);
    expect(missing[0]?.message).toMatch(/declare no field id/);
    const numbered = refusal({ e: arrayOf(obj({ id: int(), url: str() })) }, { e: openMap }, [
      toMap('spec.e', 'spec.e', 'id'),
    ]);
    expect(numbered[0]?.message).toMatch(/Map keys are strings, but the keyField id .* is integer/);
  });

  it('refuses a map side that is not a free-form map', () => {
    const diagnostics = refusal({ e: arrayOf(endpoint) }, { e: endpointValue }, [toMap('spec.e', 'spec.e')]);
    expect(diagnostics[0]?.message).toMatch(/needs a free-form map on the spoke/);
  });

  it('refuses map values of another shape than the elements without keyField', () => {
    const diagnostics = refusal({ e: arrayOf(endpoint) }, { e: mapOf(endpoint) }, [
      toMap('spec.e', 'spec.e'),
    ]);
    expect(diagnostics.map((d) => d.code)).toEqual(['ShapeMismatch']);
    expect(diagnostics[0]?.message).toMatch(/without name are an object with fields/);
  });
});

describe('ArrayToMapByKey and MapToArrayByKey properties', () => {
  const router = compiled({ e: arrayOf(endpoint) }, { e: mapOf(endpointValue) }, [toMap('spec.e', 'spec.e')]);
  const values = fc.dictionary(fc.string(), fc.record({ url: fc.string() }, { requiredKeys: [] }), {
    maxKeys: 50,
  });

  it('spoke → hub → spoke restores every map (spoke → hub is the lossless direction)', () => {
    fc.assert(
      fc.property(fc.record({ e: values }, { requiredKeys: [] }), (fields) => {
        const there = convert(router, object('v1', fields), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v2', 'v1')).toEqual({ ok: true, object: object('v1', fields) });
      }),
    );
  });

  it('hub → spoke → hub restores every array up to order: it comes back sorted by key', () => {
    fc.assert(
      fc.property(values, (map) => {
        const sorted = Object.keys(map)
          .sort(compareUtf8)
          .map((name) => ({ name, ...map[name] }));
        const shuffled = [...sorted].reverse();
        const there = convert(router, object('v2', { e: shuffled }), 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v1', 'v2')).toEqual({
          ok: true,
          object: object('v2', { e: sorted }),
        });
      }),
    );
  });

  it('converts any JSON in either direction without throwing', () => {
    const anyValue = fc.oneof(
      fc.jsonValue(),
      fc.array(fc.oneof(fc.jsonValue(), fc.record({ name: fc.jsonValue(), url: fc.jsonValue() })), {
        maxLength: 300,
      }),
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 300 }),
    );
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom('e', 'other'), anyValue), fc.boolean(), (fields, down) => {
        const result = down
          ? convert(router, object('v2', fields), 'v2', 'v1')
          : convert(router, object('v1', fields), 'v1', 'v2');
        expect(typeof result.ok).toBe('boolean');
      }),
    );
  });
});
