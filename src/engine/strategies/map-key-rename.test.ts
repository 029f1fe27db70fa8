import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rule } from '../../api/rules.ts';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import { compiled, int, mapOf, obj, object, refusal, root, specOf, str, versions } from '../test-support.ts';

const openMap: TargetSchema = { type: 'object', additionalProperties: true };

const rename = (renames: Record<string, string>, hubPath = 'spec.labels', spokePath = 'spec.labels') => ({
  strategy: 'MapKeyRename',
  mapKeyRename: { hubPath, spokePath, renames },
});

const labels = { labels: mapOf(str()) };
const docs = compiled(labels, labels, [rename({ app: 'application' })]);

describe('MapKeyRename', () => {
  it('renames the known keys and keeps the others, both ways', () => {
    const down = convert(docs, object('v2', { labels: { app: 'widget', region: 'us-east-1' } }), 'v2', 'v1');
    expect(specOf(down)).toEqual({ labels: { application: 'widget', region: 'us-east-1' } });
    const up = convert(docs, object('v1', { labels: { application: 'w', keep: 'yes' } }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ labels: { app: 'w', keep: 'yes' } });
  });

  it('is lossless both ways', () => {
    expect(docs.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('moves the map where the paths differ, and renames in chains', () => {
    const router = compiled({ tags: openMap }, { labels: openMap }, [
      rename({ a: 'b', b: 'c' }, 'spec.tags'),
    ]);
    const down = convert(router, object('v2', { tags: { a: 1, b: { x: 2 } } }), 'v2', 'v1');
    expect(specOf(down)).toEqual({ labels: { b: 1, c: { x: 2 } } });
    const up = convert(router, object('v1', { labels: { b: 1, c: 2, d: 3 } }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ tags: { a: 1, b: 2, d: 3 } });
  });

  it('fails when two keys land on one name, or the map is not an object', () => {
    const collision = convert(docs, object('v2', { labels: { app: 'a', application: 'b' } }), 'v2', 'v1');
    expect(collision).toMatchObject({
      ok: false,
      error: {
        path: 'spec.labels',
        message: expect.stringMatching(/two keys of spec\.labels become the key "application"/),
      },
    });
    for (const value of [null, 'x', ['a']]) {
      expect(convert(docs, object('v1', { labels: value }), 'v1', 'v2')).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(/spec\.labels is not an object/) },
      });
    }
  });

  it('writes nothing for an absent map, and an empty map for an empty one', () => {
    expect(specOf(convert(docs, object('v2', {}), 'v2', 'v1'))).toEqual({});
    expect(specOf(convert(docs, object('v2', { labels: {} }), 'v2', 'v1'))).toEqual({ labels: {} });
  });

  it('does not restore a key that spells a destination without its source, as in the reference', () => {
    const there = convert(docs, object('v2', { labels: { application: 'w' } }), 'v2', 'v1');
    expect(specOf(there)).toEqual({ labels: { application: 'w' } });
    const back = there.ok ? convert(docs, there.object, 'v1', 'v2') : there;
    expect(specOf(back)).toEqual({ labels: { app: 'w' } });
  });

  it('carries the map over unchanged where a `when` does not match, if both sides declare it alike', () => {
    const router = compiled({ ...labels, mode: str() }, { ...labels, mode: str() }, [
      { ...rename({ app: 'application' }), when: { path: 'spec.mode', equals: 'new' } },
    ]);
    expect(specOf(convert(router, object('v2', { mode: 'old', labels: { app: 'a' } }), 'v2', 'v1'))).toEqual({
      mode: 'old',
      labels: { app: 'a' },
    });
    expect(specOf(convert(router, object('v2', { mode: 'new', labels: { app: 'a' } }), 'v2', 'v1'))).toEqual({
      mode: 'new',
      labels: { application: 'a' },
    });
  });

  it('accepts maps that preserve unknown fields', () => {
    const preserved: TargetSchema = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
    const router = compiled({ labels: preserved }, labels, [rename({ app: 'application' })]);
    expect(specOf(convert(router, object('v2', { labels: { app: 'a' } }), 'v2', 'v1'))).toEqual({
      labels: { application: 'a' },
    });
  });

  it('refuses unknown paths', () => {
    const diagnostics = refusal(labels, labels, [rename({ a: 'b' }, 'spec.label')]);
    expect(diagnostics.map((d) => d.code)).toEqual(['UnknownPath']);
  });

  it('refuses a side that is not a free-form map', () => {
    for (const schema of [obj({ app: str() }), str(), { type: 'object' } as TargetSchema]) {
      const diagnostics = refusal({ labels: schema }, labels, [rename({ app: 'application' })]);
      expect(diagnostics[0]?.message).toMatch(/needs a free-form map on the hub/);
    }
  });

  it('refuses renames that are empty, have an empty key, or are not one-to-one', () => {
    // The API refuses an empty table; compile also sees rules that never went through it.
    const unparsed = compile(
      { hubVersion: 'v2', spokes: [{ version: 'v1', rules: [rename({}) as unknown as Rule] }] },
      versions({ v2: root(labels), v1: root(labels) }),
    );
    expect(unparsed.ok ? [] : unparsed.diagnostics.map((d) => d.message)).toEqual(['renames lists no key.']);
    const empty = refusal(labels, labels, [rename({ '': 'x', a: 'b' })]);
    expect(empty.map((d) => d.message)).toEqual(['renames maps "" to "x"; rename keys must be non-empty.']);
    const emptyTarget = refusal(labels, labels, [rename({ a: '' })]);
    expect(emptyTarget[0]?.message).toMatch(/rename keys must be non-empty/);
    const twoToOne = refusal(labels, labels, [rename({ a: 'x', b: 'x' })]);
    expect(twoToOne.map((d) => d.message)).toEqual([
      'renames maps both "a" and "b" to the spoke key "x", so the way back could not tell them apart.',
    ]);
  });

  it('refuses maps declaring values of different shapes', () => {
    const diagnostics = refusal({ labels: mapOf(int()) }, labels, [rename({ a: 'b' })]);
    expect(diagnostics.map((d) => d.code)).toEqual(['ShapeMismatch']);
  });
});

describe('MapKeyRename properties', () => {
  const renames = { app: 'application', a: 'b', b: 'c', tier: 'level' };
  const router = compiled({ labels: openMap }, { labels: openMap }, [rename(renames)]);
  // A key that spells a destination without being renamed itself does not come back (see above):
  // the round trips draw keys from the others.
  const hubKey = fc.oneof(fc.constantFrom('app', 'a', 'b', 'tier', 'x'), fc.string());
  const spokeKey = fc.oneof(fc.constantFrom('application', 'b', 'c', 'level', 'x'), fc.string());
  const map = (key: fc.Arbitrary<string>, excluded: Set<string>) =>
    fc.dictionary(
      key.filter((k) => !excluded.has(k)),
      fc.jsonValue(),
      { maxKeys: 100 },
    );
  const destinationsOnly = new Set(['application', 'c', 'level']);
  const sourcesOnly = new Set(['app', 'a', 'tier']);

  it('hub → spoke → hub restores every map (lossless)', () => {
    fc.assert(
      fc.property(fc.record({ labels: map(hubKey, destinationsOnly) }, { requiredKeys: [] }), (fields) => {
        const there = convert(router, object('v2', fields), 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v1', 'v2')).toEqual({ ok: true, object: object('v2', fields) });
      }),
    );
  });

  it('spoke → hub → spoke restores every map (lossless)', () => {
    fc.assert(
      fc.property(fc.record({ labels: map(spokeKey, sourcesOnly) }, { requiredKeys: [] }), (fields) => {
        const there = convert(router, object('v1', fields), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v2', 'v1')).toEqual({ ok: true, object: object('v1', fields) });
      }),
    );
  });

  it('converts any JSON in either direction without throwing', () => {
    const anyValue = fc.oneof(
      fc.jsonValue(),
      fc.dictionary(fc.oneof(hubKey, spokeKey), fc.jsonValue(), { maxKeys: 300 }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom('labels', 'other'), anyValue),
        fc.boolean(),
        (fields, down) => {
          const result = down
            ? convert(router, object('v2', fields), 'v2', 'v1')
            : convert(router, object('v1', fields), 'v1', 'v2');
          expect(typeof result.ok).toBe('boolean');
        },
      ),
    );
  });
});
