// Fuzz: CEL expressions a rule author (or an attacker with write access to a conversion config)
// could write, over objects a cluster could hold. Whatever the pair: compile and evaluate never
// throw, a refusal says why, what is written is plain JSON at declared destinations, and an
// expression that would run long is stopped by the cost limit or the deadline (asserted on the
// kind of refusal and on a stepped clock, never on wall time).
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { FUZZ_TEST_TIMEOUT_MS, fuzz, fuzzTimeoutMs } from '../../../test/support/fuzz.ts';
import {
  type CelEvaluated,
  type CelLimits,
  compileCelExpression,
  DEFAULT_CEL_LIMITS,
  evaluateCelProgram,
} from './cel-program.ts';

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

const KINDS = ['evaluation', 'result', 'cost', 'deadline'];
const KEYS = ['spec', 'n', 's', 'l', 'm', 'b', 'z', 'tier', 'size'];
const DESTINATIONS = ['a', 'spec.size', 'spec.n', 'b.c'];

const key = fc.constantFrom(...KEYS);
const json = fc.jsonValue({ maxDepth: 3 });
/** Objects shaped like a custom resource, with the fields the expressions name present often. */
const object: fc.Arbitrary<Record<string, unknown>> = fc.record(
  {
    apiVersion: fc.constant('x.io/v1'),
    kind: fc.constant('Gizmo'),
    spec: fc.record(
      {
        n: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.constant(1e19)),
        s: fc.string({ maxLength: 20 }),
        l: fc.array(
          fc.oneof(fc.integer({ min: -5, max: 5 }), fc.string({ maxLength: 3 }), fc.constant(null)),
          { maxLength: 6 },
        ),
        m: fc.dictionary(key, json, { maxKeys: 4 }),
        b: fc.boolean(),
        z: fc.constant(null),
        tier: fc.constantFrom('large', 'small'),
      },
      { requiredKeys: [] },
    ),
    extra: json,
  },
  { requiredKeys: ['apiVersion', 'kind'] },
);

const literal = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom(
    '9223372036854775807',
    '9223372036854775808',
    '-9223372036854775808',
    '18446744073709551615u',
  ),
  fc.nat().map((n) => `${n}u`),
  fc
    .double({ noNaN: true, noDefaultInfinity: true })
    .map((d) => (/[.e]/.test(String(d)) ? String(d) : `${d}.0`)),
  fc.string({ maxLength: 8 }).map((s) => JSON.stringify(s)),
  fc.constantFrom(
    'true',
    'false',
    'null',
    'b"ab"',
    '[]',
    '{}',
    'int',
    'string',
    '"2020-01-01T00:00:00Z"',
    '"1.5s"',
    '"(a+)+$"',
    '"[a-"',
  ),
);
const anyPath = fc
  .array(
    fc.oneof(
      key.map((k) => `.${k}`),
      fc.nat(3).map((i) => `[${i}]`),
      key.map((k) => `["${k}"]`),
    ),
    { maxLength: 3 },
  )
  .map((steps) => `object${steps.join('')}`);
/** Paths into the object: mostly fields the generated objects often have. */
const path = fc.oneof(
  fc.constantFrom(
    'object.spec.n',
    'object.spec.s',
    'object.spec.l',
    'object.spec.m',
    'object.spec.tier',
    'object.spec.l[0]',
    'object.spec',
  ),
  anyPath,
);

const UNARY = ['!', '-'];
const BINARY = ['+', '-', '*', '/', '%', '==', '!=', '<', '<=', '>', '>=', '&&', '||', 'in'];
const CALLS = [
  'size',
  'int',
  'uint',
  'double',
  'string',
  'bytes',
  'bool',
  'type',
  'dyn',
  'timestamp',
  'duration',
];
const METHODS = [
  'contains',
  'startsWith',
  'endsWith',
  'matches',
  'size',
  'getFullYear',
  'getHours',
  'lowerAscii',
  'indexOf',
];
const MACROS = ['map', 'filter', 'all', 'exists', 'exists_one'];

/** Source text from CEL's grammar: mostly well-formed, sometimes ill-typed, sometimes using what the reference lacks. */
const { expression } = fc.letrec<{ expression: string }>((tie) => {
  const sub = tie('expression');
  return {
    expression: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 3, arbitrary: literal },
      { weight: 5, arbitrary: path },
      { weight: 1, arbitrary: fc.constant('x') },
      { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...UNARY), sub).map(([op, e]) => `${op}(${e})`) },
      {
        weight: 3,
        arbitrary: fc.tuple(sub, fc.constantFrom(...BINARY), sub).map(([l, op, r]) => `(${l} ${op} ${r})`),
      },
      { weight: 1, arbitrary: fc.tuple(sub, sub, sub).map(([c, t, f]) => `(${c} ? ${t} : ${f})`) },
      { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...CALLS), sub).map(([f, e]) => `${f}(${e})`) },
      {
        weight: 2,
        arbitrary: fc
          .tuple(sub, fc.constantFrom(...METHODS), fc.array(sub, { maxLength: 1 }))
          .map(([r, m, a]) => `${r}.${m}(${a.join(', ')})`),
      },
      {
        weight: 2,
        arbitrary: fc.tuple(path, fc.constantFrom(...MACROS), sub).map(([r, m, e]) => `${r}.${m}(x, ${e})`),
      },
      { weight: 1, arbitrary: fc.array(sub, { maxLength: 3 }).map((items) => `[${items.join(', ')}]`) },
      {
        weight: 1,
        arbitrary: fc
          .array(
            fc.tuple(
              fc.oneof(
                literal,
                fc.constantFrom(...DESTINATIONS).map((d) => JSON.stringify(d)),
              ),
              sub,
            ),
            {
              maxLength: 3,
            },
          )
          .map((entries) => `{${entries.map(([k, v]) => `${k}: ${v}`).join(', ')}}`),
      },
      {
        weight: 1,
        arbitrary: path.map((p) => `has(${p.includes('[') || p === 'object' ? 'object.spec' : p})`),
      },
    ),
  };
});

/** Most roots are maps keyed by destinations, as rules write them. */
const rootExpression = fc.oneof(
  {
    weight: 3,
    arbitrary: fc
      .array(fc.tuple(fc.constantFrom(...DESTINATIONS), expression), { minLength: 1, maxLength: 3 })
      .map((entries) => `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${v}`).join(', ')}}`),
  },
  { weight: 1, arbitrary: expression },
);

function expectWellFormed(result: CelEvaluated, destinations: readonly string[]): void {
  if (!result.ok) {
    expect(KINDS).toContain(result.kind);
    expect(result.message.trim().length, 'a refusal says why').toBeGreaterThan(0);
    return;
  }
  const paths = result.values.map((v) => v.path);
  expect(paths, 'written in declared order, each once').toEqual(
    destinations.filter((d) => paths.includes(d)),
  );
  for (const { value } of result.values)
    expect(isPlainJson(value), `plain JSON: ${String(value)}`).toBe(true);
}

/** JSON as JSON.parse makes it: no BigInt, NaN, undefined or class instance anywhere. */
function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.values(value).every(isPlainJson);
}

/** A clock that advances 1 ms each time it is read, and counts the reads. */
function steppingClock(): {
  limits: (costLimit: number, deadlineMs: number) => CelLimits;
  reads: () => number;
} {
  let now = 0;
  return {
    limits: (costLimit, deadlineMs) => ({ costLimit, deadlineMs, now: () => ++now }),
    reads: () => now,
  };
}

describe('fuzz: CEL expressions', () => {
  it('compiles any text without throwing, and a refusal names the direction', () => {
    fc.assert(
      fc.property(
        fc.oneof(rootExpression, fc.string({ maxLength: 60 }), fc.string({ unit: 'binary', maxLength: 30 })),
        (source) => {
          const result = compileCelExpression(source, 'spokeToHub', DESTINATIONS);
          if (!result.ok) expect(result.problem).toMatch(/^spokeToHub: .+/);
        },
      ),
      fuzz(),
    );
  });

  it('evaluates any compiled expression on any object without throwing; what it writes is JSON', () => {
    fc.assert(
      fc.property(rootExpression, object, (source, input) => {
        const compiled = compileCelExpression(source, 'hubToSpoke', DESTINATIONS);
        if (!compiled.ok) return;
        const frozen = structuredClone(input);
        const result = evaluateCelProgram(compiled.program, input, DEFAULT_CEL_LIMITS);
        expectWellFormed(result, DESTINATIONS);
        expect(input, 'the object is never changed').toEqual(frozen);
      }),
      fuzz(),
    );
  });

  it('stops every evaluation within one clock reading of its deadline', () => {
    fc.assert(
      fc.property(rootExpression, object, fc.integer({ min: 1, max: 20 }), (source, input, deadlineMs) => {
        const compiled = compileCelExpression(source, 'hubToSpoke', DESTINATIONS);
        if (!compiled.ok) return;
        const clock = steppingClock();
        const result = evaluateCelProgram(
          compiled.program,
          input,
          clock.limits(Number.POSITIVE_INFINITY, deadlineMs),
        );
        // Read once at the start, then each reading is 1 ms later: past the deadline, the next
        // reading must be the last.
        expect(clock.reads()).toBeLessThanOrEqual(deadlineMs + 2);
        if (clock.reads() > deadlineMs + 1) expect(result).toMatchObject({ ok: false, kind: 'deadline' });
        expectWellFormed(result, DESTINATIONS);
      }),
      fuzz(),
    );
  });
});

const tens = (size: number) => `[${Array.from({ length: size }, (_, i) => i).join(', ')}]`;
const VARIABLES = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
/** Predicates that never hold, so no quantifier can stop early; each costs ≥ 10 units. */
const NEVER = [
  'a + b + c + d + e < 0',
  'string(a) + string(b) == "x"',
  'object.s + object.s == object.s',
  '[a, b, c].exists(y, y > 99)',
  'object.s.matches("(a+)+b$")',
];

/** `macro` nested so that every level runs in full: the innermost step runs ≥ 10^5 times. */
function nested(macro: string, sizes: readonly number[], never: string): string {
  const last = sizes.length - 1;
  let body = macro === 'all' ? `!(${never})` : never;
  for (let i = last; i >= 0; i--) {
    const list = `${tens(sizes[i] as number)}.${macro}(${VARIABLES[i]}, `;
    if (macro === 'map') body = `${list}${i === last ? `(${body}) ? 1 : 2` : body})`;
    else if (macro === 'filter') body = `${list}${i === last ? body : `${body}.size() == 0`})`;
    else body = `${list}${body})`;
  }
  return `{"a": ${body}}`;
}

/** Comprehensions nested 5–7 deep over 10–16 elements, with work inside the reference also charges for. */
const hostile = fc
  .tuple(
    fc.constantFrom('map', 'filter', 'all', 'exists', 'exists_one'),
    fc.array(fc.integer({ min: 10, max: 16 }), { minLength: 5, maxLength: 7 }),
    fc.constantFrom(...NEVER),
  )
  .map(([macro, sizes, never]) => nested(macro, sizes, never));

describe('fuzz: hostile expressions', () => {
  it(
    'are refused by the cost limit or the deadline, never run to the end',
    () => {
      fc.assert(
        fc.property(hostile, (source) => {
          const compiled = compileCelExpression(source, 'hubToSpoke', ['a']);
          expect(compiled.ok, compiled.ok ? '' : compiled.problem).toBe(true);
          if (!compiled.ok) return;
          const result = evaluateCelProgram(compiled.program, { s: 'a'.repeat(64) });
          expect(result.ok ? 'ok' : result.kind, source).toMatch(/^(cost|deadline)$/);
        }),
        fuzz(0.01),
      );
    },
    fuzzTimeoutMs(300, 0.01),
  );

  it('are refused by the deadline when no cost limit applies', () => {
    fc.assert(
      fc.property(hostile, fc.integer({ min: 1, max: 10 }), (source, deadlineMs) => {
        const compiled = compileCelExpression(source, 'hubToSpoke', ['a']);
        if (!compiled.ok) return;
        const clock = steppingClock();
        const result = evaluateCelProgram(
          compiled.program,
          { s: 'a'.repeat(64) },
          clock.limits(Number.POSITIVE_INFINITY, deadlineMs),
        );
        expect(result).toMatchObject({ ok: false, kind: 'deadline' });
        expect(clock.reads()).toBeLessThanOrEqual(deadlineMs + 2);
      }),
      fuzz(0.1),
    );
  });
});
