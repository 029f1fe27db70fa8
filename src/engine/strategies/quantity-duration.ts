// Quantity and Duration: a string on one side, an integer on the other, which side is which read
// from the two schemas. Quantity: a Kubernetes resource.Quantity ("500m", "1.5Gi", "2e3") and
// its millivalue (Quantity.MilliValue()); the integer is written back as the canonical spelling
// of resource.NewMilliQuantity(n, DecimalSI). Duration: a Go duration ("1h30m") and whole
// seconds; a duration with a fraction of a second fails the conversion, and seconds are written
// back as Go's Duration.String() ("5m0s").
//
// Both reproduce Go's arithmetic to the bit, int64 wrap-around included: the integer is
// converted as Go's int64(float64) does on amd64 (out of range: math.MinInt64), a millivalue
// out of int64 range is what k8s returns (0 for an int64 amount, the low 64 bits for a decimal
// one), and seconds beyond ±292 years wrap when multiplied into nanoseconds.
//
// Verdicts: lossy both ways, each for its own reason. String → integer: the integer is written
// back in one canonical spelling of several ("0.5" and "500m" are the same quantity, "5m" and
// "5m0s" the same duration), so a string spelt otherwise does not come back as it was. Integer →
// string: the round trip restores every integer a field is likely to hold, but not all: seconds
// beyond ±292 years wrap around in nanoseconds, and a millivalue outside int64, or of 19 digits
// below -10^18 (which k8s reads back through int64 wrap-around), reads back as another number.
// The reference counts string → integer lossless and integer → string lossy; both need
// acknowledgeLossy, so the same configs compile and only the per-direction verdict differs.
import type { RuleOf } from '../../api/rules.ts';
import { error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import type { SchemaNode } from '../schema.ts';
import { failed, type Located, locate, lookup, type TransformResult } from './common.ts';
import { declaredScalarKind } from './scalar-fields.ts';

type Rule = RuleOf<'Quantity'> | RuleOf<'Duration'>;

interface Units {
  name: 'Quantity' | 'Duration';
  /** The integer a string stands for, or why Go refuses it. */
  parse(text: string): bigint | string;
  /** The canonical string of an int64. */
  format(value: bigint): string;
  /** Why a string does not always come back as it was. */
  spelling: string;
  /** Why an integer does not always come back as it was. */
  range: string;
}

const QUANTITY: Units = {
  name: 'Quantity',
  parse: quantityMilliValue,
  format: canonicalMilliQuantity,
  spelling: '"0.5" and "500m" are the same quantity, and 500 millis come back as "500m"',
  range:
    'a millivalue outside int64, or of 19 digits below -10^18, reads back as another number: k8s parses such a string through int64 wrap-around',
};

const DURATION: Units = {
  name: 'Duration',
  parse: durationSeconds,
  format: (seconds) => formatDuration(BigInt.asIntN(64, seconds * NANOS_PER_SECOND)),
  spelling: '"5m" and "5m0s" are the same duration, and 300 seconds come back as "5m0s"',
  range:
    'seconds beyond ±9223372036 (292 years) overflow int64 nanoseconds, so the string reads back as another duration',
};

export function quantityDuration(rule: Rule, at: Located): TransformResult {
  const units = rule.strategy === 'Quantity' ? QUANTITY : DURATION;
  const { hubPath, spokePath } = rule.strategy === 'Quantity' ? rule.quantity : rule.duration;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const hubKind = declaredScalarKind(hub.node.schema);
  const spokeKind = declaredScalarKind(spoke.node.schema);
  const stringOnHub = hubKind === 'string' && spokeKind === 'integer';
  if (!stringOnHub && !(hubKind === 'integer' && spokeKind === 'string')) {
    return {
      ok: false,
      diagnostics: [
        error(
          'ShapeMismatch',
          locate(at, hubPath),
          `${units.name} needs one side to be a string and the other an integer (hub ${hubPath} is ${kindName(hub.node)}, spoke ${spokePath} is ${kindName(spoke.node)}).`,
          'Point the rule at a string field on one side and an integer field on the other.',
        ),
      ],
    };
  }
  const text = stringOnHub ? hub.node : spoke.node;
  const integer = stringOnHub ? spoke.node : hub.node;
  const toInteger: Direction = stringOnHub ? 'hubToSpoke' : 'spokeToHub';
  const toText: Direction = stringOnHub ? 'spokeToHub' : 'hubToSpoke';
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'run' as const };
  const ops = {
    [toInteger]: { ...base, from: text.segments, to: integer.segments, run: parseOp(units, text, integer) },
    [toText]: { ...base, from: integer.segments, to: text.segments, run: formatOp(units, integer, text) },
  } as Record<Direction, Op>;
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [hub.node.segments], spoke: [spoke.node.segments] },
      ops,
      losses: {
        [toInteger]: `${text.path} comes back from ${integer.path} in one canonical spelling, which may not be the one the object had (${units.spelling}).`,
        [toText]: `${integer.path} may not come back from ${text.path} as the same number: ${units.range}.`,
      },
      onSkip: 'lose',
    },
  };
}

function kindName(node: SchemaNode): string {
  return declaredScalarKind(node.schema) ?? node.schema.type ?? 'untyped';
}

function parseOp(units: Units, text: SchemaNode, integer: SchemaNode): OpRun {
  const { segments: from, path } = text;
  const to = integer.segments;
  const label = units.name.toLowerCase();
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (typeof value !== 'string')
      return { message: `${label}: value at ${JSON.stringify(path)} is not a string`, path };
    const parsed = units.parse(value);
    if (typeof parsed === 'string')
      return { message: `${label}: parse ${JSON.stringify(value)}: ${parsed}`, path };
    return writeField(output, to, Number(parsed));
  };
}

function formatOp(units: Units, integer: SchemaNode, text: SchemaNode): OpRun {
  const { segments: from, path } = integer;
  const to = text.segments;
  const label = units.name.toLowerCase();
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (typeof value !== 'number')
      return { message: `${label}: value at ${JSON.stringify(path)} is not numeric`, path };
    return writeField(output, to, units.format(goInt64(value)));
  };
}

// --- Go's integers

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const TWO_63 = 2n ** 63n;

/** Go's int64(f) on amd64: truncation, and math.MinInt64 for a value out of range. */
function goInt64(value: number): bigint {
  return value >= -(2 ** 63) && value < 2 ** 63 ? BigInt(Math.trunc(value)) : INT64_MIN;
}

function fitsInt64(value: bigint): boolean {
  return value >= INT64_MIN && value <= INT64_MAX;
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

// --- resource.Quantity (k8s.io/apimachinery/pkg/api/resource)

const QUANTITY_FORMAT_WRONG =
  "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const QUANTITY_NUMERIC = 'unable to parse numeric part of quantity';
const QUANTITY_SUFFIX = "unable to parse quantity's suffix";

interface QuantityParts {
  positive: boolean;
  /** The number as written, sign included (what inf.Dec parses). */
  value: string;
  /** Integer digits without leading zeros ("0" when none). */
  num: string;
  /** Fraction digits. */
  denom: string;
  suffix: string;
}

type Suffix = { base: 10 | 2; exponent: number; format: 'DecimalSI' | 'BinarySI' | 'DecimalExponent' };

const SUFFIXES: ReadonlyMap<string, Suffix> = new Map([
  ...(['n', 'u', 'm', '', 'k', 'M', 'G', 'T', 'P', 'E'] as const).map(
    (s, i) => [s, { base: 10, exponent: i * 3 - 9, format: 'DecimalSI' }] as [string, Suffix],
  ),
  ...(['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const).map(
    (s, i) => [s, { base: 2, exponent: (i + 1) * 10, format: 'BinarySI' }] as [string, Suffix],
  ),
]);

const DECIMAL_SUFFIXES: ReadonlyMap<number, string> = new Map([
  [-3, 'm'],
  [0, ''],
  [3, 'k'],
  [6, 'M'],
  [9, 'G'],
  [12, 'T'],
  [15, 'P'],
  [18, 'E'],
]);

/** ParseQuantity(text).MilliValue(), or ParseQuantity's error. */
export function quantityMilliValue(text: string): bigint | string {
  if (text.length === 0) return QUANTITY_FORMAT_WRONG;
  if (text === '0') return 0n;
  const parts = splitQuantity(text);
  if (!parts) return QUANTITY_FORMAT_WRONG;
  const suffix = interpretSuffix(parts.suffix);
  if (!suffix) return QUANTITY_SUFFIX;
  return int64MilliValue(parts, suffix) ?? decimalMilliValue(parts, suffix);
}

/** parseQuantityString: sign, digits, fraction, suffix; undefined where it reports ErrFormatWrong. */
function splitQuantity(text: string): QuantityParts | undefined {
  const end = text.length;
  let positive = true;
  let pos = 0;
  if (text[0] === '-' || text[0] === '+') {
    positive = text[0] === '+';
    pos++;
  }
  while (pos < end && text[pos] === '0') pos++;
  if (pos >= end) return { positive, value: '0', num: '0', denom: '', suffix: '' };
  let i = pos;
  while (i < end && isDigit(text[i])) i++;
  if (i >= end) return { positive, value: text, num: text.slice(pos), denom: '', suffix: '' };
  const num = text.slice(pos, i) || '0';
  pos = i;
  let denom = '';
  if (text[pos] === '.') {
    pos++;
    i = pos;
    while (i < end && isDigit(text[i])) i++;
    denom = text.slice(pos, i);
    if (i >= end) return { positive, value: text, num, denom, suffix: '' };
    pos = i;
  }
  const value = text.slice(0, pos);
  const suffixStart = pos;
  i = pos;
  while (i < end && 'eEinumkKMGTP'.includes(text[i] as string)) i++;
  if (i >= end) return { positive, value, num, denom, suffix: text.slice(suffixStart) };
  pos = i;
  if (text[pos] === '-' || text[pos] === '+') pos++;
  i = pos;
  while (i < end && isDigit(text[i])) i++;
  if (i >= end) return { positive, value, num, denom, suffix: text.slice(suffixStart) };
  return undefined;
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}

/** quantitySuffixer.interpret: the table, else e/E and an int64 exponent (truncated to int32, as Go does). */
function interpretSuffix(suffix: string): Suffix | undefined {
  const known = SUFFIXES.get(suffix);
  if (known) return known;
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E')) {
    const exponent = parseGoInt64(suffix.slice(1));
    if (exponent === undefined) return undefined;
    return { base: 10, exponent: Number(BigInt.asIntN(32, exponent)), format: 'DecimalExponent' };
  }
  return undefined;
}

/** strconv.ParseInt(text, 10, 64). */
function parseGoInt64(text: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(text)) return undefined;
  const value = BigInt(text);
  return fitsInt64(value) ? value : undefined;
}

/**
 * The int64Amount path of ParseQuantity (few enough digits, scale at least nano) and its
 * MilliValue: scaled up as positiveScaleInt64 does, or down rounding away from zero.
 * Undefined where ParseQuantity falls back to inf.Dec.
 */
function int64MilliValue(parts: QuantityParts, suffix: Suffix): bigint | undefined {
  const digits = parts.num.length + parts.denom.length;
  let precision: number;
  let scale = 0;
  let mantissa = 1n;
  if (suffix.format === 'BinarySI') {
    if (suffix.exponent < 0 || parts.denom.length > 0) return undefined;
    mantissa = 1n << BigInt(suffix.exponent);
    precision = 15 - parts.num.length - Math.floor((suffix.exponent * 3) / 10) - 1;
  } else {
    scale = suffix.exponent;
    precision = 18 - digits;
  }
  if (precision < 0) return undefined;
  scale -= parts.denom.length;
  if (scale < -9) return undefined;
  const value = BigInt(parts.num + parts.denom);
  const product = value * mantissa;
  if (!fitsInt64(product)) return undefined;
  const amount = parts.positive ? product : -product;
  if (scale < -3) return roundAwayFromZero(amount, pow10(-3 - scale));
  return positiveScaleInt64(amount, scale + 3);
}

/**
 * k8s positiveScaleInt64, as MilliValue uses it (ignoring its ok): a factor of 10, 100, 1000,
 * 10^6 or 10^9 multiplies with int64 wrap-around; any other is applied ten at a time, and an
 * overflow there gives 0.
 */
function positiveScaleInt64(value: bigint, scale: number): bigint {
  if (scale === 0) return value;
  if (WRAPPING_SCALES.has(scale)) return BigInt.asIntN(64, value * pow10(scale));
  const scaled = value * pow10(scale);
  return fitsInt64(scaled) ? scaled : 0n;
}

const WRAPPING_SCALES: ReadonlySet<number> = new Set([1, 2, 3, 6, 9]);

function roundAwayFromZero(value: bigint, divisor: bigint): bigint {
  const quotient = value / divisor;
  if (quotient * divisor === value) return quotient;
  return value > 0n ? quotient + 1n : quotient - 1n;
}

/** The inf.Dec path: rounded up to nano, BinarySI capped at MaxInt64, then scaledValue to milli. */
function decimalMilliValue(parts: QuantityParts, suffix: Suffix): bigint | string {
  const decimal = /^([+-]?)([0-9]*)(?:\.([0-9]*))?$/.exec(parts.value);
  const whole = decimal?.[2] ?? '';
  const fraction = decimal?.[3] ?? '';
  if (!decimal || whole.length + fraction.length === 0) return QUANTITY_NUMERIC;
  let unscaled = BigInt(whole + fraction);
  let scale = fraction.length;
  const negative = decimal[1] === '-';
  if (suffix.base === 10) scale -= suffix.exponent;
  else unscaled <<= BigInt(suffix.exponent);
  if (unscaled !== 0n) {
    if (scale <= 9) unscaled *= pow10(9 - scale);
    else unscaled = ceilDivide(unscaled, pow10(scale - 9));
    scale = 9;
  }
  if (suffix.format === 'BinarySI' && unscaled > INT64_MAX * pow10(Math.max(scale, 0))) {
    unscaled = INT64_MAX;
    scale = 0;
  }
  return scaledToMilli(negative ? -unscaled : unscaled, scale);
}

function ceilDivide(value: bigint, divisor: bigint): bigint {
  const quotient = value / divisor;
  return quotient * divisor === value ? quotient : quotient + 1n;
}

/** k8s scaledValue(unscaled, scale, 3), int64 wrap-around and its rounding of negatives included. */
function scaledToMilli(unscaled: bigint, scale: number): bigint {
  const dif = scale - 3;
  if (dif === 0) return BigInt.asIntN(64, unscaled);
  if (dif < 0) {
    const factor = -dif >= 19 ? INT64_MIN : pow10(-dif);
    return BigInt.asIntN(64, BigInt.asIntN(64, unscaled) * factor);
  }
  const divisor = pow10(dif);
  if (unscaled < INT64_MAX && dif < 19) {
    const low = BigInt.asIntN(64, unscaled);
    const quotient = low / divisor;
    return low % divisor !== 0n ? quotient + 1n : quotient;
  }
  const quotient = unscaled / divisor;
  return BigInt.asIntN(64, BigInt.asIntN(64, quotient) + (unscaled % divisor !== 0n ? 1n : 0n));
}

/** NewMilliQuantity(value, DecimalSI).String(): factors of ten moved into an SI suffix. */
export function canonicalMilliQuantity(value: bigint): string {
  if (value === 0n) return '0';
  let amount = value;
  let exponent = -3;
  if (amount !== INT64_MIN) {
    while ((amount >= 10n || amount <= -10n) && amount % 10n === 0n) {
      amount /= 10n;
      exponent++;
    }
  }
  const remainder = exponent % 3;
  if (remainder === 1 || remainder === -2) {
    amount *= 10n;
    exponent -= 1;
  } else if (remainder === 2 || remainder === -1) {
    amount *= 100n;
    exponent -= 2;
  }
  return `${amount}${DECIMAL_SUFFIXES.get(exponent) ?? ''}`;
}

// --- time.Duration

const NANOS_PER_SECOND = 1_000_000_000n;
const DURATION_UNITS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', NANOS_PER_SECOND],
  ['m', 60n * NANOS_PER_SECOND],
  ['h', 3600n * NANOS_PER_SECOND],
]);

/** time.ParseDuration(text) in whole seconds, or why it fails. */
export function durationSeconds(text: string): bigint | string {
  const nanos = parseDuration(text);
  if (typeof nanos === 'string') return nanos;
  if (nanos % NANOS_PER_SECOND !== 0n) return `${JSON.stringify(text)} is not a whole number of seconds`;
  return nanos / NANOS_PER_SECOND;
}

/** time.ParseDuration: nanoseconds, with Go's overflow checks on uint64 arithmetic. */
export function parseDuration(text: string): bigint | string {
  const invalid = `time: invalid duration ${JSON.stringify(text)}`;
  let s = text;
  let negative = false;
  if (s[0] === '-' || s[0] === '+') {
    negative = s[0] === '-';
    s = s.slice(1);
  }
  if (s === '0') return 0n;
  if (s === '') return invalid;
  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) return invalid;
    const whole = leadingInt(s);
    if (whole === undefined) return invalid;
    let v = whole.value;
    const sawWhole = whole.rest.length !== s.length;
    s = whole.rest;
    let fraction = { value: 0n, scale: 1, rest: s };
    let sawFraction = false;
    if (s[0] === '.') {
      fraction = leadingFraction(s.slice(1));
      sawFraction = fraction.rest.length !== s.length - 1;
      s = fraction.rest;
    }
    if (!sawWhole && !sawFraction) return invalid;
    let i = 0;
    while (i < s.length && s[i] !== '.' && !isDigit(s[i])) i++;
    if (i === 0) return `time: missing unit in duration ${JSON.stringify(text)}`;
    const name = s.slice(0, i);
    s = s.slice(i);
    const unit = DURATION_UNITS.get(name);
    if (unit === undefined)
      return `time: unknown unit ${JSON.stringify(name)} in duration ${JSON.stringify(text)}`;
    if (v > TWO_63 / unit) return invalid;
    v *= unit;
    if (fraction.value > 0n) {
      v += BigInt(Math.trunc(Number(fraction.value) * (Number(unit) / fraction.scale)));
      if (v > TWO_63) return invalid;
    }
    total += v;
    if (total > TWO_63) return invalid;
  }
  if (negative) return BigInt.asIntN(64, -total);
  return total > INT64_MAX ? invalid : total;
}

function leadingInt(s: string): { value: bigint; rest: string } | undefined {
  let value = 0n;
  let i = 0;
  for (; i < s.length && isDigit(s[i]); i++) {
    if (value > TWO_63 / 10n) return undefined;
    value = value * 10n + BigInt(s.charCodeAt(i) - 48);
    if (value > TWO_63) return undefined;
  }
  return { value, rest: s.slice(i) };
}

function leadingFraction(s: string): { value: bigint; scale: number; rest: string } {
  let value = 0n;
  let scale = 1;
  let overflow = false;
  let i = 0;
  for (; i < s.length && isDigit(s[i]); i++) {
    if (overflow) continue;
    if (value > INT64_MAX / 10n) {
      overflow = true;
      continue;
    }
    const next = value * 10n + BigInt(s.charCodeAt(i) - 48);
    if (next > TWO_63) {
      overflow = true;
      continue;
    }
    value = next;
    scale *= 10;
  }
  return { value, scale, rest: s.slice(i) };
}

/** Duration.String(): h, m and s with the seconds' fraction, or ms/µs/ns under a second. */
export function formatDuration(nanos: bigint): string {
  const negative = nanos < 0n;
  let u = negative ? -nanos : nanos;
  let out: string;
  if (u < NANOS_PER_SECOND) {
    if (u === 0n) return '0s';
    const [precision, unit] = u < 1_000n ? [0, 'ns'] : u < 1_000_000n ? [3, '\u00b5s'] : [6, 'ms'];
    const fraction = formatFraction(u, precision);
    out = `${fraction.whole}${fraction.text}${unit}`;
  } else {
    const fraction = formatFraction(u, 9);
    u = fraction.whole;
    out = `${u % 60n}${fraction.text}s`;
    u /= 60n;
    if (u > 0n) {
      out = `${u % 60n}m${out}`;
      u /= 60n;
      if (u > 0n) out = `${u}h${out}`;
    }
  }
  return negative ? `-${out}` : out;
}

/** fmtFrac: the last `precision` digits as a fraction without trailing zeros, and what is left. */
function formatFraction(value: bigint, precision: number): { text: string; whole: bigint } {
  let v = value;
  let text = '';
  let printing = false;
  for (let i = 0; i < precision; i++) {
    const digit = v % 10n;
    printing ||= digit !== 0n;
    if (printing) text = `${digit}${text}`;
    v /= 10n;
  }
  return { text: printing ? `.${text}` : '', whole: v };
}
