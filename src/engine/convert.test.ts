import { describe, expect, it } from 'vitest';
import { compile } from './compile.ts';
import { convert, formatConversionError } from './convert.ts';
import type { Router } from './plan.ts';
import { enumOf, obj, object, root, spec, str, versions } from './test-support.ts';

// v3 is the hub; v2 renamed size → capacity; v1 abbreviates the tier enum.
const hubSpec = { size: str(), tier: enumOf('Gold', 'Silver'), owner: str() };
const threeVersions = versions({
  v3: root(hubSpec, { phase: str() }),
  v2: root({ capacity: str(), tier: enumOf('Gold', 'Silver'), owner: str() }, { phase: str() }),
  v1: root({ size: str(), tier: enumOf('G', 'S'), owner: str() }, { phase: str() }),
});
const config = spec('v3', {
  v2: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.capacity' } }],
  v1: [
    {
      strategy: 'EnumRemap',
      enumRemap: {
        path: 'spec.tier',
        mapping: [
          { hub: 'Gold', spoke: 'G' },
          { hub: 'Silver', spoke: 'S' },
        ],
      },
    },
  ],
});

function router(): Router {
  const result = compile(config, threeVersions);
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
  return result.router;
}

const hubObject = object('v3', { size: '10', tier: 'Gold', owner: 'me' }, { status: { phase: 'Ready' } });

describe('convert', () => {
  it('returns the object unchanged when from == to', () => {
    expect(convert(router(), hubObject, 'v3', 'v3')).toEqual({ ok: true, object: hubObject });
  });

  it('goes spoke → spoke through the hub', () => {
    const v2 = object('v2', { capacity: '10', tier: 'Silver', owner: 'me' });
    expect(convert(router(), v2, 'v2', 'v1')).toEqual({
      ok: true,
      object: object('v1', { size: '10', tier: 'S', owner: 'me' }),
    });
  });

  it('rewrites apiVersion, keeps kind and metadata, passes status and identical fields through', () => {
    const result = convert(router(), hubObject, 'v3', 'v2');
    expect(result).toEqual({
      ok: true,
      object: object('v2', { capacity: '10', tier: 'Gold', owner: 'me' }, { status: { phase: 'Ready' } }),
    });
  });

  it('passes through fields the schema does not know (e.g. injected by Crossplane)', () => {
    const withUnknown = object('v3', { size: '1', compositionRef: { name: 'c' } }, { extra: [1, 2] });
    const result = convert(router(), withUnknown, 'v3', 'v2');
    expect(result).toMatchObject({
      ok: true,
      object: { spec: { compositionRef: { name: 'c' } }, extra: [1, 2] },
    });
  });

  it('never lets a stray input field at a rule-owned path reach the output', () => {
    // `capacity` is not a v3 field; only the rule may write it on v2.
    const stray = object('v3', { capacity: 'stale' });
    expect(convert(router(), stray, 'v3', 'v2')).toEqual({ ok: true, object: object('v2', {}) });
  });

  it('builds the output fresh: no object is shared with the input', () => {
    const result = convert(router(), hubObject, 'v3', 'v2');
    if (!result.ok) throw new Error(result.error.message);
    const out = result.object as typeof hubObject & { status: object };
    expect(out.metadata).not.toBe(hubObject.metadata);
    expect(out.metadata.labels).not.toBe(hubObject.metadata.labels);
    expect(out.status).not.toBe((hubObject as typeof out).status);
  });

  it('does not mutate its input (frozen input converts without a write)', () => {
    const frozen = deepFreeze(structuredClone(hubObject));
    expect(convert(router(), frozen, 'v3', 'v1').ok).toBe(true);
  });

  it('keeps an own __proto__ key as data instead of replacing the prototype', () => {
    const input = JSON.parse(
      '{"apiVersion":"example.org/v3","kind":"W","metadata":{},"spec":{"__proto__":{"x":1}}}',
    );
    const result = convert(router(), input, 'v3', 'v2');
    if (!result.ok) throw new Error(result.error.message);
    const out = result.object as { spec: object };
    expect(Object.getPrototypeOf(out.spec)).toBe(Object.prototype);
    expect(Object.hasOwn(out.spec, '__proto__')).toBe(true);
  });

  it('fails on a value a rule cannot convert, naming the object, the path and the rule', () => {
    const bad = object('v3', { tier: 'Platinum' });
    const result = convert(router(), bad, 'v3', 'v1');
    expect(result).toEqual({
      ok: false,
      error: {
        object: 'Widget team-a/w1',
        path: 'spec.tier',
        ruleIndex: 0,
        message: 'value "Platinum" has no mapping in rule 0 (EnumRemap)',
      },
    });
    if (!result.ok) {
      expect(formatConversionError(result.error, 'v3', 'v1')).toBe(
        'converting Widget team-a/w1 from v3 to v1: spec.tier: value "Platinum" has no mapping in rule 0 (EnumRemap)',
      );
    }
  });

  it('fails when a rule would have to write through a non-object value', () => {
    const nested = compile(
      spec('v2', {
        v1: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'spec.a', spokePath: 'spec.box.a' } }],
      }),
      versions({ v2: root({ a: str() }), v1: root({ box: obj({ a: str() }) }) }),
    );
    if (!nested.ok) throw new Error(JSON.stringify(nested.diagnostics));
    // `box` is not a v2 field, so the stray string passes through and blocks the write.
    const result = convert(nested.router, object('v2', { a: 'x' }, {}), 'v2', 'v1');
    expect(result.ok).toBe(true);
    const blocked = convert(
      nested.router,
      { ...object('v2', { a: 'x' }), spec: { a: 'x', box: 'oops' } },
      'v2',
      'v1',
    );
    expect(blocked).toMatchObject({ ok: false, error: { path: 'spec.box.a', ruleIndex: 0 } });
  });

  it.each([
    ['an apiVersion that is not the from version', object('v2', {}), 'v3', 'v1', 'is not version v3'],
    [
      'a missing apiVersion',
      { kind: 'Widget', metadata: { name: 'w' } },
      'v3',
      'v1',
      'apiVersion is missing',
    ],
    ['a version without a plan', hubObject, 'v3', 'v9', 'no conversion plan for version v9'],
    ['a non-object input', 'text', 'v3', 'v1', 'input is not an object'],
  ])('fails on %s', (_, input, from, to, message) => {
    const result = convert(router(), input, from, to);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.message).toContain(message);
  });
});

describe('convert always emits a metadata object (the apiserver rejects a converted object without one)', () => {
  const bare = (version: string, extra: Record<string, unknown>) => ({
    apiVersion: `example.org/${version}`,
    kind: 'Widget',
    spec: { size: '10', tier: 'Gold', owner: 'me' },
    ...extra,
  });
  it.each([
    ['metadata missing (pruned by server-side apply)', {}, {}],
    ['metadata: null', { metadata: null }, {}],
    ['metadata present', { metadata: { name: 'w', labels: { a: 'b' } } }, { name: 'w', labels: { a: 'b' } }],
    ['metadata: {}', { metadata: {} }, {}],
  ])('%s, hub → spoke, spoke → spoke and same version', (_, extra, expected) => {
    for (const [from, to] of [
      ['v3', 'v2'],
      ['v2', 'v1'],
      ['v3', 'v3'],
    ] as const) {
      const result = convert(router(), bare(from, extra), from, to);
      expect(result, `${from} → ${to}`).toMatchObject({ ok: true, object: { metadata: expected } });
    }
  });
});

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
