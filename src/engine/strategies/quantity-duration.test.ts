// Quantity and Duration. The tables are what the reference computes for the same text or number
// (k8s.io/apimachinery v0.36.3 resource.ParseQuantity(s).MilliValue() and
// resource.NewMilliQuantity(int64(f), DecimalSI).String(); Go 1.26 time.ParseDuration and
// (time.Duration(int64(f)) * time.Second).String(), on amd64), wrap-arounds included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import { compiled, int, obj, object, root, spec, str, versions } from '../test-support.ts';
import {
  canonicalMilliQuantity,
  durationSeconds,
  formatDuration,
  quantityMilliValue,
} from './quantity-duration.ts';

// [text, its millivalue as the reference writes it (a float64), or 'error']
const QUANTITY_PARSE: [string, number | 'error'][] = [
  ['0', 0],
  ['-0', 0],
  ['.', 0],
  ['.Ki', 0],
  ['.Ei', 'error'],
  ['1', 1000],
  ['1.5', 1500],
  ['0.5', 500],
  ['500m', 500],
  ['1Gi', 1073741824000],
  ['1.5Gi', 1610612736000],
  ['1G', 1000000000000],
  ['1E', 0],
  ['8Ei', -1000],
  ['-8Ei', 1000],
  ['1e3', 1000000],
  ['1E3', 1000000],
  ['1e-3', 1],
  ['1e100', 0],
  ['1e4294967296', 1000],
  ['1e99999999999999999999', 'error'],
  ['1Ee3', 'error'],
  ['1e', 'error'],
  ['1KiB', 'error'],
  ['1u', 1],
  ['-1u', -1],
  ['1n', 1],
  ['-1.5m', -2],
  ['-1.0005', -1001],
  ['-1.0000000005', -999],
  ['1.0000000001', 1001],
  [' 1', 'error'],
  ['0x10', 'error'],
  ['1234567890123456789', -1363962815083169300],
  ['-1234567890123456789', -7888470988683],
  ['123456789012345678', -5670419503621183000],
  ['+69219509893105593M', 2771150092644776400],
  ['9223372036854775807', -1000],
  ['-9223372036854775808m', 0],
  ['1234567890123456789e30', -3110155753709633500],
  ['1.5e3', 1500000],
  ['', 'error'],
  ['007', 7000],
  ['m', 0],
  ['+', 0],
];
// [the integer field's value, the string the reference writes]
const QUANTITY_FORMAT: [number, string][] = [
  [0, '0'],
  [1, '1m'],
  [-1, '-1m'],
  [10, '10m'],
  [1000, '1'],
  [1500, '1500m'],
  [-1500, '-1500m'],
  [1000000, '1k'],
  [2000000, '2k'],
  [1.5, '1m'],
  [-1.9, '-1m'],
  [999999, '999999m'],
  [1000000000000000000, '1P'],
  [1234567890123456800, '1234567890123456768m'],
  [-1234567890123456800, '-1234567890123456768m'],
  [9223372036854776000, '-9223372036854775808m'],
  [-9223372036854776000, '-9223372036854775808m'],
  [1e21, '-9223372036854775808m'],
];
// [text, whole seconds, or 'error']
const DURATION_PARSE: [string, number | 'error'][] = [
  ['0', 0],
  ['-0', 0],
  ['0s', 0],
  ['1s', 1],
  ['1.5s', 'error'],
  ['1h30m', 5400],
  ['5m', 300],
  ['1000ms', 1],
  ['.5s', 'error'],
  ['1.s', 1],
  ['.s', 'error'],
  ['s', 'error'],
  ['1', 'error'],
  ['1x', 'error'],
  ['1\u00b5s', 'error'],
  ['1\u03bcs', 'error'],
  ['1e3s', 'error'],
  ['-1s', -1],
  ['1h1h', 7200],
  ['2562047h47m16.854775807s', 'error'],
  ['2562047h47m16.854775808s', 'error'],
  ['-2562047h47m16.854775808s', 'error'],
  ['9223372036s', 9223372036],
  ['9223372037s', 'error'],
  ['1.000000001s', 'error'],
  ['0.000000001h', 'error'],
  ['1.00000000000000000000000000000000000001s', 1],
  ['100000000000000000000s', 'error'],
  ['1h ', 'error'],
  ['1H', 'error'],
  ['', 'error'],
];
const DURATION_FORMAT: [number, string][] = [
  [0, '0s'],
  [1, '1s'],
  [-1, '-1s'],
  [59, '59s'],
  [60, '1m0s'],
  [61, '1m1s'],
  [300, '5m0s'],
  [3600, '1h0m0s'],
  [5400, '1h30m0s'],
  [90061, '25h1m1s'],
  [86400, '24h0m0s'],
  [1.9, '1s'],
  [-1.9, '-1s'],
  [9223372036, '2562047h47m16s'],
  [9223372037, '-2562047h47m16.709551616s'],
  [-9223372037, '2562047h47m16.709551616s'],
  [10000000000, '-2346317h47m53.709551616s'],
  [9223372036854776000, '0s'],
  [-9223372036854776000, '0s'],
];

const quantity = (hubPath: string, spokePath: string, ack = true) => ({
  strategy: 'Quantity',
  quantity: { hubPath, spokePath },
  acknowledgeLossy: ack,
});
const duration = (hubPath: string, spokePath: string, ack = true) => ({
  strategy: 'Duration',
  duration: { hubPath, spokePath },
  acknowledgeLossy: ack,
});

function refusal(
  hub: Record<string, TargetSchema>,
  spoke: Record<string, TargetSchema>,
  rules: unknown[],
): string {
  const result = compile(spec('v2', { v1: rules }), versions({ v2: root(hub), v1: root(spoke) }));
  expect(result.ok).toBe(false);
  return result.ok ? '' : result.diagnostics.map((d) => d.message).join('\n');
}

function specOf(result: ReturnType<typeof convert>): unknown {
  return result.ok ? (result.object as { spec: unknown }).spec : result.error.message;
}

const goInt64 = (value: number) =>
  value >= -(2 ** 63) && value < 2 ** 63 ? BigInt(Math.trunc(value)) : -(2n ** 63n);

describe('resource.Quantity as the reference computes it', () => {
  it.each(QUANTITY_PARSE)('%j has the millivalue %j', (text, expected) => {
    const parsed = quantityMilliValue(text);
    expect(typeof parsed === 'string' ? 'error' : Number(parsed)).toBe(expected);
  });

  it.each(QUANTITY_FORMAT)('%j millis are written %j', (value, expected) => {
    expect(canonicalMilliQuantity(goInt64(value))).toBe(expected);
  });
});

describe('time.Duration as the reference computes it', () => {
  it.each(DURATION_PARSE)('%j is %j seconds', (text, expected) => {
    const parsed = durationSeconds(text);
    expect(typeof parsed === 'string' ? 'error' : Number(parsed)).toBe(expected);
  });

  it.each(DURATION_FORMAT)('%j seconds are written %j', (value, expected) => {
    expect(formatDuration(BigInt.asIntN(64, goInt64(value) * 1_000_000_000n))).toBe(expected);
  });

  it('writes durations under a second in ms, µs and ns', () => {
    expect([1_500_000n, 1_500n, 15n, -2_000_000n].map(formatDuration)).toEqual([
      '1.5ms',
      '1.5\u00b5s',
      '15ns',
      '-2ms',
    ]);
  });
});

describe('Quantity and Duration', () => {
  const router = compiled(
    { cpuRequest: str(), timeout: str(), memoryMillis: int(), interval: int() },
    { cpuMillis: int(), timeoutSeconds: int(), memory: str(), intervalText: str() },
    [
      quantity('spec.cpuRequest', 'spec.cpuMillis'),
      duration('spec.timeout', 'spec.timeoutSeconds'),
      quantity('spec.memoryMillis', 'spec.memory'),
      duration('spec.interval', 'spec.intervalText'),
    ],
  );

  it('convert string to integer and back, each side read from the schemas, as the reference docs show', () => {
    const hub = object('v2', {
      cpuRequest: '500m',
      timeout: '5m',
      memoryMillis: 1073741824000,
      interval: 90,
    });
    const down = convert(router, hub, 'v2', 'v1');
    expect(specOf(down)).toEqual({
      cpuMillis: 500,
      timeoutSeconds: 300,
      memory: '1073741824',
      intervalText: '1m30s',
    });
    expect(specOf(convert(router, (down as { object: unknown }).object, 'v1', 'v2'))).toEqual({
      cpuRequest: '500m',
      timeout: '5m0s',
      memoryMillis: 1073741824000,
      interval: 90,
    });
  });

  it("are lossy both ways: the string's spelling one way, integers out of range the other", () => {
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    const message = refusal({ q: str() }, { q: int() }, [quantity('spec.q', 'spec.q', false)]);
    expect(message).toMatch(/one canonical spelling/);
    expect(message).toMatch(/millivalue outside int64/);
    expect(refusal({ d: int() }, { d: str() }, [duration('spec.d', 'spec.d', false)])).toMatch(/292 years/);
  });

  it('write nothing for an absent field', () => {
    expect(specOf(convert(router, object('v2', {}), 'v2', 'v1'))).toEqual({});
  });

  describe('fail the conversion as the reference does', () => {
    it.each([
      [
        'a quantity that is not a string',
        'v2',
        { cpuRequest: 1 },
        /quantity: value at "spec.cpuRequest" is not a string/,
      ],
      [
        'a quantity k8s does not parse',
        'v2',
        { cpuRequest: '1KiB' },
        /quantity: parse "1KiB": quantities must match/,
      ],
      [
        'a duration with a fraction of a second',
        'v2',
        { timeout: '1.5s' },
        /is not a whole number of seconds/,
      ],
      ['a duration Go does not parse', 'v2', { timeout: '5 minutes' }, /time: unknown unit " minutes"/],
      [
        'an integer that is not a number',
        'v1',
        { cpuMillis: '500' },
        /quantity: value at "spec.cpuMillis" is not numeric/,
      ],
      [
        'seconds that are not a number',
        'v1',
        { timeoutSeconds: null },
        /duration: value at "spec.timeoutSeconds" is not numeric/,
      ],
    ])('%s', (_, version, fields, message) => {
      expect(
        specOf(convert(router, object(version, fields), version, version === 'v2' ? 'v1' : 'v2')),
      ).toMatch(message);
    });
  });

  it('refuse two strings, two integers, or a side of another type', () => {
    for (const [hub, spoke] of [
      [str(), str()],
      [int(), int()],
      [str(), obj({ x: int() })],
      [{ type: 'number' }, str()],
    ] as const) {
      expect(refusal({ q: hub }, { q: spoke }, [quantity('spec.q', 'spec.q')])).toMatch(
        /Quantity needs one side to be a string and the other an integer/,
      );
    }
    expect(refusal({ q: str() }, { q: int() }, [duration('spec.q', 'spec.r')])).toMatch(
      /declares no field spec\.r/,
    );
  });

  describe('round trips', () => {
    const pairs = compiled({ q: str(), d: str() }, { q: int(), d: int() }, [
      quantity('spec.q', 'spec.q'),
      duration('spec.d', 'spec.d'),
    ]);
    const millis = fc
      .bigInt({ min: -(10n ** 18n) + 1n, max: 2n ** 63n - 1n })
      .map(Number)
      .filter((n) => n < 2 ** 63);
    const seconds = fc.integer({ min: -9223372036, max: 9223372036 });

    it('restore integers in range, and canonical strings', () => {
      fc.assert(
        fc.property(millis, seconds, (q, d) => {
          const spoke = object('v1', { q, d });
          const up = convert(pairs, spoke, 'v1', 'v2');
          expect(specOf(convert(pairs, (up as { object: unknown }).object, 'v2', 'v1'))).toEqual(spoke.spec);
          const hub = (up as { object: unknown }).object;
          const down = convert(pairs, hub, 'v2', 'v1');
          expect(specOf(convert(pairs, (down as { object: unknown }).object, 'v1', 'v2'))).toEqual(
            (hub as { spec: unknown }).spec,
          );
        }),
      );
    });

    it('change a string spelt otherwise, and integers out of range, as the verdicts say', () => {
      const down = convert(pairs, object('v2', { q: '0.5', d: '5m' }), 'v2', 'v1');
      expect(specOf(convert(pairs, (down as { object: unknown }).object, 'v1', 'v2'))).toEqual({
        q: '500m',
        d: '5m0s',
      });
      const up = convert(pairs, object('v1', { d: 9223372037 }), 'v1', 'v2');
      expect(specOf(convert(pairs, (up as { object: unknown }).object, 'v2', 'v1'))).toMatch(
        /not a whole number of seconds/,
      );
    });

    it('never throw, whatever the fields hold', () => {
      const anything = fc.oneof(
        fc.jsonValue(),
        fc.double(),
        fc.string(),
        fc.stringMatching(/^[-+]?[0-9.]{0,25}[eEinumkKMGTP]{0,3}[-+]?[0-9]{0,12}$/),
      );
      fc.assert(
        fc.property(
          fc.dictionary(fc.constantFrom('q', 'd', 'other'), anything),
          fc.boolean(),
          (fields, down) => {
            const result = down
              ? convert(pairs, object('v2', fields), 'v2', 'v1')
              : convert(pairs, object('v1', fields), 'v1', 'v2');
            expect(typeof result.ok).toBe('boolean');
          },
        ),
      );
    });
  });
});
