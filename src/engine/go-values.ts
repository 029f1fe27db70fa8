// Go's value semantics, where the reference's conversions turn a value into text or text into a
// value. The reference runs on values encoding/json decoded (every number a float64) and uses
// strconv and encoding/json on them: a string it accepts or refuses, and the text it writes, are
// decided by those Go functions, so converting the same object must accept, refuse and write
// exactly what they do. JavaScript's own parsers differ (Number("") is 0, Number("0x10") is 16,
// "1_000" is NaN, String.prototype.trim strips U+FEFF but not U+0085, JSON.stringify does not
// escape <, > and & and keeps keys in insertion order), hence these re-implementations.
//
// Pure functions, no state: the strategies call them on the conversion's hot path.

/** The JSON scalar kinds a coercion converts between (the reference's isCoercibleScalar). */
export type ScalarKind = 'string' | 'integer' | 'number' | 'boolean';

/** What a number with a fraction becomes when the destination is an integer. */
export type FractionalPolicy = 'Error' | 'Truncate' | 'Round';

export type Coerced = { ok: true; value: string | number | boolean } | { ok: false; message: string };

const SCALAR_KINDS: ReadonlySet<unknown> = new Set(['string', 'integer', 'number', 'boolean']);

export function isScalarKind(kind: unknown): kind is ScalarKind {
  return SCALAR_KINDS.has(kind);
}

/**
 * The reference's coerceScalarValueWithPolicy: `value` (as decoded from JSON) in the
 * representation a field of `kind` holds. Integers are float64s with no fraction, as in Go.
 */
export function coerceScalar(
  value: unknown,
  kind: ScalarKind,
  onFraction: FractionalPolicy = 'Error',
): Coerced {
  switch (kind) {
    case 'string':
      return coerceToString(value);
    case 'integer': {
      const number = numericValue(value);
      return number.ok ? withoutFraction(number.value as number, onFraction) : number;
    }
    case 'number':
      return numericValue(value);
    case 'boolean':
      return coerceToBoolean(value);
  }
}

function coerceToString(value: unknown): Coerced {
  if (typeof value === 'string') return { ok: true, value };
  if (typeof value === 'boolean') return { ok: true, value: value ? 'true' : 'false' };
  if (typeof value === 'number') return { ok: true, value: formatNumber(value) };
  return { ok: false, message: `cannot coerce ${goTypeName(value)} to string` };
}

function coerceToBoolean(value: unknown): Coerced {
  if (typeof value === 'boolean') return { ok: true, value };
  if (typeof value === 'string') {
    const parsed = parseBool(trimSpace(value));
    return parsed === undefined
      ? { ok: false, message: `cannot coerce ${goQuote(value)} to boolean: invalid syntax` }
      : { ok: true, value: parsed };
  }
  return { ok: false, message: `cannot coerce ${goTypeName(value)} to boolean` };
}

/** The reference's numericAsFloat64: numbers, numeric strings and booleans (1/0); finite only. */
function numericValue(value: unknown): Coerced {
  if (typeof value === 'number') {
    return Number.isFinite(value) ? { ok: true, value } : { ok: false, message: nonFinite(value) };
  }
  if (typeof value === 'string') {
    const parsed = parseFloat64(trimSpace(value));
    if (parsed === undefined)
      return { ok: false, message: `cannot coerce ${goQuote(value)} to a number: invalid syntax` };
    if (!Number.isFinite(parsed))
      return { ok: false, message: `cannot coerce ${goQuote(value)} to a number: ${nonFinite(parsed)}` };
    return { ok: true, value: parsed };
  }
  if (typeof value === 'boolean') return { ok: true, value: value ? 1 : 0 };
  return { ok: false, message: `cannot coerce ${goTypeName(value)} to a number` };
}

function nonFinite(value: number): string {
  return `cannot coerce non-finite number ${formatGoFloat(value)}`;
}

function withoutFraction(value: number, onFraction: FractionalPolicy): Coerced {
  if (Number.isInteger(value)) return { ok: true, value };
  switch (onFraction) {
    case 'Truncate':
      return { ok: true, value: Math.trunc(value) };
    case 'Round':
      return { ok: true, value: roundHalfAwayFromZero(value) };
    case 'Error':
      return {
        ok: false,
        message: `cannot coerce ${formatGoFloat(value)} to integer: fractional part is not allowed (onFractionalInteger=Error)`,
      };
  }
}

/** Go's math.Round: halves round away from zero (Math.round rounds them up). */
export function roundHalfAwayFromZero(value: number): number {
  const whole = Math.trunc(value);
  // The fraction value - whole is exact; adding 0.5 first could round up (0.49999999999999994).
  return Math.abs(value - whole) >= 0.5 ? whole + Math.sign(value) : whole;
}

// --- numbers as text

/**
 * The reference's formatNumber: a whole number below 1e15 as an integer, anything else as
 * strconv.FormatFloat(f, 'f', -1, 64) (shortest digits, never an exponent).
 */
export function formatNumber(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e15) return String(value === 0 ? 0 : value);
  return formatFloatFixed(value);
}

/** strconv.FormatFloat(f, 'f', -1, 64): the shortest digits that read back as `f`, positional. */
export function formatFloatFixed(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  const [mantissa = '0', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const point = Number(exponentText) + 1; // digits before the decimal point
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`;
  if (point >= digits.length) return `${sign}${digits}${'0'.repeat(point - digits.length)}`;
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`;
}

/**
 * Go's %v of a float64 (fmt.Sprint, the reference's messages, text/template's printing): strconv's
 * 'g' with the shortest digits, which takes the exponent form when the exponent is below -4 or at
 * least 6 (1e+06, 1.5e-07: two exponent digits at least), positional otherwise (100000, 0.0001).
 */
export function formatGoFloat(value: number): string {
  if (!Number.isFinite(value)) return formatFloatFixed(value);
  const [mantissa = '0', exponentText = '0'] = Math.abs(value).toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent >= -4 && exponent < 6) return formatFloatFixed(value);
  const magnitude = Math.abs(exponent);
  return `${value < 0 ? '-' : ''}${mantissa}e${exponent < 0 ? '-' : '+'}${magnitude < 10 ? '0' : ''}${magnitude}`;
}

// --- text as values

const GO_SPACE = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';
const GO_SPACE_EDGES = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, 'g');

/** strings.TrimSpace: Unicode White_Space, which includes U+0085 and not U+FEFF (unlike trim()). */
export function trimSpace(text: string): string {
  return text.replace(GO_SPACE_EDGES, '');
}

const TRUE_TEXTS: ReadonlySet<string> = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE_TEXTS: ReadonlySet<string> = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** strconv.ParseBool; undefined where it fails. */
export function parseBool(text: string): boolean | undefined {
  if (TRUE_TEXTS.has(text)) return true;
  if (FALSE_TEXTS.has(text)) return false;
  return undefined;
}

// Go float literal syntax as strconv reads it: an optional sign, then decimal digits with an
// optional point and `e` exponent, or `0x` hex digits with an optional point and a mandatory
// `p` exponent; underscores may separate digits (underscoreOK checks where).
const DECIMAL_FLOAT = /^([+-]?)([0-9_]*(?:\.[0-9_]*)?)(?:[eE]([+-]?)([0-9][0-9_]*))?$/;
const HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F_]*(?:\.[0-9a-fA-F_]*)?)[pP]([+-]?)([0-9][0-9_]*)$/;
const SPECIAL_FLOAT = /^(?:[+-]?(?:inf|infinity)|nan)$/i;
const MAX_FLOAT64_EXPONENT = 1023;
const MIN_FLOAT64_EXPONENT = -1074; // of the lowest bit of a subnormal

/**
 * strconv.ParseFloat(text, 64): the nearest float64, ±Infinity or NaN for Go's spellings of
 * them; undefined where Go reports a syntax error or an overflow (ErrRange).
 */
export function parseFloat64(text: string): number | undefined {
  if (SPECIAL_FLOAT.test(text)) return specialFloat(text);
  if (text.includes('_') && !underscoresSeparateDigits(text)) return undefined;
  const hex = HEX_FLOAT.exec(text);
  if (hex) return parseHexFloat(hex);
  const decimal = DECIMAL_FLOAT.exec(text);
  if (!decimal || !/[0-9]/.test(decimal[2] as string)) return undefined;
  const mantissa = (decimal[2] as string).replaceAll('_', '');
  const exponent = decimal[4] === undefined ? 0 : cappedExponent(decimal[4]);
  const value = Number(`${mantissa}e${decimal[3] === '-' ? -exponent : exponent}`);
  if (!Number.isFinite(value)) return undefined;
  return decimal[1] === '-' ? -value : value;
}

function specialFloat(text: string): number {
  if (/nan/i.test(text)) return Number.NaN;
  return text.startsWith('-') ? Number.NEGATIVE_INFINITY : Number.POSITIVE_INFINITY;
}

/** Go stops accumulating an exponent's digits once it reaches 10000 (readFloat). */
function cappedExponent(digits: string): number {
  let exponent = 0;
  for (const digit of digits) {
    if (digit !== '_' && exponent < 10000) exponent = exponent * 10 + Number(digit);
  }
  return exponent;
}

/** strconv's underscoreOK: each underscore between digits (a base prefix counts as a digit). */
function underscoresSeparateDigits(text: string): boolean {
  let rest = text.replace(/^[+-]/, '');
  let previous: 'start' | 'digit' | 'underscore' | 'other' = 'start';
  let digitPattern = /[0-9]/;
  if (/^0[xXbBoO]/.test(rest)) {
    previous = 'digit';
    if (/^0[xX]/.test(rest)) digitPattern = /[0-9a-fA-F]/;
    rest = rest.slice(2);
  }
  for (const char of rest) {
    if (digitPattern.test(char)) previous = 'digit';
    else if (char === '_') {
      if (previous !== 'digit') return false;
      previous = 'underscore';
    } else if (previous === 'underscore') return false;
    else previous = 'other';
  }
  return previous !== 'underscore';
}

function parseHexFloat(match: RegExpExecArray): number | undefined {
  const body = (match[2] as string).replaceAll('_', '');
  if (!/[0-9a-fA-F]/.test(body)) return undefined;
  const [whole = '', fraction = ''] = body.split('.');
  const mantissa = BigInt(`0x${whole}${fraction}0`) >> 4n; // the trailing 0 keeps "0x" + "" valid
  const exponent = (match[3] === '-' ? -1 : 1) * cappedExponent(match[4] as string) - 4 * fraction.length;
  const value = nearestFloat64(mantissa, exponent);
  if (value === undefined) return undefined;
  return match[1] === '-' ? -value : value;
}

/** mantissa × 2^exponent rounded to the nearest float64 (ties to even); undefined on overflow. */
function nearestFloat64(mantissa: bigint, exponent: number): number | undefined {
  if (mantissa === 0n) return 0;
  const top = mantissa.toString(2).length - 1 + exponent;
  const lowest = Math.max(top - 52, MIN_FLOAT64_EXPONENT);
  const shift = lowest - exponent;
  let kept = shift > 0 ? mantissa >> BigInt(shift) : mantissa << BigInt(-shift);
  if (shift > 0) {
    const dropped = mantissa - (kept << BigInt(shift));
    const half = 1n << BigInt(shift - 1);
    if (dropped > half || (dropped === half && (kept & 1n) === 1n)) kept += 1n;
  }
  const roundedTop = kept.toString(2).length - 1 + lowest;
  if (roundedTop > MAX_FLOAT64_EXPONENT) return undefined;
  return Number(kept) * 2 ** lowest;
}

// --- encoding/json

/**
 * encoding/json.Marshal of a decoded JSON value: object keys sorted byte-wise (UTF-8), `<`, `>`
 * and `&` escaped as \u003c etc., U+2028/U+2029 escaped, numbers as ES6 prints them except -0.
 */
export function marshalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return quoteJson(value);
  if (typeof value === 'number') return Object.is(value, -0) ? '-0' : String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (Array.isArray(value)) return `[${value.map(marshalJson).join(',')}]`;
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object).sort(compareUtf8);
  return `{${keys.map((key) => `${quoteJson(key)}:${marshalJson(object[key])}`).join(',')}}`;
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
};
// Control characters, the HTML-sensitive three, the JavaScript line terminators, and lone
// surrogates (invalid UTF-8 in Go, which writes \ufffd for them).
const NEEDS_ESCAPE =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters Go escapes
  /["\\\u0000-\u001f<>&\u2028\u2029]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

function quoteJson(text: string): string {
  return `"${text.replace(NEEDS_ESCAPE, escapeForGo)}"`;
}

function escapeForGo(char: string): string {
  const short = SHORT_ESCAPES[char];
  if (short) return short;
  const code = char.charCodeAt(0);
  if (code >= 0xd800 && code <= 0xdfff) return '\ufffd';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

/** Byte-wise order of the strings' UTF-8 encodings (Go's string comparison), i.e. code point order. */
export function compareUtf8(a: string, b: string): number {
  const x = a.toWellFormed();
  const y = b.toWellFormed();
  const length = Math.min(x.length, y.length);
  for (let i = 0; i < length; i++) {
    const p = x.charCodeAt(i);
    const q = y.charCodeAt(i);
    if (p !== q) return codePointRank(p) - codePointRank(q);
  }
  return x.length - y.length;
}

/** UTF-16 units ordered as their code points: surrogates (code points above U+FFFF) sort last. */
function codePointRank(unit: number): number {
  return unit >= 0xd800 && unit <= 0xdfff ? unit + 0x2000 : unit >= 0xe000 ? unit - 0x800 : unit;
}

export type Unmarshaled = { ok: true; value: unknown } | { ok: false; message: string };

// Go's decoder refuses nesting deeper than this (encoding/json's maxNestingDepth).
const MAX_NESTING_DEPTH = 10000;
// An escape that JSON.parse turns into a surrogate, which may be a lone one.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/**
 * encoding/json.Unmarshal into an `any`: JSON.parse, and what Go refuses beyond it (a number out
 * of float64's range, nesting deeper than 10000) or decodes differently (a lone surrogate escape
 * becomes U+FFFD).
 */
export function unmarshalJson(text: string): Unmarshaled {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (thrown) {
    return { ok: false, message: (thrown as Error).message };
  }
  const problem = undecodableByGo(value);
  if (problem) return { ok: false, message: problem };
  return { ok: true, value: SURROGATE_ESCAPE.test(text) ? wellFormed(value) : value };
}

/** Why Go's decoder would refuse a value JSON.parse accepted; walked without recursion. */
function undecodableByGo(value: unknown): string | undefined {
  const pending: [unknown, number][] = [[value, 0]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item === 'number' && !Number.isFinite(item)) {
      return 'json: cannot unmarshal number into Go value of type float64 (out of range)';
    }
    if (typeof item !== 'object' || item === null) continue;
    if (depth >= MAX_NESTING_DEPTH) return `exceeded max depth of ${MAX_NESTING_DEPTH}`;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return undefined;
}

function wellFormed(value: unknown): unknown {
  if (typeof value === 'string') return value.toWellFormed();
  if (Array.isArray(value)) return value.map(wellFormed);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    Object.defineProperty(out, key.toWellFormed(), {
      value: wellFormed((value as Record<string, unknown>)[key]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

// --- Go's words for values, for messages

/** Go's %T of a value encoding/json decoded. */
export function goTypeName(value: unknown): string {
  if (value === null || value === undefined) return '<nil>';
  if (typeof value === 'string') return 'string';
  if (typeof value === 'number') return 'float64';
  if (typeof value === 'boolean') return 'bool';
  if (Array.isArray(value)) return '[]interface {}';
  return 'map[string]interface {}';
}

/** Go's %q of a string, close enough for a message. */
export function goQuote(text: string): string {
  return JSON.stringify(text);
}
