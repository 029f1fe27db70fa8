import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  coerceScalar,
  compareUtf8,
  formatFloatFixed,
  formatGoFloat,
  formatNumber,
  marshalJson,
  parseBool,
  parseFloat64,
  roundHalfAwayFromZero,
  trimSpace,
  unmarshalJson,
} from './go-values.ts';

// Every expected value below is what Go 1.26's strconv, strings and encoding/json return.

describe('parseFloat64 (strconv.ParseFloat)', () => {
  const cases: [string, number | undefined][] = [
    ['', undefined],
    ['.', undefined],
    ['1', 1],
    ['1.', 1],
    ['.5', 0.5],
    ['+.5', 0.5],
    ['-.5e-3', -0.0005],
    ['1e', undefined],
    ['1e+', undefined],
    ['1_000', 1000],
    ['1__0', undefined],
    ['_1', undefined],
    ['1_', undefined],
    ['1_.5', undefined],
    ['1.5e1_0', 15000000000],
    ['1e_5', undefined],
    ['0x', undefined],
    ['0x1', undefined],
    ['0x1p0', 1],
    ['0x1P-2', 0.25],
    ['0x_1p0', 1],
    ['0x1.8p3', 12],
    ['0x.p1', undefined],
    ['0x1.p1', 2],
    ['inf', Number.POSITIVE_INFINITY],
    ['+Inf', Number.POSITIVE_INFINITY],
    ['-infinity', Number.NEGATIVE_INFINITY],
    ['infin', undefined],
    ['nan', Number.NaN],
    ['+nan', undefined],
    ['1e400', undefined],
    ['1e-400', 0],
    ['4.9e-324', 5e-324],
    ['1.7976931348623159e308', undefined],
    ['0x1.fffffffffffff8p1023', undefined],
    ['0x1p-1075', 0],
    ['0x1.8p-1075', 5e-324],
    ['00012', 12],
    ['1e123456', undefined],
    ['9007199254740993', 9007199254740992],
    [' 1', undefined],
    ['0b1', undefined],
    ['1e1.5', undefined],
    ['0x1p1_0', 1024],
    ['0x1_p1', undefined],
    ['1._5', undefined],
    ['-0', -0],
  ];
  it.each(cases)('%j reads as %s', (text, expected) => {
    expect(parseFloat64(text)).toBe(expected);
  });

  it('reads back every float64 as JavaScript and FormatFloat print it', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        expect(parseFloat64(String(value))).toBe(value === 0 ? 0 : value); // String(-0) is "0"
        expect(parseFloat64(formatFloatFixed(value))).toBe(value);
      }),
    );
  });
});

describe('formatNumber (the reference) and formatFloatFixed (FormatFloat f -1)', () => {
  it.each([
    [0, '0'],
    [-0, '0'],
    [3, '3'],
    [-42, '-42'],
    [0.1, '0.1'],
    [1 / 3, '0.3333333333333333'],
    [1e-7, '0.0000001'],
    [999999999999999, '999999999999999'],
    [1e15, '1000000000000000'],
    [1e21, '1000000000000000000000'],
    [2 ** 70, '1180591620717411300000'],
    [1.5e300, `15${'0'.repeat(299)}`],
    [5e-324, `0.${'0'.repeat(323)}5`],
    [Number.POSITIVE_INFINITY, '+Inf'],
    [Number.NaN, 'NaN'],
  ])('%s is written %s', (value, text) => {
    expect(formatNumber(value)).toBe(text);
  });

  it('keeps the sign of -0 where FormatFloat does', () => {
    expect(formatFloatFixed(-0)).toBe('-0');
  });
});

describe('formatGoFloat (%v, fmt.Sprint of a float64)', () => {
  it.each([
    [0, '0'],
    [-0, '-0'],
    [1, '1'],
    [123456, '123456'],
    [1234567, '1.234567e+06'],
    [1e6, '1e+06'],
    [0.0001, '0.0001'],
    [0.00001, '1e-05'],
    [-2.5e-7, '-2.5e-07'],
    [1.7976931348623157e308, '1.7976931348623157e+308'],
    [5e-324, '5e-324'],
    [100000, '100000'],
    [999999, '999999'],
    [1e20, '1e+20'],
    [-1234567.5, '-1.2345675e+06'],
    [Number.NEGATIVE_INFINITY, '-Inf'],
    [Number.NaN, 'NaN'],
  ])('%d prints as %s', (value, text) => {
    expect(formatGoFloat(value)).toBe(text);
  });

  it("is how the reference's coercion messages print a number", () => {
    expect(coerceScalar(1234567.5, 'integer')).toEqual({
      ok: false,
      message:
        'cannot coerce 1.2345675e+06 to integer: fractional part is not allowed (onFractionalInteger=Error)',
    });
  });

  it('reads back as the same number', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (value) => {
        expect(Object.is(Number(formatGoFloat(value)), value)).toBe(true);
      }),
    );
  });
});

describe('parseBool, trimSpace, roundHalfAwayFromZero', () => {
  it('accepts exactly strconv.ParseBool spellings', () => {
    for (const text of ['1', 't', 'T', 'TRUE', 'true', 'True']) expect(parseBool(text)).toBe(true);
    for (const text of ['0', 'f', 'F', 'FALSE', 'false', 'False']) expect(parseBool(text)).toBe(false);
    for (const text of ['yes', 'tRUE', ' true', '', 'on']) expect(parseBool(text)).toBeUndefined();
  });

  it('trims Unicode White_Space: U+0085 yes, U+FEFF and U+200B no', () => {
    expect(trimSpace(' \t\n\v\f\r x \u0085')).toBe('x');
    expect(trimSpace('\u00a0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000x\u3000')).toBe('x');
    expect(trimSpace('\ufeffx\ufeff')).toBe('\ufeffx\ufeff');
    expect(trimSpace('\u200bx')).toBe('\u200bx');
  });

  it('rounds halves away from zero, as math.Round', () => {
    expect(roundHalfAwayFromZero(0.5)).toBe(1);
    expect(roundHalfAwayFromZero(-0.5)).toBe(-1);
    expect(roundHalfAwayFromZero(2.5)).toBe(3);
    expect(roundHalfAwayFromZero(-2.5)).toBe(-3);
    expect(roundHalfAwayFromZero(0.49999999999999994)).toBe(0);
    expect(roundHalfAwayFromZero(-0.49999999999999994)).toBe(-0);
    expect(roundHalfAwayFromZero(4503599627370495.5)).toBe(4503599627370496);
  });
});

describe('marshalJson (encoding/json.Marshal)', () => {
  it('sorts keys by UTF-8 bytes and escapes as Go does', () => {
    const value = {
      b: 1,
      a: [1, 'x<>&', null, true],
      é: 1,
      z: { '\u{1F600}': 1, '\uFFFF': 2, '\uE000': 3, ä: 4 },
    };
    expect(marshalJson(value)).toBe(
      '{"a":[1,"x\\u003c\\u003e\\u0026",null,true],"b":1,"z":{"ä":4,"\uE000":3,"\uFFFF":2,"\u{1F600}":1},"é":1}',
    );
    expect(marshalJson('\u2028\u2029\b\f\n\r\t\u0001\u007f"\\')).toBe(
      '"\\u2028\\u2029\\b\\f\\n\\r\\t\\u0001\u007f\\"\\\\"',
    );
  });

  it('writes numbers as ES6 does, -0 kept, and lone surrogates as U+FFFD (what Go decoded them to)', () => {
    expect(marshalJson([1e21, 1e-7, 123.456, 1e300, -0, 0.000001])).toBe(
      '[1e+21,1e-7,123.456,1e+300,-0,0.000001]',
    );
    expect(marshalJson('a\ud800')).toBe('"a\ufffd"');
    expect(marshalJson('\ud83d\ude00')).toBe('"\u{1F600}"');
  });

  it('reads back as the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(marshalJson(value))).toEqual(value);
      }),
    );
  });

  it('orders keys by code point, surrogate pairs after U+FFFF', () => {
    expect(['\u{1F600}', '\uFFFF', 'a'].sort(compareUtf8)).toEqual(['a', '\uFFFF', '\u{1F600}']);
  });
});

describe('unmarshalJson (encoding/json.Unmarshal into any)', () => {
  it('accepts what Go accepts, as Go decodes it', () => {
    expect(unmarshalJson(' [1] ')).toEqual({ ok: true, value: [1] });
    expect(unmarshalJson('{"a":1,"a":2}')).toEqual({ ok: true, value: { a: 2 } });
    expect(unmarshalJson('"\\ud800x"')).toEqual({ ok: true, value: '\ufffdx' });
    expect(unmarshalJson('{"\\udc00":"\\ud83d\\ude00"}')).toEqual({
      ok: true,
      value: { '\ufffd': '\u{1F600}' },
    });
    expect(unmarshalJson('-0')).toEqual({ ok: true, value: -0 });
    const deepest = `${'['.repeat(10000)}${']'.repeat(10000)}`;
    expect(unmarshalJson(deepest).ok).toBe(true);
  });

  it('refuses what Go refuses: a number beyond float64, nesting past 10000, a BOM, no JSON', () => {
    for (const text of ['1e400', `${'['.repeat(10001)}${']'.repeat(10001)}`, '\ufeff1', '', 'nul', '[1,]']) {
      expect(unmarshalJson(text).ok, text.slice(0, 20)).toBe(false);
    }
  });
});

describe('coerceScalar (coerceScalarValueWithPolicy)', () => {
  it('to string: numbers as formatNumber, booleans as true/false, nothing else', () => {
    expect(coerceScalar(3, 'string')).toEqual({ ok: true, value: '3' });
    expect(coerceScalar(1e21, 'string')).toEqual({ ok: true, value: '1000000000000000000000' });
    expect(coerceScalar(false, 'string')).toEqual({ ok: true, value: 'false' });
    expect(coerceScalar('x', 'string')).toEqual({ ok: true, value: 'x' });
    expect(coerceScalar(null, 'string')).toEqual({ ok: false, message: 'cannot coerce <nil> to string' });
    expect(coerceScalar({}, 'string').ok).toBe(false);
  });

  it('to number: trimmed numeric strings and booleans; non-finite and other values refused', () => {
    expect(coerceScalar(' 1e3\n', 'number')).toEqual({ ok: true, value: 1000 });
    expect(coerceScalar('0x1p-2', 'number')).toEqual({ ok: true, value: 0.25 });
    expect(coerceScalar(true, 'number')).toEqual({ ok: true, value: 1 });
    expect(coerceScalar('inf', 'number').ok).toBe(false);
    expect(coerceScalar('NaN', 'number').ok).toBe(false);
    expect(coerceScalar('1e400', 'number').ok).toBe(false);
    expect(coerceScalar('', 'number').ok).toBe(false);
    expect(coerceScalar([1], 'number').ok).toBe(false);
  });

  it('to integer: a fraction fails, truncates or rounds as the policy says', () => {
    expect(coerceScalar('2.5', 'integer')).toEqual({
      ok: false,
      message: 'cannot coerce 2.5 to integer: fractional part is not allowed (onFractionalInteger=Error)',
    });
    expect(coerceScalar(-2.5, 'integer', 'Truncate')).toEqual({ ok: true, value: -2 });
    expect(coerceScalar(-2.5, 'integer', 'Round')).toEqual({ ok: true, value: -3 });
    expect(coerceScalar('7', 'integer')).toEqual({ ok: true, value: 7 });
  });

  it('to boolean: booleans and ParseBool of the trimmed string only', () => {
    expect(coerceScalar(' T ', 'boolean')).toEqual({ ok: true, value: true });
    expect(coerceScalar('0', 'boolean')).toEqual({ ok: true, value: false });
    expect(coerceScalar('yes', 'boolean').ok).toBe(false);
    expect(coerceScalar(1, 'boolean')).toEqual({ ok: false, message: 'cannot coerce float64 to boolean' });
  });

  it('never throws', () => {
    const kinds = fc.constantFrom('string', 'integer', 'number', 'boolean' as const);
    const policies = fc.constantFrom('Error', 'Truncate', 'Round' as const);
    fc.assert(
      fc.property(
        fc.oneof(fc.jsonValue(), fc.string(), fc.double()),
        kinds,
        policies,
        (value, kind, policy) => {
          expect(typeof coerceScalar(value, kind, policy).ok).toBe('boolean');
        },
      ),
    );
  });
});
