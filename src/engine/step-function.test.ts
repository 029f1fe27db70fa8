// The generated step against a model that walks the plan as data (the engine's interpreter
// before steps were generated), on random plans and objects whose keys include every kind that
// could break generated source or an object's prototype.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { EnumValue } from '../api/rules.ts';
import { deepCopy, deepEqual, isJsonObject, type JsonObject, setOwn } from './json.ts';
import { joinPath, type Segments } from './paths.ts';
import {
  type Direction,
  enumTable,
  type OmitBranch,
  type OmitTree,
  type Op,
  omitEntries,
  remappedValue,
  type SpokePlan,
} from './plan.ts';
import { type StepResult, stepFunction, type Take } from './step-function.ts';

function modelStep(omit: OmitTree, ops: readonly Op[], input: JsonObject, apiVersion: string, take: Take) {
  const output = modelCopy(input, omit, take);
  output.apiVersion = apiVersion;
  for (const op of ops) {
    const skipped = op.when !== undefined && !deepEqual(readPath(input, op.when.segments), op.when.equals);
    const problem = skipped ? modelCarry(op, input, output, take) : modelOp(op, input, output, take);
    if (problem) return { ok: false, ...problem, ruleIndex: op.ruleIndex };
  }
  return { ok: true, object: output };
}

function modelCopy(source: JsonObject, omit: OmitTree, take: Take): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(source)) {
    const skip = omitEntries(omit).find(([claimed]) => claimed === key)?.[1];
    if (skip === null) continue;
    const value = source[key];
    if (skip === undefined || !isJsonObject(value)) {
      setOwn(out, key, take(value));
      continue;
    }
    const copy = modelCopy(value, skip.children, take);
    if (skip.keepIfEmptied || Object.keys(copy).length > 0 || Object.keys(value).length === 0)
      setOwn(out, key, copy);
  }
  return out;
}

type Problem = { message: string; path: string } | undefined;

function modelOp(op: Op, input: JsonObject, output: JsonObject, take: Take): Problem {
  switch (op.kind) {
    case 'write':
      return modelWrite(output, op.to, deepCopy(op.value), op);
    case 'move': {
      const value = readPath(input, op.from);
      return value === undefined ? undefined : modelWrite(output, op.to, take(value), op);
    }
    case 'remap': {
      const value = readPath(input, op.from);
      if (value === undefined) return undefined;
      const mapped = remappedValue(op.table, value);
      if (mapped !== undefined) return modelWrite(output, op.to, mapped, op);
      if (op.onUnmapped === 'Drop') return undefined;
      return {
        path: joinPath(op.from),
        message: `value ${JSON.stringify(value)} has no mapping in rule ${op.ruleIndex} (${op.strategy})`,
      };
    }
  }
}

function modelCarry(op: Op, input: JsonObject, output: JsonObject, take: Take): Problem {
  if (!op.when?.carry || op.kind === 'write') return undefined;
  const value = readPath(input, op.from);
  return value === undefined ? undefined : modelWrite(output, op.to, take(value), op);
}

function modelWrite(output: JsonObject, to: Segments, value: unknown, op: Op): Problem {
  let current = output;
  for (let i = 0; i < to.length - 1; i++) {
    const segment = to[i] as string;
    // A null parent counts as absent.
    if (!Object.hasOwn(current, segment) || current[segment] === null) setOwn(current, segment, {});
    const next = current[segment];
    if (!isJsonObject(next))
      return {
        path: joinPath(to),
        message: `rule ${op.ruleIndex} (${op.strategy}) cannot write here: ${joinPath(to.slice(0, i + 1))} holds a value that is not an object`,
      };
    current = next;
  }
  setOwn(current, to[to.length - 1] as string, value);
  return undefined;
}

function readPath(root: JsonObject, segments: Segments): unknown {
  let current: unknown = root;
  for (const segment of segments) {
    if (!isJsonObject(current) || !Object.hasOwn(current, segment)) return undefined;
    current = current[segment];
  }
  return current;
}

/** Keys a schema or a rule may carry that could break generated source or an object's prototype. */
const KEYS = [
  'a',
  'b',
  'spec',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  '0',
  '17',
  'a"b',
  "it's",
  'back\\slash',
  '`\u0024{x}`',
  'line\nbreak',
  '\u2028\u2029',
  '"); throw new Error("injected"); ("',
  '*/ }} //',
  'ключ',
];
const keyArb = fc.constantFrom(...KEYS);
const pathArb = fc.array(keyArb, { minLength: 1, maxLength: 3 });
const scalarArb = fc.oneof(fc.constantFrom('x', 'y', 1, true), fc.constant(null));

const omitTreeArb: fc.Arbitrary<OmitTree> = fc.letrec<{ tree: OmitTree; branch: OmitBranch | null }>(
  (tie) => ({
    tree: fc
      .uniqueArray(fc.tuple(keyArb, tie('branch')), { selector: ([key]) => key, maxLength: 4 })
      .map((entries) => entries.flat()),
    branch: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      fc.constant(null),
      fc.record({ children: tie('tree'), keepIfEmptied: fc.boolean() }) as fc.Arbitrary<OmitBranch>,
    ),
  }),
).tree;

/** JSON objects over the same keys, built as JSON.parse builds them (an own `__proto__` included). */
const objectArb: fc.Arbitrary<JsonObject> = fc.letrec<{ object: JsonObject; value: unknown }>((tie) => ({
  object: fc
    .uniqueArray(fc.tuple(keyArb, tie('value')), { selector: ([key]) => key, maxLength: 5 })
    .map((entries) => {
      const object: JsonObject = {};
      for (const [key, value] of entries) setOwn(object, key, value);
      return object;
    }),
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarArb,
    tie('object'),
    fc.array(scalarArb, { maxLength: 2 }),
  ),
})).object;

const opArb: fc.Arbitrary<Op> = fc
  .record({
    kind: fc.constantFrom('write', 'move', 'remap'),
    from: pathArb,
    to: pathArb,
    value: fc.oneof(scalarArb, objectArb),
    table: fc.array(fc.tuple(fc.constantFrom('x', 'y', 1, true), scalarArb), { maxLength: 3 }),
    onUnmapped: fc.constantFrom('Error', 'Drop'),
    when: fc.option(fc.record({ segments: pathArb, equals: scalarArb, carry: fc.boolean() }), {
      nil: undefined,
    }),
    ruleIndex: fc.nat(20),
  })
  .map(({ kind, from, to, value, table, onUnmapped, when, ruleIndex }): Op => {
    const base = { ruleIndex, strategy: 'FieldRename' as const, ...(when && { when }) };
    if (kind === 'write') return { ...base, kind, to, value };
    if (kind === 'move') return { ...base, kind, from, to };
    return {
      ...base,
      kind,
      from,
      to,
      table: enumTable(new Map(table.filter(([, v]) => v !== null) as [EnumValue, EnumValue][])),
      onUnmapped,
    };
  });

/**
 * A plan as compile leaves it: every path an op reads or writes is claimed in the omit tree
 * (besides the random claims), and no op writes into or over another's destination.
 */
function planOf(random: OmitTree, candidates: Op[], direction: Direction): SpokePlan {
  const ops: Op[] = [];
  for (const op of candidates) if (!ops.some((other) => overlaps(other.to, op.to))) ops.push(op);
  const omit = copyTree(random);
  for (const op of ops) {
    claim(omit, op.to);
    if (op.kind !== 'write') claim(omit, op.from);
  }
  return {
    hubVersion: 'v2',
    spokeVersion: 'v1',
    omit: { hubToSpoke: [], spokeToHub: [], [direction]: flatTree(omit) },
    ops: { hubToSpoke: [], spokeToHub: [], [direction]: ops },
    lossless: { hubToSpoke: true, spokeToHub: true },
  };
}

function overlaps(a: Segments, b: Segments): boolean {
  return a.every((segment, i) => i >= b.length || b[i] === segment);
}

type MutableTree = Map<string, { children: MutableTree; keepIfEmptied: boolean } | null>;

function copyTree(tree: OmitTree): MutableTree {
  return new Map(
    omitEntries(tree).map(([key, branch]) => [
      key,
      branch && { children: copyTree(branch.children), keepIfEmptied: branch.keepIfEmptied },
    ]),
  );
}

function flatTree(tree: MutableTree): OmitTree {
  return [...tree].flatMap(([key, branch]) => [
    key,
    branch && { children: flatTree(branch.children), keepIfEmptied: branch.keepIfEmptied },
  ]);
}

function claim(tree: MutableTree, path: Segments): void {
  let level = tree;
  for (const [i, segment] of path.entries()) {
    if (i === path.length - 1) {
      level.set(segment, null);
      return;
    }
    let branch = level.get(segment);
    if (branch === null) return;
    if (branch === undefined) {
      branch = { children: new Map(), keepIfEmptied: false };
      level.set(segment, branch);
    }
    level = branch.children;
  }
}

/**
 * What a serializer would see, nested, in key order; an object whose prototype was replaced (a
 * `__proto__` stored by assignment) shows as such.
 */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(shape);
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.keys(value).map((key) => [key, shape((value as JsonObject)[key])]);
  return Object.getPrototypeOf(value) === Object.prototype ? entries : { replacedPrototype: entries };
}

describe('stepFunction', () => {
  it('does what the plan walked as data does, key for key and failure for failure', () => {
    fc.assert(
      fc.property(
        omitTreeArb,
        fc.array(opArb, { maxLength: 4 }),
        fc.constantFrom<Direction>('hubToSpoke', 'spokeToHub'),
        objectArb,
        (random, candidates, direction, input) => {
          const plan = planOf(random, candidates, direction);
          const [omit, ops] = [plan.omit[direction], plan.ops[direction]];
          const step = stepFunction(plan, direction);
          const before = shape(input);
          for (const take of [deepCopy, (value: unknown) => value]) {
            const mine = deepCopy(input) as JsonObject;
            const expected = modelStep(omit, ops, input, 'example.org/v1', take);
            const actual = step(mine, 'example.org/v1', take);
            if (expected.ok) expect(shape(actual.ok && actual.object)).toEqual(shape(expected.object));
            else expect(actual).toEqual(expected);
            expect([shape(mine), shape(input)]).toEqual([before, before]);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  }, 60_000);

  it('shares the input values a rule does not claim when told to, and copies them otherwise', () => {
    const omit: OmitTree = ['spec', { children: ['a', null], keepIfEmptied: false }];
    const ops: Op[] = [
      { kind: 'move', from: ['spec', 'a'], to: ['spec', 'b'], ruleIndex: 0, strategy: 'FieldRename' },
    ];
    const step = stepFunction(planOf(omit, ops, 'hubToSpoke'), 'hubToSpoke');
    const input = { metadata: { name: 'x' }, spec: { a: { deep: 1 }, c: [1] } };
    const shared = step(input, 'g/v1', (value) => value) as Extract<StepResult, { ok: true }>;
    expect(shared.object).toEqual({
      apiVersion: 'g/v1',
      metadata: { name: 'x' },
      spec: { b: { deep: 1 }, c: [1] },
    });
    expect(shared.object.metadata).toBe(input.metadata);
    expect((shared.object.spec as JsonObject).b).toBe(input.spec.a);
    const copied = step(input, 'g/v1', deepCopy) as Extract<StepResult, { ok: true }>;
    expect(copied.object.metadata).not.toBe(input.metadata);
    expect((copied.object.spec as JsonObject).b).not.toBe(input.spec.a);
  });

  it('generates a plan direction once and keeps it with the plan', () => {
    const plan = planOf(['a', null], [], 'hubToSpoke');
    expect(stepFunction(plan, 'hubToSpoke')).toBe(stepFunction(plan, 'hubToSpoke'));
    expect(stepFunction(plan, 'spokeToHub')).not.toBe(stepFunction(plan, 'hubToSpoke'));
  });
});
