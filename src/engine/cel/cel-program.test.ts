// The CEL strategy's expressions as the reference (declarative-conversion-operator, cel-go
// v0.26.1) compiles and evaluates them. Expected values are what the reference's webhook writes
// for the same expression and object, observed on cel-go v0.26.1.
import { describe, expect, it } from 'vitest';
import {
  type CelEvaluated,
  type CelLimits,
  type CelProgram,
  compileCelExpression,
  DEFAULT_CEL_LIMITS,
  evaluateCelProgram,
  formatGoFixed,
  formatGoFloat,
} from './cel-program.ts';

function compiled(
  source: string,
  destinations: string[],
  direction: 'hubToSpoke' | 'spokeToHub' = 'hubToSpoke',
): CelProgram {
  const result = compileCelExpression(source, direction, destinations);
  if (!result.ok) throw new Error(`expected ${source} to compile: ${result.problem}`);
  return result.program;
}

function problemOf(source: string, destinations: string[] = ['a']): string {
  const result = compileCelExpression(source, 'hubToSpoke', destinations);
  if (result.ok) throw new Error(`expected ${source} to be refused at compile time`);
  return result.problem;
}

function run(
  source: string,
  object: Record<string, unknown>,
  destinations: string[] = ['a'],
  limits: CelLimits = DEFAULT_CEL_LIMITS,
): CelEvaluated {
  return evaluateCelProgram(compiled(source, destinations), object, limits);
}

/** The written values as {path: value}, for destinations that were found. */
function written(source: string, object: Record<string, unknown> = {}, destinations: string[] = ['a']) {
  const result = run(source, object, destinations);
  if (!result.ok) throw new Error(`expected ${source} to evaluate: ${result.kind}: ${result.message}`);
  return Object.fromEntries(result.values.map((v) => [v.path, v.value]));
}

function failure(source: string, object: Record<string, unknown> = {}, destinations: string[] = ['a']) {
  const result = run(source, object, destinations);
  if (result.ok) throw new Error(`expected ${source} to fail, wrote ${JSON.stringify(result.values)}`);
  return result;
}

describe("the reference's own CEL tests", () => {
  it('refuses an evaluation over the cost limit (TestCELCostLimitRejectsExpensiveEval)', () => {
    const result = run('{"n": object.n + object.n + object.n + object.n + object.n}', { n: 1 }, ['n'], {
      costLimit: 1,
      deadlineMs: 1000,
    });
    expect(result).toMatchObject({ ok: false, kind: 'cost' });
    expect(!result.ok && result.message).toMatch(/cost limit/);
  });

  it('packs an integer into two bytes and back (TestCEL_IntegerPackingRoundTrip)', () => {
    const hubToSpoke = compiled('{"bitHigh": int(object.packed) / 256, "bitLow": int(object.packed) % 256}', [
      'bitHigh',
      'bitLow',
    ]);
    const spokeToHub = compiled(
      '{"packed": int(object.bitHigh) * 256 + int(object.bitLow)}',
      ['packed'],
      'spokeToHub',
    );
    const spoke = evaluateCelProgram(hubToSpoke, { packed: 1025 });
    expect(spoke).toMatchObject({
      ok: true,
      values: [
        { path: 'bitHigh', value: 4 },
        { path: 'bitLow', value: 1 },
      ],
    });
    const hub = evaluateCelProgram(spokeToHub, { bitHigh: 4, bitLow: 1 });
    expect(hub).toMatchObject({ ok: true, values: [{ path: 'packed', value: 1025 }] });
  });

  it('refuses an expression that is not CEL at compile time (TestCEL_BadExpressionIsCompileError)', () => {
    expect(problemOf('this is not cel')).toMatch(/^hubToSpoke: syntax error/);
  });

  it('runs the documented example with dotted keys', () => {
    expect(
      written(
        '{"spec.bitHigh": int(object.spec.packed) / 256, "spec.bitLow": int(object.spec.packed) % 256}',
        { spec: { packed: 1025 } },
        ['spec.bitHigh', 'spec.bitLow'],
      ),
    ).toEqual({ 'spec.bitHigh': 4, 'spec.bitLow': 1 });
  });
});

describe('object: dyn, with every JSON number a double (encoding/json decodes them as float64)', () => {
  it('presents numbers as doubles', () => {
    expect(
      written('{"a": type(object.n) == double, "b": type(object.n) == int}', { n: 3 }, ['a', 'b']),
    ).toEqual({ a: true, b: false });
  });

  it('refuses int arithmetic on them at run time, as the reference does', () => {
    expect(failure('{"a": object.n + 1}', { n: 3 })).toMatchObject({
      kind: 'evaluation',
      message: expect.stringMatching(/no such overload/),
    });
    expect(written('{"a": int(object.n) + 1, "b": object.n + 1.0}', { n: 3 }, ['a', 'b'])).toEqual({
      a: 4,
      b: 4,
    });
  });

  it('compares across numeric types at run time', () => {
    expect(
      written('{"a": object.n == 3, "b": object.n < 4, "c": 3 in object.l}', { n: 3, l: [1, 3] }, [
        'a',
        'b',
        'c',
      ]),
    ).toEqual({ a: true, b: true, c: true });
  });

  it('reads a missing field as an error and tests it with has()', () => {
    expect(failure('{"a": object.spec.missing}', { spec: {} })).toMatchObject({
      kind: 'evaluation',
      message: expect.stringMatching(/no such key/i),
    });
    expect(written('{"a": has(object.spec.missing) ? 1 : 2}', { spec: {} })).toEqual({ a: 2 });
  });
});

describe('compile time: what the reference refuses', () => {
  it.each([
    ['', /expression is required/],
    ['{"a": ', /syntax error/],
    ['{"a": self}', /self/],
    ['{"a": oldObject.x}', /oldObject/],
    ['{"a": object.s.lowerAscii()}', /undeclared reference to 'lowerAscii'/],
    ['{"a": "abc".indexOf("b")}', /undeclared reference to 'indexOf'/],
    ['{"a": "a,b".split(",")}', /undeclared reference to 'split'/],
    ['{"a": ["a"].join(",")}', /undeclared reference to 'join'/],
    ['{"a": cel.bind(x, 1, x)}', /undeclared reference to 'bind'/],
    ['{"a": optional.none()}', /undeclared reference/],
    ['{"a": object.?s}', /syntax error/],
    ['{"a": object.l.all(i, v, v > 0)}', /two-variable/],
    ['{"a": 1 + "a"}', /no such overload: int \+ string/],
    ['{"a": true ? 1 : "a"}', /branches|overload/],
    ['{"a": 1 < 1.0}', /found no matching overload for '_<_' applied to '\(int, double\)'/],
    ['{"a": object.s.contains(1)}', /found no matching overload for 'contains'/],
    ['{"a": {1: "a"}["x"]}', /found no matching overload for '_\[_\]'/],
    ['{"a": false && 32}', /bool/],
    ['{"a": 9223372036854775808}', /invalid int literal/],
    ['{"a": -(9223372036854775808)}', /invalid int literal/],
    ['{"a": 1e400}', /syntax error/],
  ])('%s', (source, problem) => {
    expect(problemOf(source)).toMatch(problem);
  });

  it('names the direction in every problem', () => {
    const result = compileCelExpression('{"a": self}', 'spokeToHub', ['a']);
    expect(result).toMatchObject({ ok: false, problem: expect.stringMatching(/^spokeToHub: /) });
  });

  it('refuses an expression longer than cel-go parses', () => {
    expect(problemOf(`{"a": "${'x'.repeat(100_000)}"}`)).toMatch(/code point size exceeds limit/);
  });

  it('refuses destination paths the engine cannot write, naming the side', () => {
    expect(compileCelExpression('{"a": 1}', 'hubToSpoke', [])).toMatchObject({
      ok: false,
      problem: 'hubToSpoke: spokePaths must list at least one path',
    });
    expect(compileCelExpression('{"a": 1}', 'spokeToHub', ['spec..a'])).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^spokeToHub: hubPaths: .*empty segment/),
    });
  });

  it.each([
    ['"x"', 'string'],
    ['[1, 2]', 'list<int>'],
    ['{1: 2}', 'map<int, int>'],
  ])('accepts %s whose result is no map, as the reference does (it fails on every object)', (source, type) => {
    expect(compiled(source, ['a']).resultType).toBe(type);
    expect(failure(source)).toMatchObject({ kind: 'result' });
  });

  it.each([
    '{"a": int(1u)}',
    '{"a": string(duration("1.5s"))}',
    '{"a": int(timestamp("2020-01-01T00:00:00Z"))}',
    '{"a": b"a" < b"b"}',
    '{"a": matches("abc", "^a")}',
    '{"a": -9223372036854775808}',
    '{"a": - 9223372036854775808}',
    '{"a": [1, "x", null]}',
    '{"a": object.l.map(x, x > 1.0, x * 2.0)}',
    '{"a": duration(1)}',
    '{"a": null < null}',
  ])('accepts %s, as cel-go does', (source) => {
    expect(compileCelExpression(source, 'hubToSpoke', ['a']).ok).toBe(true);
  });
});

describe('the result: a map whose destinations are read and written as the reference does', () => {
  it('reads dotted keys and ignores extra keys', () => {
    expect(
      written(
        '{"spec.size": object.spec.tier == "large" ? 3 : 1, "spec.other": 9}',
        { spec: { tier: 'large' } },
        ['spec.size'],
      ),
    ).toEqual({
      'spec.size': 3,
    });
  });

  it('leaves a destination the map lacks alone', () => {
    expect(written('{"a": 1}', {}, ['a', 'b'])).toEqual({ a: 1 });
  });

  it('writes in the order the destinations are declared', () => {
    const result = run('{"b": 2, "a": 1}', {}, ['a', 'b']);
    expect(result.ok && result.values.map((v) => v.path)).toEqual(['a', 'b']);
  });

  it('descends into maps from the object, not into maps the expression built', () => {
    expect(written('object', { spec: { size: 3 } }, ['spec.size'])).toEqual({ 'spec.size': 3 });
    expect(written('{"spec": object.spec}', { spec: { size: 3 } }, ['spec.size'])).toEqual({
      'spec.size': 3,
    });
    // cel-go's map literal is a map[ref.Val]ref.Val, which the reference's lookup cannot walk
    expect(written('{"spec": {"size": 3}}', {}, ['spec.size'])).toEqual({});
    expect(written('{"spec": {"size": 3}, "spec.size": 4}', {}, ['spec.size'])).toEqual({ 'spec.size': 4 });
  });

  it('prefers the nested value to the dotted key', () => {
    expect(written('{"spec": object.spec, "spec.size": 4}', { spec: { size: 3 } }, ['spec.size'])).toEqual({
      'spec.size': 3,
    });
  });

  it('keeps the last of repeated keys', () => {
    expect(written('{"a": 1, "a": 2}')).toEqual({ a: 2 });
  });

  it('writes keys marc-cel would drop from a JavaScript object', () => {
    expect(written('{"constructor": 1, "prototype": 2}', {}, ['constructor', 'prototype'])).toEqual({
      constructor: 1,
      prototype: 2,
    });
  });

  it('writes values as encoding/json writes cel-go native values', () => {
    const object = { m: { y: null }, l: [1, null] };
    expect(
      written(
        '{"int": 7, "uint": 7u, "double": 2.5, "null": null, "bytes": b"hi", "ts": timestamp("2020-01-01T00:00:00.5Z"), "dur": duration("1.5s"), "list": [1, 2.5, "x", null, true], "fromObject": object.m, "concat": [1] + object.l, "kept": object.l}',
        object,
        ['int', 'uint', 'double', 'null', 'bytes', 'ts', 'dur', 'list', 'fromObject', 'concat', 'kept'],
      ),
    ).toEqual({
      int: 7,
      uint: 7,
      double: 2.5,
      null: 0,
      bytes: 'aGk=',
      ts: '2020-01-01T00:00:00.5Z',
      dur: 1_500_000_000,
      list: [1, 2.5, 'x', 0, true],
      fromObject: { y: null },
      concat: [1, 1, 0],
      kept: [1, null],
    });
  });

  it('writes an empty list a map or filter built as null (a nil Go slice)', () => {
    expect(
      written('{"a": [], "b": [1].filter(x, x > 1), "c": [1.0].map(x, x).filter(x, false)}', {}, [
        'a',
        'b',
        'c',
      ]),
    ).toEqual({ a: [], b: null, c: null });
  });

  it('gives a fresh copy of what it takes from the object', () => {
    const object = { spec: { l: [{ x: 1 }] } };
    const result = run('{"a": object.spec.l}', object);
    expect(result.ok && result.values[0]?.value).toEqual([{ x: 1 }]);
    expect(result.ok && result.values[0]?.value).not.toBe(object.spec.l);
  });

  it.each([
    ['"x"', /result must be a map, got string/],
    ['null', /result must be a map, got null_type/],
    ['[1]', /result must be a map, got list/],
    ['{1: 2}', /string keys, got a int key/],
    ['{"a": 1, "b": type(1)}', /type conversion not supported for 'type'/],
    ['{"a": {"b": 1}}', /a: the expression built a map here/],
    ['{"a": [[1]]}', /Adapter/],
    ['{"a": object.l.map(x, {"v": x})}', /Adapter/],
    ['{"a": [duration("1s")]}', /Duration/],
    ['{"a": 0.0 / 0.0}', /unsupported value: NaN/],
    ['{"a": 1.0 / 0.0}', /unsupported value: \+Inf/],
    ['{"a": 9007199254740993}', /beyond 2\^53/],
  ])('refuses %s as a result', (source, message) => {
    expect(failure(source, { l: [1] })).toMatchObject({
      kind: 'result',
      message: expect.stringMatching(message),
    });
  });

  it('refuses a result value at a destination only (the reference marshals only what it writes)', () => {
    expect(written('{"a": 1, "b": {"c": 1}}')).toEqual({ a: 1 });
  });
});

describe('run time: errors and values as cel-go computes them', () => {
  it.each([
    ['{"a": 1 / 0}', /division by zero/],
    ['{"a": 1 % 0}', /modulo by zero|modulus by zero/],
    ['{"a": int(object.big)}', /integer overflow/],
    ['{"a": -(-9223372036854775807 - 1)}', /integer overflow/],
    ['{"a": (-9223372036854775807 - 1) / -1}', /integer overflow/],
    ['{"a": (-9223372036854775807 - 1) % -1}', /integer overflow/],
    ['{"a": 9223372036854775807 + 1}', /overflow/],
    ['{"a": uint(object.neg)}', /unsigned integer overflow/],
    ['{"a": double("1e400")}', /type conversion error/],
    ['{"a": int("0x10")}', /type conversion error/],
    ['{"a": uint("+1")}', /type conversion error/],
    ['{"a": string(b"\\xff")}', /invalid UTF-8/],
    ['{"a": "abc".matches("(?=a)")}', /error parsing regexp/],
    ['{"a": object.l[5]}', /index|out of bounds|no such key/i],
    ['{"a": timestamp("0001-01-01T00:00:00Z") - duration("1s")}', /timestamp overflow/],
    ['{"a": string(null)}', /no such overload/],
    ['{"a": duration(1)}', /type conversion error/],
  ])('%s fails', (source, message) => {
    expect(failure(source, { big: 1e19, neg: -0.5, l: [1] })).toMatchObject({
      kind: 'evaluation',
      message: expect.stringMatching(message),
    });
  });

  it.each([
    ['string(1234567.0)', '1.234567e+06'],
    ['string(100000.0)', '100000'],
    ['string(0.00001)', '1e-05'],
    ['string(-0.0)', '-0'],
    ['string(0.1 + 0.2)', '0.30000000000000004'],
    ['string(duration("1ns"))', '0.000000001s'],
    ['string(duration("-1.5s"))', '-1.5s'],
    ['string(timestamp("2020-01-01T00:00:00.5Z"))', '2020-01-01T00:00:00.5Z'],
    ['double("1_000.5")', 1000.5],
    ['double("0x1p-2")', 0.25],
    ['int("-12")', -12],
    ['int(-0.5)', 0],
    ['uint(1.5)', 1],
    ['int(timestamp("1969-12-31T23:59:59.5Z"))', -1],
    ['int(duration("1s"))', 1_000_000_000],
    ['"abc".matches("^a.c$")', true],
    ['b"a" < b"b"', true],
    ['[1, 2] + []', [1, 2]],
  ])('%s is %j', (expression, value) => {
    expect(written(`{"a": ${expression}}`)).toEqual({ a: value });
  });

  it('matches in linear time (RE2), so a backtracking pattern cannot stall', () => {
    const started = performance.now();
    expect(written(`{"a": "${'a'.repeat(5000)}!".matches("(a+)+$")}`)).toEqual({ a: false });
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe('limits', () => {
  it('stops an expression at the reference cost limit of 1e6', () => {
    const hostile =
      '{"a": [0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, [0,1,2,3,4,5,6,7,8,9].map(d, [0,1,2,3,4,5,6,7,8,9].map(e, a + b + c + d + e)))))}';
    expect(failure(hostile)).toMatchObject({
      kind: 'cost',
      message: expect.stringMatching(/actual cost limit exceeded \(limit 1000000\)/),
    });
  });

  it('charges as cel-go does: the documented ternary costs 34', () => {
    const source = '{"spec.size": object.spec.tier == "large" ? 3 : 1}';
    const object = { spec: { tier: 'large' } };
    const at = (costLimit: number) =>
      evaluateCelProgram(compiled(source, ['spec.size']), object, { costLimit, deadlineMs: 1000 }).ok;
    expect([at(33), at(34)]).toEqual([false, true]);
  });

  it('stops an evaluation at its deadline, cost aside', () => {
    let clock = 0;
    const limits: CelLimits = { costLimit: Number.POSITIVE_INFINITY, deadlineMs: 5, now: () => (clock += 1) };
    const result = run(
      '{"a": [0,1,2,3,4,5,6,7,8,9].map(a, [0,1,2,3,4,5,6,7,8,9].map(b, [0,1,2,3,4,5,6,7,8,9].map(c, a + b + c)))}',
      {},
      ['a'],
      limits,
    );
    expect(result).toMatchObject({
      ok: false,
      kind: 'deadline',
      message: expect.stringMatching(/5 ms deadline/),
    });
  });

  it('stops on the real clock too', () => {
    const limits: CelLimits = { costLimit: Number.POSITIVE_INFINITY, deadlineMs: 20 };
    const tens = '[0,1,2,3,4,5,6,7,8,9]';
    const result = run(
      `{"a": ${tens}.exists(a, ${tens}.exists(b, ${tens}.exists(c, ${tens}.exists(d, ${tens}.exists(e, ${tens}.exists(f, ${tens}.exists(g, a + b + c + d + e + f + g < 0)))))))}`,
      {},
      ['a'],
      limits,
    );
    expect(result).toMatchObject({ ok: false, kind: 'deadline' });
  });

  it('stays refused when a quantifier or || swallows the budget error', () => {
    const tens = '[0,1,2,3,4,5,6,7,8,9]';
    const result = run(
      `{"a": ${tens}.exists(a, ${tens}.exists(b, ${tens}.exists(c, ${tens}.exists(d, ${tens}.exists(e, ${tens}.exists(f, a < 0)))))) || true}`,
      {},
    );
    expect(result).toMatchObject({ ok: false, kind: 'cost' });
  });
});

describe('Go number text', () => {
  it.each([
    [1e21, '1e+21'],
    [1e20, '1e+20'],
    [123456, '123456'],
    [0.0001, '0.0001'],
    [1.5e-7, '1.5e-07'],
    [-2.5, '-2.5'],
    [Number.NaN, 'NaN'],
    [Number.NEGATIVE_INFINITY, '-Inf'],
  ])("formats %d as strconv's 'g' does", (value, text) => {
    expect(formatGoFloat(value)).toBe(text);
  });

  it.each([
    [1e-9, '0.000000001'],
    [1000000, '1000000'],
    [1.5, '1.5'],
  ])("formats %d as strconv's 'f' does", (value, text) => {
    expect(formatGoFixed(value)).toBe(text);
  });
});
