// The coverage walk and `sameShape` against the definitions they implement: every leaf checked
// one by one, shapes compared by a canonical signature string (the engine's own method before
// the walk). Random hub schemas, spokes derived from them so most subtrees are alike and some
// differ deep down, and random claims on either side.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Claim, uncoveredFields } from './coverage.ts';
import { isPrefixOf, joinPath, type Segments } from './paths.ts';
import { SchemaIndex, sameShape, type TargetSchema } from './schema.ts';
import { arrayOf, int, mapOf, obj, str } from './test-support.ts';

// --- the definitions

const COMBINATORS = ['oneOf', 'anyOf', 'allOf', 'not'] as const;

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical(record[k])}`)
    .join(',')}}`;
}

const named = (s: TargetSchema) => s.properties !== undefined && Object.keys(s.properties).length > 0;

/** Equal strings mean interchangeable values. */
function signature(s: TargetSchema): string {
  const flags =
    (s.nullable ? '?' : '') +
    (s['x-kubernetes-preserve-unknown-fields'] ? '*' : '') +
    (s['x-kubernetes-embedded-resource'] ? '@' : '');
  const combinators = COMBINATORS.filter((c) => s[c] !== undefined)
    .map((c) => `&${c}${canonical(s[c])}`)
    .join('');
  if (named(s)) {
    const props = s.properties as Record<string, TargetSchema>;
    const parts = Object.keys(props)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${signature(props[k] as TargetSchema)}`);
    return `${flags}{${parts.join(',')}}${combinators}`;
  }
  let base: string;
  if (s['x-kubernetes-int-or-string']) base = 'int-or-string';
  else if (s.type === 'array') base = `[${s.items ? signature(s.items) : 'any'}]`;
  else if (s.type === 'object' || s.additionalProperties !== undefined) {
    const values = s.additionalProperties;
    base =
      values === undefined || values === false
        ? 'object'
        : `map<${values === true ? 'any' : signature(values)}>`;
  } else base = `${s.type ?? 'any'}${s.format ? `(${s.format})` : ''}`;
  const enums = s.enum
    ? `=${s.enum
        .map((v) => JSON.stringify(v))
        .sort()
        .join('|')}`
    : '';
  return `${flags}${base}${enums}${combinators}`;
}

interface ModelNode {
  segments: Segments;
  schema: TargetSchema;
}

const OWNED = new Set(['apiVersion', 'kind', 'metadata']);

/** Every node by path, and the leaves depth first in key order. */
function flatten(root: TargetSchema): { nodes: Map<string, ModelNode>; leaves: ModelNode[] } {
  const nodes = new Map<string, ModelNode>();
  const leaves: ModelNode[] = [];
  const visit = (schema: TargetSchema, segments: Segments) => {
    const node = { segments, schema };
    nodes.set(joinPath(segments), node);
    const combined = COMBINATORS.some((c) => schema[c] !== undefined);
    // An object declared without fields, map values or preserved fields holds nothing to lose.
    const fieldless =
      (schema.type === 'object' || schema.properties !== undefined) &&
      !named(schema) &&
      (schema.additionalProperties === undefined || schema.additionalProperties === false) &&
      !schema['x-kubernetes-preserve-unknown-fields'] &&
      !schema['x-kubernetes-embedded-resource'] &&
      !combined;
    const opaque = !named(schema) || combined;
    if (fieldless) return;
    if (opaque) leaves.push(node);
    else
      for (const k of Object.keys(schema.properties ?? {}).sort())
        visit((schema.properties as Record<string, TargetSchema>)[k] as TargetSchema, [...segments, k]);
  };
  for (const k of Object.keys(root.properties ?? {}).sort())
    if (!OWNED.has(k)) visit((root.properties as Record<string, TargetSchema>)[k] as TargetSchema, [k]);
  return { nodes, leaves };
}

interface Finding {
  path: string;
  lost: string[];
  otherRule: number | undefined;
  why: 'the other side writes it' | 'the other side lacks it' | 'the shapes differ';
}

function modelUncovered(hub: TargetSchema, spoke: TargetSchema, claims: Record<'hub' | 'spoke', Claim[]>) {
  const sides = { hub: flatten(hub), spoke: flatten(spoke) };
  const reported = new Set<string>();
  const out: Finding[] = [];
  for (const side of ['hub', 'spoke'] as const) {
    const other = side === 'hub' ? 'spoke' : 'hub';
    for (const leaf of sides[side].leaves) {
      const path = joinPath(leaf.segments);
      if (reported.has(path) || claims[side].some((c) => isPrefixOf(c.segments, leaf.segments))) continue;
      const counterpart = sides[other].nodes.get(path);
      const otherClaim = claims[other].find((c) => isPrefixOf(c.segments, leaf.segments));
      if (counterpart && signature(counterpart.schema) === signature(leaf.schema) && !otherClaim) continue;
      reported.add(path);
      const lost =
        otherClaim || !counterpart
          ? [side === 'hub' ? 'hubToSpoke' : 'spokeToHub']
          : ['hubToSpoke', 'spokeToHub'];
      const why = otherClaim
        ? 'the other side writes it'
        : counterpart
          ? 'the shapes differ'
          : 'the other side lacks it';
      out.push({ path, lost, otherRule: otherClaim?.ruleIndex, why });
    }
  }
  return out;
}

function walked(hub: TargetSchema, spoke: TargetSchema, claims: Record<'hub' | 'spoke', Claim[]>): Finding[] {
  return uncoveredFields(new SchemaIndex(hub), new SchemaIndex(spoke), claims, 'v1').map((u) => {
    const rule = /but rule (\d+) writes it/.exec(u.diagnostic.message);
    return {
      path: joinPath(u.segments),
      lost: u.lost,
      otherRule: rule ? Number(rule[1]) : undefined,
      why: rule
        ? 'the other side writes it'
        : /but the (hub|spoke) does not/.test(u.diagnostic.message)
          ? 'the other side lacks it'
          : 'the shapes differ',
    };
  });
}

// --- random schemas

const NAMES = ['a', 'b', 'c', 'd'];

const scalar = fc.constantFrom<TargetSchema>(
  { type: 'string' },
  { type: 'integer' },
  { type: 'number' },
  { type: 'boolean' },
  { type: 'string', format: 'date-time' },
  { type: 'string', nullable: true },
  { type: 'string', enum: ['A', 'B'] },
  { type: 'string', enum: ['B', 'A'] },
  { type: 'string', enum: ['A', 'C'] },
  { 'x-kubernetes-int-or-string': true },
  { 'x-kubernetes-int-or-string': true, type: 'string' },
  { 'x-kubernetes-preserve-unknown-fields': true },
  { type: 'object' },
  { type: 'object', additionalProperties: false },
  { type: 'object', additionalProperties: true },
  { type: 'object', additionalProperties: {} },
  { type: 'array' },
  { type: 'array', items: {} },
  {},
  { type: 'string', description: 'documentation does not count', maxLength: 3 } as TargetSchema,
);

const schemaArb: fc.Arbitrary<TargetSchema> = fc.letrec<{ node: TargetSchema }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.dictionary(fc.constantFrom(...NAMES), tie('node'), { minKeys: 1, maxKeys: 4 }).map((p) => obj(p)),
    fc
      .dictionary(fc.constantFrom(...NAMES), tie('node'), { minKeys: 1, maxKeys: 3 })
      .map((p) => ({ ...obj(p), oneOf: [{ required: ['a'] }] })),
    tie('node').map((items) => arrayOf(items)),
    tie('node').map((values) => mapOf(values)),
    tie('node').map((s) => ({ ...s, nullable: true })),
  ),
})).node;

/** `schema` changed where `choices` says, a property at a time: most of it stays as it was. */
function derived(schema: TargetSchema, choices: readonly number[], replacement: TargetSchema): TargetSchema {
  let next = 0;
  const choose = () => choices[next++ % choices.length] ?? 0;
  const change = (s: TargetSchema): TargetSchema => {
    if (!s.properties) return s;
    const properties: Record<string, TargetSchema> = {};
    for (const [k, child] of Object.entries(s.properties)) {
      const c = choose() % 12;
      if (c === 0) continue; // dropped
      if (c === 1) properties[k] = replacement;
      else if (c === 2)
        properties[`${k}2`] = child; // renamed
      else properties[k] = change(child);
    }
    if (choose() % 8 === 0) properties.e = replacement; // added
    return { ...s, properties };
  };
  return change(schema);
}

const rootOf = (spec: TargetSchema, extra: TargetSchema): TargetSchema =>
  obj({ apiVersion: str(), kind: str(), metadata: { type: 'object' }, spec, status: extra });

const pairArb = fc
  .record({
    hubSpec: schemaArb,
    status: schemaArb,
    choices: fc.array(fc.nat(), { minLength: 1, maxLength: 20 }),
    replacement: scalar,
    hubPicks: fc.array(fc.nat(), { maxLength: 4 }),
    spokePicks: fc.array(fc.nat(), { maxLength: 4 }),
  })
  .map(({ hubSpec, status, choices, replacement, hubPicks, spokePicks }) => {
    const hub = rootOf(hubSpec, status);
    const spoke = derived(hub, choices, replacement);
    const claimsOf = (schema: TargetSchema, picks: number[], firstRule: number): Claim[] => {
      const paths = [...new SchemaIndex(schema).paths()];
      if (paths.length === 0) return [];
      return picks.map((p, i) => ({
        segments: (paths[p % paths.length] as string).split('.'),
        ruleIndex: firstRule + i,
      }));
    };
    return {
      hub,
      spoke,
      claims: { hub: claimsOf(hub, hubPicks, 0), spoke: claimsOf(spoke, spokePicks, 10) },
    };
  });

describe('sameShape', () => {
  it('is the same answer as comparing shape signatures', () => {
    fc.assert(
      fc.property(schemaArb, fc.array(fc.nat(), { minLength: 1 }), scalar, (a, choices, replacement) => {
        const b = derived(a, choices, replacement);
        expect(sameShape(a, b)).toBe(signature(a) === signature(b));
        expect(sameShape(a, structuredClone(a))).toBe(true);
      }),
      { numRuns: 1_000 },
    );
  }, 30_000);

  it('tells apart what the signature tells apart, among hand-picked look-alikes', () => {
    const cases: [TargetSchema, TargetSchema, boolean][] = [
      [{ type: 'array' }, { type: 'array', items: {} }, true],
      [mapOf({}), { type: 'object', additionalProperties: true }, true],
      [{ type: 'object' }, { type: 'object', additionalProperties: false }, true],
      [{ type: 'object' }, mapOf(int()), false],
      [{ type: 'string', format: '' }, str(), true],
      [{ type: 'string', enum: [] }, str(), false],
      [obj({ a: int() }), { ...obj({ a: int() }), oneOf: [{ required: ['a'] }] }, false],
      [{ ...int(), not: null }, int(), false],
    ];
    for (const [a, b, same] of cases) {
      expect(sameShape(a, b), `${JSON.stringify(a)} ~ ${JSON.stringify(b)}`).toBe(same);
      expect(signature(a) === signature(b)).toBe(same);
    }
  });
});

describe('coverage walk', () => {
  it('reports exactly what checking every leaf one by one reports, in the same order', () => {
    fc.assert(
      fc.property(pairArb, ({ hub, spoke, claims }) => {
        expect(walked(hub, spoke, claims)).toEqual(modelUncovered(hub, spoke, claims));
      }),
      { numRuns: 1_000 },
    );
  }, 30_000);

  it('finds a difference deep inside an otherwise identical subtree', () => {
    const hub = rootOf(obj({ a: obj({ b: obj({ c: str(), d: int() }) }) }), obj({}));
    const spoke = rootOf(obj({ a: obj({ b: obj({ c: str(), d: str() }) }) }), obj({}));
    expect(walked(hub, spoke, { hub: [], spoke: [] }).map((f) => f.path)).toEqual(['spec.a.b.d']);
  });

  it('walks an object declared without fields as a branch with none: the rules claiming the other side account for it', () => {
    const hub = obj({ spec: obj({ description: str() }) });
    const spoke = obj({ spec: { type: 'object', properties: {} } });
    const claimed = { hub: [{ segments: ['spec', 'description'], ruleIndex: 0 }], spoke: [] };
    expect(walked(hub, spoke, claimed)).toEqual([]);
    expect(walked(hub, spoke, { hub: [], spoke: [] }).map((f) => [f.path, f.why])).toEqual([
      ['spec.description', 'the other side lacks it'],
    ]);
  });

  it('does not let an identical subtree pass whole when the other side writes into it', () => {
    const same = () => rootOf(obj({ a: obj({ b: str(), c: str() }) }), obj({}));
    const claims = { hub: [], spoke: [{ segments: ['spec', 'a', 'c'], ruleIndex: 3 }] };
    expect(walked(same(), same(), claims)).toEqual([
      { path: 'spec.a.c', lost: ['hubToSpoke'], otherRule: 3, why: 'the other side writes it' },
    ]);
  });
});

describe('SchemaIndex', () => {
  it('finds a field whose name holds a dot, and tells a path with a missing step', () => {
    const index = new SchemaIndex(rootOf(obj({ 'example.com/x': str(), a: obj({ b: int() }) }), obj({})));
    expect(index.node('spec.example.com/x')?.segments).toEqual(['spec', 'example.com/x']);
    expect(index.node('spec.a.b')).toMatchObject({ isLeaf: true, schema: int() });
    expect(index.node('spec.a.c')).toBeUndefined();
    expect(index.node('metadata')).toBeUndefined();
    expect(index.has(['spec', 'a', 'b'], 2)).toBe(true);
    expect(index.has(['spec', 'toString'])).toBe(false);
  });
});
