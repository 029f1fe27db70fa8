import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { convert } from '../convert.ts';
import { marshalJson } from '../go-values.ts';
import type { TargetSchema } from '../schema.ts';
import { compiled, int, obj, refusal, spec, str } from '../test-support.ts';
import { isLabelValue, labelKeyProblems } from './metadata-stash.ts';

const anything: TargetSchema = { 'x-kubernetes-preserve-unknown-fields': true };

const toAnnotation = (params: Record<string, unknown>, acknowledgeLossy = true) => ({
  strategy: 'ToAnnotation',
  toAnnotation: { hubPath: 'spec.note', key: 'example.org/note', ...params },
  acknowledgeLossy,
});
const toLabel = (params: Record<string, unknown>) => ({
  strategy: 'ToLabel',
  toLabel: { hubPath: 'spec.note', key: 'tier', ...params },
  acknowledgeLossy: true,
});
const fromAnnotation = (params: Record<string, unknown>) => ({
  strategy: 'FromAnnotation',
  fromAnnotation: { spokePath: 'spec.note', key: 'example.org/note', ...params },
  acknowledgeLossy: true,
});
const fromLabel = (params: Record<string, unknown>) => ({
  strategy: 'FromLabel',
  fromLabel: { spokePath: 'spec.note', key: 'tier', ...params },
  acknowledgeLossy: true,
});

/** An object at `version`; `metadata` replaces the default (absent when undefined is given). */
function at(version: string, specFields: Record<string, unknown>, metadata?: unknown) {
  const object: Record<string, unknown> = { apiVersion: `example.org/${version}`, kind: 'Widget' };
  if (metadata !== undefined) object.metadata = metadata;
  object.spec = specFields;
  return object;
}

const hubOnly = (note: TargetSchema = anything) => ({ hub: { keep: str(), note }, spoke: { keep: str() } });
const spokeOnly = (note: TargetSchema = anything) => ({ hub: { keep: str() }, spoke: { keep: str(), note } });

describe('ToAnnotation and ToLabel', () => {
  const { hub, spoke } = hubOnly();
  const restoring = compiled(hub, spoke, [toAnnotation({ restoreOnReverse: true })]);

  it('stashes the hub field as Go marshals it, and restores it (removing the stash) on the way back', () => {
    const value = { b: [1, 2.5, null], a: '<tag> & "q"', é: true };
    const down = convert(restoring, at('v2', { keep: 'k', note: value }, { name: 'w' }), 'v2', 'v1');
    expect(down).toEqual({
      ok: true,
      object: at(
        'v1',
        { keep: 'k' },
        {
          name: 'w',
          annotations: {
            'example.org/note': '{"a":"\\u003ctag\\u003e \\u0026 \\"q\\"","b":[1,2.5,null],"é":true}',
          },
        },
      ),
    });
    const up = down.ok ? convert(restoring, down.object, 'v1', 'v2') : down;
    expect(up).toEqual({ ok: true, object: at('v2', { keep: 'k', note: value }, { name: 'w' }) });
  });

  it('is lossless both ways with restoreOnReverse, lossy both ways without', () => {
    expect(restoring.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    const stripping = compiled(hub, spoke, [toAnnotation({})]);
    expect(stripping.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    const unacknowledged = refusal(hub, spoke, [toAnnotation({}, false)]);
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/never restored from it/);
  });

  it('without restoreOnReverse strips the stash key and restores nothing', () => {
    const stripping = compiled(hub, spoke, [toAnnotation({})]);
    const up = convert(
      stripping,
      at('v1', { keep: 'k' }, { name: 'w', annotations: { 'example.org/note': '"x"', other: 'o' } }),
      'v1',
      'v2',
    );
    expect(up).toEqual({
      ok: true,
      object: at('v2', { keep: 'k' }, { name: 'w', annotations: { other: 'o' } }),
    });
  });

  it('prunes a map the removal empties, or that was empty, and metadata left empty', () => {
    const stripping = compiled(hub, spoke, [toAnnotation({})]);
    const emptied = at('v1', { keep: 'k' }, { name: 'w', annotations: { 'example.org/note': '1' } });
    expect(convert(stripping, emptied, 'v1', 'v2')).toEqual({
      ok: true,
      object: at('v2', { keep: 'k' }, { name: 'w' }),
    });
    const empty = at('v1', { keep: 'k' }, { name: 'w', annotations: {} });
    expect(convert(stripping, empty, 'v1', 'v2')).toEqual({
      ok: true,
      object: at('v2', { keep: 'k' }, { name: 'w' }),
    });
    const restored = convert(
      restoring,
      at('v1', {}, { annotations: { 'example.org/note': '1' } }),
      'v1',
      'v2',
    );
    expect(restored).toEqual({ ok: true, object: at('v2', { note: 1 }, {}) });
  });

  it('writes nothing for an absent field or entry, and stashes null as null', () => {
    expect(convert(restoring, at('v2', { keep: 'k' }, { name: 'w' }), 'v2', 'v1')).toEqual({
      ok: true,
      object: at('v1', { keep: 'k' }, { name: 'w' }),
    });
    expect(convert(restoring, at('v1', { keep: 'k' }, { name: 'w' }), 'v1', 'v2')).toEqual({
      ok: true,
      object: at('v2', { keep: 'k' }, { name: 'w' }),
    });
    const down = convert(restoring, at('v2', { note: null }), 'v2', 'v1');
    expect(down).toEqual({ ok: true, object: at('v1', {}, { annotations: { 'example.org/note': 'null' } }) });
  });

  it('with serialization String stores a string as it is, and fails on any other value', () => {
    const router = compiled(hub, spoke, [toAnnotation({ serialization: 'String', restoreOnReverse: true })]);
    const down = convert(router, at('v2', { note: 'plain <text>' }, {}), 'v2', 'v1');
    expect(down).toEqual({
      ok: true,
      object: at('v1', {}, { annotations: { 'example.org/note': 'plain <text>' } }),
    });
    const failed = convert(router, at('v2', { note: 3 }, {}), 'v2', 'v1');
    expect(failed).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/is not a string but serialization=String/) },
    });
  });

  it('fails to restore an entry that is not a string, or not JSON Go decodes', () => {
    const cases = [5, null, '[1,2', '1e400', '', 'nul'];
    for (const entry of cases) {
      const result = convert(
        restoring,
        at('v1', {}, { annotations: { 'example.org/note': entry } }),
        'v1',
        'v2',
      );
      expect(result.ok, JSON.stringify(entry)).toBe(false);
    }
    const spaced = convert(
      restoring,
      at('v1', {}, { annotations: { 'example.org/note': ' {"a":1} ' } }),
      'v1',
      'v2',
    );
    expect(spaced).toEqual({ ok: true, object: at('v2', { note: { a: 1 } }, {}) });
  });

  it('fails to stash into metadata or a map that is not an object; absent or null metadata is empty', () => {
    expect(convert(restoring, at('v2', { note: 1 }, 'text'), 'v2', 'v1').ok).toBe(false);
    expect(convert(restoring, at('v2', { note: 1 }, { annotations: null }), 'v2', 'v1').ok).toBe(false);
    expect(convert(restoring, at('v2', { note: 1 }, { annotations: 'x' }), 'v2', 'v1').ok).toBe(false);
    for (const metadata of [undefined, null]) {
      expect(convert(restoring, at('v2', { note: 1 }, metadata), 'v2', 'v1')).toEqual({
        ok: true,
        object: { ...at('v1', {}), metadata: { annotations: { 'example.org/note': '1' } } },
      });
    }
  });

  it('ToLabel checks the value against label syntax when it writes it', () => {
    const router = compiled(hub, spoke, [toLabel({ restoreOnReverse: true })]);
    expect(convert(router, at('v2', { note: 3 }, {}), 'v2', 'v1')).toEqual({
      ok: true,
      object: at('v1', {}, { labels: { tier: '3' } }),
    });
    const quoted = convert(router, at('v2', { note: 'gold' }, {}), 'v2', 'v1');
    expect(quoted).toMatchObject({
      ok: false,
      error: { message: expect.stringMatching(/label value for key tier is invalid/) },
    });
    const plain = compiled(hub, spoke, [toLabel({ serialization: 'String', restoreOnReverse: true })]);
    expect(convert(plain, at('v2', { note: 'gold' }, {}), 'v2', 'v1')).toEqual({
      ok: true,
      object: at('v1', {}, { labels: { tier: 'gold' } }),
    });
    expect(convert(plain, at('v2', { note: 'x'.repeat(64) }, {}), 'v2', 'v1').ok).toBe(false);
    expect(convert(plain, at('v1', {}, { labels: { tier: 'silver' } }), 'v1', 'v2')).toEqual({
      ok: true,
      object: at('v2', { note: 'silver' }, {}),
    });
  });

  it('refuses an invalid label key, and an undeclared hub path', () => {
    const badKey = refusal(hub, spoke, [toLabel({ key: 'Not/A/Key' })]);
    expect(badKey.map((d) => d.code)).toEqual(['InvalidValue']);
    expect(badKey[0]?.message).toMatch(/Not\/A\/Key is not a valid label key/);
    const unknown = refusal(hub, spoke, [toAnnotation({ hubPath: 'spec.nope' })]);
    expect(unknown.map((d) => d.code)).toContain('UnknownPath');
  });

  it('leaves the same path on the spoke unclaimed, so coverage reports it', () => {
    const both = refusal({ note: str() }, { note: str() }, [toAnnotation({ restoreOnReverse: true })]);
    expect(both.map((d) => d.code)).toEqual(['UnclaimedField']);
  });
});

describe('FromAnnotation and FromLabel', () => {
  const { hub, spoke } = spokeOnly();

  it('restores the spoke field from hub metadata, and stashes it back with stashOnReverse', () => {
    const router = compiled(hub, spoke, [fromAnnotation({ stashOnReverse: true })]);
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    const down = convert(
      router,
      at('v2', {}, { name: 'w', annotations: { 'example.org/note': '{"n":2}' } }),
      'v2',
      'v1',
    );
    expect(down).toEqual({ ok: true, object: at('v1', { note: { n: 2 } }, { name: 'w' }) });
    const up = down.ok ? convert(router, down.object, 'v1', 'v2') : down;
    expect(up).toEqual({
      ok: true,
      object: at('v2', {}, { name: 'w', annotations: { 'example.org/note': '{"n":2}' } }),
    });
  });

  it('without stashOnReverse drops the field and strips the key on the way up, lossy both ways', () => {
    const router = compiled(hub, spoke, [fromAnnotation({})]);
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    const up = convert(
      router,
      at('v1', { keep: 'k', note: 1 }, { name: 'w', annotations: { 'example.org/note': '2', x: 'y' } }),
      'v1',
      'v2',
    );
    expect(up).toEqual({ ok: true, object: at('v2', { keep: 'k' }, { name: 'w', annotations: { x: 'y' } }) });
  });

  it('FromLabel restores a label as a string and validates it when stashing', () => {
    const router = compiled(hub, spoke, [fromLabel({ stashOnReverse: true })]);
    expect(convert(router, at('v2', {}, { labels: { tier: '007' } }), 'v2', 'v1')).toEqual({
      ok: true,
      object: at('v1', { note: '007' }, {}),
    });
    expect(convert(router, at('v1', { note: 'a b' }, {}), 'v1', 'v2').ok).toBe(false);
    expect(convert(router, at('v1', { note: 7 }, {}), 'v1', 'v2').ok).toBe(false);
  });

  it('refuses serialization JSON for FromLabel (the API allows String only)', () => {
    expect(() => spec('v2', { v1: [fromLabel({ serialization: 'JSON' })] })).toThrow();
  });
});

describe('label syntax (IsQualifiedName, IsValidLabelValue)', () => {
  it.each([
    ['tier', true],
    ['example.org/tier', true],
    ['a.b-c_d', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    [`${'a'.repeat(253)}/x`, true],
    [`${'a'.repeat(254)}/x`, false],
    ['Example.org/x', false],
    ['/x', false],
    ['a/', false],
    ['a/b/c', false],
    ['-x', false],
    ['x_', false],
    ['bad key', false],
    ['', false],
  ])('%s is a label key: %s', (key, valid) => {
    expect(labelKeyProblems(key).length === 0).toBe(valid);
  });

  it.each([
    ['', true],
    ['gold', true],
    ['Ab.c_d-9', true],
    ['x'.repeat(63), true],
    ['x'.repeat(64), false],
    ['"gold"', false],
    ['-x', false],
    ['a b', false],
    ['é', false],
  ])('%j is a label value: %s', (value, valid) => {
    expect(isLabelValue(value)).toBe(valid);
  });
});

describe('the metadata stash properties', () => {
  const { hub, spoke } = hubOnly();
  const restoring = compiled(hub, spoke, [toAnnotation({ restoreOnReverse: true })]);
  const stashing = compiled(spokeOnly().hub, spokeOnly().spoke, [fromAnnotation({ stashOnReverse: true })]);
  const typed = compiled({ keep: str(), note: obj({ n: int() }) }, { keep: str() }, [
    toAnnotation({ restoreOnReverse: true }),
  ]);
  // An empty annotations map is pruned by a restore, as in the reference: generated non-empty.
  const metadata = fc.record(
    {
      name: fc.string(),
      annotations: fc.dictionary(fc.string(), fc.string(), { minKeys: 1 }),
      labels: fc.dictionary(fc.string(), fc.string()),
    },
    { requiredKeys: [] },
  );
  const withoutKey = (m: { annotations?: Record<string, string> }) => {
    if (m.annotations) delete m.annotations['example.org/note'];
    if (m.annotations && Object.keys(m.annotations).length === 0) delete m.annotations;
    return m;
  };

  it('hub → spoke → hub restores the field, whatever JSON it holds', () => {
    fc.assert(
      fc.property(fc.option(fc.jsonValue(), { nil: undefined }), metadata, (note, m) => {
        const fields = note === undefined ? { keep: 'k' } : { keep: 'k', note };
        const original = at('v2', fields, withoutKey(m));
        const there = convert(restoring, original, 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(restoring, there.object, 'v1', 'v2')).toEqual({
          ok: true,
          object: original,
        });
      }),
    );
  });

  it('spoke → hub → spoke restores a stash in the form the hub writes it', () => {
    fc.assert(
      fc.property(fc.option(fc.jsonValue(), { nil: undefined }), metadata, (note, m) => {
        const meta: Record<string, unknown> = withoutKey(m);
        if (note !== undefined) {
          meta.annotations = { ...(meta.annotations as object), 'example.org/note': marshalJson(note) };
        }
        const original = at('v1', { keep: 'k' }, meta);
        const there = convert(restoring, original, 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        const back = convert(restoring, there.object, 'v2', 'v1');
        expect(back.ok).toBe(true);
        // Go deletes metadata the restore empties; the converted object gets `{}` back.
        const expected = Object.keys(meta).length === 0 ? { ...original, metadata: {} } : original;
        if (back.ok) expect(back.object).toEqual(expected);
      }),
    );
  });

  it('FromAnnotation with stashOnReverse round-trips both ways', () => {
    fc.assert(
      fc.property(fc.option(fc.jsonValue(), { nil: undefined }), metadata, (note, m) => {
        const fields = note === undefined ? { keep: 'k' } : { keep: 'k', note };
        const original = at('v1', fields, withoutKey(m));
        const there = convert(stashing, original, 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(stashing, there.object, 'v2', 'v1')).toEqual({
          ok: true,
          object: original,
        });
      }),
    );
  });

  it('converts any metadata and any field value without throwing', () => {
    const junk = fc.oneof(fc.jsonValue(), fc.string(), fc.constant(null));
    const anyMetadata = fc.oneof(
      junk,
      fc.record({
        annotations: fc.oneof(junk, fc.dictionary(fc.constantFrom('example.org/note', 'x'), junk)),
      }),
      fc.record({ labels: fc.oneof(junk, fc.dictionary(fc.constantFrom('tier', 'x'), junk)) }),
    );
    const routers = [restoring, typed, compiled(hub, spoke, [toLabel({})]), stashing];
    fc.assert(
      fc.property(fc.constantFrom(...routers), anyMetadata, junk, fc.boolean(), (router, m, note, down) => {
        const result = down
          ? convert(router, at('v2', { note }, m), 'v2', 'v1')
          : convert(router, at('v1', { note }, m), 'v1', 'v2');
        expect(typeof result.ok).toBe('boolean');
      }),
    );
  });
});
