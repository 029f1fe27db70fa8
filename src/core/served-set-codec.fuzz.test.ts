// Fuzz: served-set Lease annotations as a hostile writer (anyone who may write Leases in an
// instance's namespace) could publish them. Whatever the value, decoding returns, and a value
// that is not exactly what a writer encoded is "cannot read" with a short reason, never a set
// that could overstate what a replica serves; every valid set still round-trips.
import { createHash } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { FUZZ_TEST_TIMEOUT_MS, fuzz } from '../../test/support/fuzz.ts';
import {
  type DecodedServedSet,
  decodeServedSet,
  type ExpectedSet,
  encodeServedSet,
  expectedSetOf,
  viewBehindMarker,
} from './served-set-codec.ts';

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

/** A reason says what is wrong in a line; it never echoes a hostile value back at length. */
const MAX_REASON_CHARS = 200;

function decodeSafely(value: string, expected: ExpectedSet): DecodedServedSet {
  let decoded: DecodedServedSet | undefined;
  expect(
    () => {
      decoded = decodeServedSet(value, expected);
    },
    `decoding ${JSON.stringify(value.slice(0, 80))} threw`,
  ).not.toThrow();
  return decoded as DecodedServedSet;
}

function expectCannotRead(decoded: DecodedServedSet, what: string): void {
  expect(decoded.kind, `${what} must be "cannot read", not ${JSON.stringify(decoded)}`).toBe('undecodable');
  if (decoded.kind !== 'undecodable') return;
  expect(decoded.reason.length, `${what}: the refusal must say why`).toBeGreaterThan(0);
  expect(decoded.reason.length).toBeLessThanOrEqual(MAX_REASON_CHARS);
}

const targetName = fc.oneof(
  { weight: 4, arbitrary: fc.stringMatching(/^[a-z]{1,12}\.[a-z]{1,8}\.(io|com|dev)$/) },
  { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 20, unit: 'grapheme' }) },
);
const targetNames = fc.uniqueArray(targetName, { maxLength: 60 });

/** A valid value and the expected set it was encoded against: small sets (names form) and digest-form sets. */
const encoded = fc
  .oneof(
    { weight: 8, arbitrary: fc.tuple(targetNames, targetNames) },
    {
      weight: 1,
      arbitrary: fc.integer({ min: 1_100, max: 1_300 }).chain((n) =>
        fc.tuple(fc.constant(n), fc.uniqueArray(fc.nat(n - 1), { maxLength: 20 })).map(([count, gone]) => {
          const expected = Array.from({ length: count }, (_, i) => `w${i}.team${i % 7}.example.com`);
          const served = expected.filter((_, i) => !gone.includes(i));
          return [served, expected] as [string[], string[]];
        }),
      ),
    },
  )
  .map(([served, expected]) => {
    const set = expectedSetOf(expected);
    return { served, expected: set, value: encodeServedSet(served, set) };
  });

const VALUE_CHARS = [
  ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=.-_ \n\u00e9\u{1F600}',
];

/** Mutations of a valid value: each yields a different string. */
const mutation = fc.oneof(
  // A character replaced, inserted or deleted anywhere, version and form included.
  fc.tuple(fc.nat(), fc.constantFrom(...VALUE_CHARS)).map(([at, ch]) => (v: string) => {
    const i = at % v.length;
    return `${v.slice(0, i)}${ch}${v.slice(i + 1)}`;
  }),
  fc.tuple(fc.nat(), fc.constantFrom(...VALUE_CHARS)).map(([at, ch]) => (v: string) => {
    const i = at % (v.length + 1);
    return `${v.slice(0, i)}${ch}${v.slice(i)}`;
  }),
  fc.nat().map((at) => (v: string) => {
    const i = at % v.length;
    return `${v.slice(0, i)}${v.slice(i + 1)}`;
  }),
  // Truncated at any point (an annotation cut short), or something appended.
  fc.nat().map((at) => (v: string) => v.slice(0, at % v.length)),
  fc.string({ minLength: 1, maxLength: 12 }).map((tail) => (v: string) => `${v}${tail}`),
  // Another version prefix, v1 (no checksum) among them.
  fc
    .constantFrom('v1', 'v3', 'V2', 'v2 ', '', 'v22', 'v02', '\u0000v2')
    .map((version) => (v: string) => `${version}${v.slice(2)}`),
  // One bit of the decoded body flipped: the checksum, the header or the deflate stream.
  fc.tuple(fc.nat(), fc.integer({ min: 0, max: 7 })).map(([at, bit]) => (v: string) => {
    const [version, form, body = ''] = v.split('.');
    const bytes = Buffer.from(body, 'base64');
    if (bytes.length === 0) return `${v}x`;
    const i = at % bytes.length;
    bytes[i] = (bytes[i] as number) ^ (1 << bit);
    return `${version}.${form}.${bytes.toString('base64')}`;
  }),
  // Over any annotation's size: padded past the decoder's length limit.
  fc.constantFrom('A', '=', '.').map((pad) => (v: string) => `${v}${pad.repeat(256 * 1024)}`),
);

/** `v2.<form>.<body>` sealed with a correct checksum over an arbitrary payload. */
function forge(form: string, payload: Uint8Array, header: Uint8Array = new Uint8Array()): string {
  const sum = createHash('sha256').update(form).update(header).update(payload).digest().subarray(0, 16);
  const body = Buffer.concat([sum, header, deflateRawSync(payload)]);
  return `v2.${form}.${body.toString('base64')}`;
}

const MARKER_COUNT = /^(0|[1-9][0-9]{0,9})$/;

describe('fuzz: served-set Lease annotations', () => {
  it('round-trips every valid set, in either form', () => {
    fc.assert(
      fc.property(encoded, ({ served, expected, value }) => {
        const decoded = decodeSafely(value, expected);
        if (decoded.kind !== 'set')
          throw new Error(`a valid value must decode to a set: ${JSON.stringify(decoded)}`);
        expect([...decoded.served].sort()).toEqual([...new Set(served)].sort());
        expect(decoded.unsettled.size).toBe(0);
      }),
      fuzz(),
    );
  });

  it('reads every mutation of a valid value as "cannot read" with a reason, or as the very same set', () => {
    // The same set only where deflate cannot tell: the padding bits after the final block.
    fc.assert(
      fc.property(encoded, mutation, ({ served, value, expected }, mutate) => {
        const mutated = mutate(value);
        fc.pre(mutated !== value);
        const decoded = decodeSafely(mutated, expected);
        if (decoded.kind === 'set') {
          expect([...decoded.served].sort(), 'a corrupted value must never read as another set').toEqual(
            [...new Set(served)].sort(),
          );
          expect(decoded.unsettled.size).toBe(0);
        } else expectCannotRead(decoded, 'a mutation of a valid value');
      }),
      fuzz(),
    );
  });

  it('reads random strings and random bytes as "cannot read", with a reason', () => {
    const expected = expectedSetOf(['a.example.com', 'b.example.com']);
    const junk = fc.oneof(
      fc.string({ maxLength: 400, unit: 'binary' }),
      fc.uint8Array({ maxLength: 400 }).map((b) => Buffer.from(b).toString('latin1')),
      fc.uint8Array({ maxLength: 400 }).map((b) => `v2.n.${Buffer.from(b).toString('base64')}`),
      fc.uint8Array({ maxLength: 400 }).map((b) => `v2.e.${Buffer.from(b).toString('base64')}`),
      fc.string({ unit: fc.constantFrom('v', '2', '.', 'n', 'e', 't', 'b', 'A', '='), maxLength: 40 }),
    );
    fc.assert(
      fc.property(junk, (value) => {
        const decoded = decodeSafely(value, expected);
        const marker = /^v2\.[tb]\.(.*)$/s.exec(value);
        if (marker && MARKER_COUNT.test(marker[1] as string)) return;
        expectCannotRead(decoded, 'junk');
      }),
      fuzz(),
    );
  });

  it('reads the truncation and view-behind markers only with a plain count; anything else is "cannot read"', () => {
    const count = fc.oneof(
      fc.nat().map(String),
      fc.constantFrom(
        '',
        '-1',
        '01',
        '1e3',
        '0x10',
        ' 1',
        '1 ',
        '1.5',
        'NaN',
        'Infinity',
        '99999999999',
        '٣',
      ),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('t', 'b'),
        count,
        fc.option(fc.string({ maxLength: 8 })),
        (form, n, tail) => {
          const value = `v2.${form}.${n}${tail === null ? '' : `.${tail}`}`;
          const decoded = decodeSafely(value, expectedSetOf([]));
          if (tail === null && MARKER_COUNT.test(n)) {
            expect(decoded).toEqual({
              kind: form === 't' ? 'truncated' : 'viewBehind',
              servedCount: Number(n),
            });
            if (form === 'b') expect(value).toBe(viewBehindMarker(Number(n)));
          } else expectCannotRead(decoded, `the marker ${JSON.stringify(value)}`);
        },
      ),
      fuzz(),
    );
  });

  it('refuses a correctly sealed value whose payload is not a canonical name list, or reads it as a set of names', () => {
    // A hostile writer can compute the checksum: the payload itself must be checked.
    const payload = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      // Front-coded entries with hostile lengths: shared prefixes past the previous name, huge counts.
      fc
        .array(fc.integer({ min: 0, max: 300 }), { maxLength: 40 })
        .map((ns) => Uint8Array.from(ns.map((n) => n & 0xff))),
    );
    const header = fc.oneof(
      fc.constant(new Uint8Array()),
      fc.uint8Array({ maxLength: 40 }),
      fc
        .constantFrom(1, 2, 3, 4, 128)
        .map((buckets) => Uint8Array.from([buckets, ...new Array(buckets * 16).fill(0)])),
    );
    const expected = expectedSetOf(['a.example.com']);
    fc.assert(
      fc.property(fc.constantFrom('n', 'e'), payload, header, (form, bytes, head) => {
        const decoded = decodeSafely(forge(form, bytes, form === 'n' ? new Uint8Array() : head), expected);
        if (decoded.kind === 'undecodable') expectCannotRead(decoded, 'a forged value');
        else {
          // Accepted only as what it claims: a set of well-formed names.
          expect(decoded.kind).toBe('set');
          if (decoded.kind === 'set')
            for (const name of decoded.served) expect(name.length).toBeGreaterThan(0);
        }
      }),
      fuzz(),
    );
  });
});
