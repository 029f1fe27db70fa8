import { createHash } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteWriter, writeNameList } from './name-list.ts';
import {
  type DecodedServedSet,
  decodeServedSet,
  decodeServedSetOnce,
  type ExpectedSet,
  encodeServedSet,
  expectedSetOf,
  viewBehindMarker,
} from './served-set-codec.ts';

const nameArb = fc.oneof(
  fc.stringMatching(/^[a-z]{1,12}\.[a-z]{1,8}\.(io|com|dev)$/),
  fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }),
);
const namesArb = fc.uniqueArray(nameArb, { maxLength: 80 });

/** Builds a set of `n` names sharing long prefixes and suffixes, like real target names. */
function realistic(n: number, salt = ''): string[] {
  return Array.from({ length: n }, (_, i) => `widgets${salt}${i}.team${i % 37}.platform.example.com`);
}

function decodedSet(value: string, expected: string[]) {
  const decoded = decodeServedSet(value, expectedSetOf(expected));
  if (decoded.kind !== 'set') throw new Error(`expected a set, got ${JSON.stringify(decoded)}`);
  return decoded;
}

/** The names a decoded value reports served that the replica does not serve: must be none. */
function overstated(decoded: DecodedServedSet, reallyServed: ReadonlySet<string>): string[] {
  return decoded.kind === 'set' ? [...decoded.served].filter((n) => !reallyServed.has(n)) : [];
}

/** A v2 value as a hostile writer would build it: well-formed, with a correct checksum. */
function forge(form: 'n' | 'e', payload: Uint8Array, header = new Uint8Array()): string {
  const sum = createHash('sha256').update(form).update(header).update(payload).digest().subarray(0, 16);
  const body = Buffer.concat([sum, header, deflateRawSync(payload, { level: 9 })]);
  return `v2.${form}.${body.toString('base64')}`;
}

function nameList(...lists: string[][]): Uint8Array {
  const out = new ByteWriter();
  for (const list of lists) writeNameList(out, list);
  return out.finish();
}

/** Runs `decode` and reports its time and the heap it left allocated (an upper bound without GC). */
function measured(decode: () => DecodedServedSet) {
  const heapBefore = process.memoryUsage().heapUsed;
  const start = performance.now();
  const result = decode();
  return {
    result,
    ms: performance.now() - start,
    heapMb: (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20,
  };
}

describe('served-set codec', () => {
  it('round-trips any small set against the same expected set', () => {
    fc.assert(
      fc.property(namesArb, namesArb, (served, expected) => {
        const value = encodeServedSet(served, expectedSetOf(expected));
        const decoded = decodedSet(value, expected);
        expect([...decoded.served].sort()).toEqual([...served].sort());
        expect(decoded.unsettled.size).toBe(0);
      }),
    );
  });

  it('round-trips sets large enough for the digest form, with missing targets and extras', () => {
    const universe = realistic(3_500);
    const extrasPool = realistic(200, 'draining');
    fc.assert(
      fc.property(
        fc.integer({ min: 1_100, max: 3_500 }),
        fc.uniqueArray(fc.nat(3_499), { maxLength: 60 }),
        fc.uniqueArray(fc.nat(199), { maxLength: 40 }),
        (size, dropped, extra) => {
          const expected = universe.slice(0, size);
          const drop = new Set(dropped.map((i) => expected[i % size]));
          const served = [
            ...expected.filter((n) => !drop.has(n)),
            ...extra.map((i) => extrasPool[i] as string),
          ];
          const value = encodeServedSet(served, expectedSetOf(expected));
          expect(value.startsWith('v2.e.'), value.slice(0, 8)).toBe(true);
          const decoded = decodedSet(value, expected);
          expect([...decoded.served].sort()).toEqual([...new Set(served)].sort());
          expect(decoded.unsettled.size).toBe(0);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('round-trips large sets with exceptions in the digest form', () => {
    const expected = realistic(20_000);
    const served = [...expected.slice(0, 19_900), ...realistic(50, 'draining')];
    const value = encodeServedSet(served, expectedSetOf(expected));
    expect(value.startsWith('v2.e.')).toBe(true);
    expect(value.length).toBeLessThan(4_000);
    expect([...decodedSet(value, expected).served].sort()).toEqual([...served].sort());
  });

  it('never reports a target as served that the replica cannot serve, however the views differ', () => {
    // Reader and writer expect different sets (an informer a moment behind): every target the
    // reader calls served must really be served; what it cannot tell it calls unsettled.
    const universe = realistic(3_000);
    const subset = (bits: number[]) => universe.filter((_, i) => (bits[i % bits.length] ?? 0) === 1);
    const bitsArb = fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 1, maxLength: 64 });
    fc.assert(
      fc.property(bitsArb, bitsArb, bitsArb, fc.nat(50), (w, r, s, drift) => {
        const writerView = subset(w);
        const readerView = [...subset(r), ...universe.slice(0, drift)];
        const served = new Set(subset(s));
        const decoded = decodedSet(encodeServedSet(served, expectedSetOf(writerView)), readerView);
        expect(overstated(decoded, served)).toEqual([]);
        for (const name of readerView) {
          if (served.has(name)) expect(decoded.served.has(name) || decoded.unsettled.has(name)).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
  });

  it('tells apart buckets of the same size with different contents', () => {
    // Reader and writer expect as many names in every bucket, but one name differs: the
    // reader's name must not be reported served (a digest that only counted names would).
    const writerView = realistic(5_000);
    const bucketCount = 8;
    const bucketOf = (name: string) => expectedSetOf([name]).bucketing(bucketCount).bucketOfName[0];
    const replaced = writerView[0] as string;
    const stranger = realistic(500, 'other').find((n) => bucketOf(n) === bucketOf(replaced)) as string;
    const readerView = [stranger, ...writerView.slice(1)];
    const value = encodeServedSet(writerView, expectedSetOf(writerView));
    expect(value.startsWith('v2.e.')).toBe(true);
    const decoded = decodedSet(value, readerView);
    expect(decoded.served.has(stranger), 'a target the replica never compiled is reported served').toBe(
      false,
    );
    expect(decoded.unsettled.has(stranger)).toBe(true);
    expect(overstated(decoded, new Set(writerView))).toEqual([]);
  });

  it('leaves only the skewed buckets unsettled, not the whole set', () => {
    const writerView = realistic(20_000);
    const readerView = [...writerView.slice(1), 'late.example.com'];
    const decoded = decodedSet(encodeServedSet(writerView, expectedSetOf(writerView)), readerView);
    expect(decoded.served.size).toBeGreaterThan(17_000);
    expect(decoded.unsettled.size).toBeGreaterThan(0);
    expect(decoded.unsettled.size).toBeLessThan(3_000);
  });

  it('uses the self-contained names form for small sets', () => {
    expect(encodeServedSet(['a.example.com'], expectedSetOf([])).startsWith('v2.n.')).toBe(true);
  });

  it('marks an over-budget set truncated with its count, never a partial list', () => {
    const served = realistic(5_000);
    const value = encodeServedSet(served, expectedSetOf([]), { budgetBytes: 2_000 });
    expect(value).toBe('v2.t.5000');
    expect(decodeServedSet(value, expectedSetOf([]))).toEqual({ kind: 'truncated', servedCount: 5000 });
  });

  it('says "view behind" with the count of plans held, never a set, and reads it back as such', () => {
    expect(viewBehindMarker(12)).toBe('v2.b.12');
    expect(decodeServedSet('v2.b.12', expectedSetOf(['a.x.io']))).toEqual({
      kind: 'viewBehind',
      servedCount: 12,
    });
    expect(decodeServedSet('v2.b.x', expectedSetOf([]))).toEqual({
      kind: 'undecodable',
      reason: 'view behind: bad count',
    });
  });

  it('stays within the budget whatever it encodes', () => {
    fc.assert(
      fc.property(namesArb, namesArb, fc.integer({ min: 16, max: 600 }), (served, expected, budget) => {
        expect(
          encodeServedSet(served, expectedSetOf(expected), { budgetBytes: budget }).length,
        ).toBeLessThanOrEqual(Math.max(budget, `v2.t.${served.length}`.length));
      }),
    );
  });

  it('leaves out names longer than 253 bytes rather than publish what a reader refuses', () => {
    const long = `${'x'.repeat(251)}.io`;
    const decoded = decodedSet(encodeServedSet(['a.example.com', long], expectedSetOf([])), []);
    expect([...decoded.served]).toEqual(['a.example.com']);
  });

  it('refuses other format versions, v1 included (no checksum: it could overstate)', () => {
    for (const version of ['v1', 'v3']) {
      expect(decodeServedSet(`${version}.n.AAAA`, expectedSetOf([]))).toEqual({
        kind: 'undecodable',
        reason: `unsupported format version "${version}"`,
      });
    }
  });

  it('decodes garbage to no set at all, without throwing', () => {
    const expected = expectedSetOf(realistic(100));
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (junk) => {
        for (const value of [junk, `v2.n.${junk}`, `v2.e.${junk}`, `v2.t.${junk}`]) {
          expect(decodeServedSet(value, expected).kind).not.toBe('set');
        }
      }),
    );
  });

  it('never reports an unservable target as served after any single-bit flip (repro: 257 of 1,888 did)', () => {
    const names = realistic(2_000);
    const expected = expectedSetOf(names);
    for (const served of [new Set(names.slice(0, 1_990)), new Set(names.slice(0, 50))]) {
      const value = encodeServedSet(served, expected);
      const [version, form, body] = value.split('.');
      const bytes = Buffer.from(body as string, 'base64');
      const original = decodeServedSet(value, expected);
      for (let bit = 0; bit < bytes.length * 8; bit++) {
        const flipped = Buffer.from(bytes);
        flipped[bit >> 3] = (flipped[bit >> 3] as number) ^ (1 << (bit & 7));
        const decoded = decodeServedSet(`${version}.${form}.${flipped.toString('base64')}`, expected);
        expect(overstated(decoded, served), `bit ${bit}`).toEqual([]);
        // Caught by the checksum, or a bit deflate never reads (padding after the last block).
        if (decoded.kind !== 'undecodable') expect(decoded, `bit ${bit}`).toEqual(original);
      }
    }
  });

  it('decodes corrupted characters of valid values to no set at all, or to the same set', () => {
    const names = realistic(2_000);
    const expected = expectedSetOf(names);
    const valid = [
      encodeServedSet(names.slice(0, 1_990), expected),
      encodeServedSet(names.slice(0, 50), expected),
    ];
    fc.assert(
      fc.property(fc.nat(), fc.nat(), fc.constantFrom(...'AZaz09+/=.x'), (which, at, ch) => {
        const value = valid[which % valid.length] as string;
        const i = at % value.length;
        const corrupted = value.slice(0, i) + ch + value.slice(i + 1);
        const decoded = decodeServedSet(corrupted, expected);
        if (decoded.kind !== 'undecodable') expect(decoded).toEqual(decodeServedSet(value, expected));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses bytes after the deflate stream', () => {
    const value = encodeServedSet(['a.example.com'], expectedSetOf([]));
    const [, , body] = value.split('.');
    const padded = Buffer.concat([Buffer.from(body as string, 'base64'), Buffer.from([0, 0, 0])]);
    expect(decodeServedSet(`v2.n.${padded.toString('base64')}`, expectedSetOf([]))).toMatchObject({
      kind: 'undecodable',
      reason: expect.stringMatching(/nothing after it/),
    });
  });

  it('refuses non-canonical lists (unsorted or duplicated names)', () => {
    for (const names of [
      ['b.x.io', 'a.x.io'],
      ['a.x.io', 'a.x.io'],
    ]) {
      expect(decodeServedSet(forge('n', nameList(names)), expectedSetOf([]))).toMatchObject({
        kind: 'undecodable',
      });
    }
  });
});

describe('served-set codec against hostile values (a Lease anyone in the namespace may write)', () => {
  const none: ExpectedSet = expectedSetOf([]);

  it('refuses `a, aa, aaa, …` (100,000 names) in bounded time and memory (repro: 3 GiB, out of memory)', () => {
    const names = Array.from({ length: 100_000 }, (_, i) => 'a'.repeat(i + 1));
    // Written by hand: writeNameList would build the 5 GB of names the attack describes.
    const payload = new ByteWriter();
    payload.varint(names.length);
    for (let i = 0; i < names.length; i++) {
      payload.varint(i);
      payload.utf8('a');
    }
    for (const value of [
      forge('n', payload.finish()),
      forge('e', payload.finish(), new Uint8Array([1, ...new Uint8Array(16)])),
    ]) {
      expect(value.length).toBeLessThan(256 * 1024);
      const { result, ms, heapMb } = measured(() => decodeServedSet(value, none));
      expect(result).toMatchObject({
        kind: 'undecodable',
        reason: expect.stringMatching(/longer than 253 bytes/),
      });
      expect(ms, 'decode time').toBeLessThan(500);
      expect(heapMb, 'heap left allocated by the decode').toBeLessThan(64);
    }
  });

  it('refuses 253-byte names past the total size limit in bounded time and memory', () => {
    // 70,000 names of 253 bytes (17 MiB), each differing from the previous one in its last
    // letters: front coding and deflate shrink them to a value under the annotation cap.
    const letters = (i: number) =>
      [3, 2, 1, 0].map((p) => String.fromCharCode(97 + (Math.floor(i / 26 ** p) % 26))).join('');
    const names = Array.from({ length: 70_000 }, (_, i) => `${'a'.repeat(249)}${letters(i)}`);
    const payload = new ByteWriter();
    writeNameList(payload, names);
    const value = forge('n', payload.finish());
    const { result, ms, heapMb } = measured(() => decodeServedSet(value, none));
    expect(result).toMatchObject({ kind: 'undecodable', reason: expect.stringMatching(/bytes in total/) });
    expect(ms, 'decode time').toBeLessThan(2_000);
    expect(heapMb, 'heap left allocated by the decode').toBeLessThan(128);
  });

  it('refuses a list that claims more names than the limit before reading any', () => {
    const payload = new ByteWriter();
    payload.varint(10_000_000);
    expect(decodeServedSet(forge('n', payload.finish()), none)).toMatchObject({
      kind: 'undecodable',
      reason: expect.stringMatching(/more than 250000 names/),
    });
  });

  it('stops inflating at the cap: a small value that inflates to 64 MiB is refused', () => {
    const bomb = forge('n', new Uint8Array(64 * 1024 * 1024));
    expect(bomb.length).toBeLessThan(256 * 1024);
    const { result, ms } = measured(() => decodeServedSet(bomb, none));
    expect(result).toMatchObject({
      kind: 'undecodable',
      reason: expect.stringMatching(/at most 8388608 bytes/),
    });
    expect(ms).toBeLessThan(1_000);
  });
});

describe('decodeServedSetOnce', () => {
  it('answers what decodeServedSet answers, decoding a value once per expected set', () => {
    const expected = expectedSetOf(['a.x.io', 'b.x.io']);
    const value = encodeServedSet(['a.x.io', 'c.x.io'], expected);
    const first = decodeServedSetOnce(value, expected);
    expect(first).toEqual(decodeServedSet(value, expected));
    expect(decodeServedSetOnce(value, expected), 'the same value and expectation: the same answer').toBe(
      first,
    );
    const other = expectedSetOf(['a.x.io']);
    const again = decodeServedSetOnce(value, other);
    expect(again, 'a new expectation decodes afresh').not.toBe(first);
    expect(again).toEqual(decodeServedSet(value, other));
    expect(decodeServedSetOnce('garbage', expected)).toEqual(decodeServedSet('garbage', expected));
  });
});
