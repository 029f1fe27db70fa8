import { deflateRawSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteWriter, writeNameList } from './name-list.ts';
import { decodeServedSet, encodeServedSet, expectedSetOf } from './served-set-codec.ts';

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

describe('served-set codec', () => {
  it('round-trips any set against the same expected set', () => {
    fc.assert(
      fc.property(namesArb, namesArb, (served, expected) => {
        const value = encodeServedSet(served, expectedSetOf(expected));
        const decoded = decodedSet(value, expected);
        expect([...decoded.served].sort()).toEqual([...served].sort());
        expect(decoded.unsettled.size).toBe(0);
      }),
    );
  });

  it('round-trips large sets with exceptions in the digest form', () => {
    const expected = realistic(20_000);
    const served = [...expected.slice(0, 19_900), ...realistic(50, 'draining')];
    const value = encodeServedSet(served, expectedSetOf(expected));
    expect(value.startsWith('v1.e.')).toBe(true);
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
        for (const name of decoded.served) expect(served.has(name), `${name} reported served`).toBe(true);
        for (const name of readerView) {
          if (served.has(name)) expect(decoded.served.has(name) || decoded.unsettled.has(name)).toBe(true);
        }
      }),
      { numRuns: 40 },
    );
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
    expect(encodeServedSet(['a.example.com'], expectedSetOf([])).startsWith('v1.n.')).toBe(true);
  });

  it('marks an over-budget set truncated with its count, never a partial list', () => {
    const served = realistic(5_000);
    const value = encodeServedSet(served, expectedSetOf([]), { budgetBytes: 2_000 });
    expect(value).toBe('v1.t.5000');
    expect(decodeServedSet(value, expectedSetOf([]))).toEqual({ kind: 'truncated', servedCount: 5000 });
  });

  it('stays within the budget whatever it encodes', () => {
    fc.assert(
      fc.property(namesArb, namesArb, fc.integer({ min: 16, max: 600 }), (served, expected, budget) => {
        expect(
          encodeServedSet(served, expectedSetOf(expected), { budgetBytes: budget }).length,
        ).toBeLessThanOrEqual(Math.max(budget, `v1.t.${served.length}`.length));
      }),
    );
  });

  it('refuses an unknown format version', () => {
    expect(decodeServedSet('v2.n.AAAA', expectedSetOf([]))).toEqual({
      kind: 'undecodable',
      reason: 'unsupported format version "v2"',
    });
  });

  it('rejects garbage without throwing', () => {
    const expected = expectedSetOf(realistic(100));
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (junk) => {
        for (const value of [junk, `v1.n.${junk}`, `v1.e.${junk}`, `v1.t.${junk}`]) {
          expect(['set', 'truncated', 'undecodable']).toContain(decodeServedSet(value, expected).kind);
        }
      }),
    );
  });

  it('survives corrupted valid values without throwing', () => {
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
        expect(['set', 'truncated', 'undecodable']).toContain(decodeServedSet(corrupted, expected).kind);
      }),
      { numRuns: 300 },
    );
  });

  it('refuses non-canonical lists (unsorted or duplicated names)', () => {
    for (const names of [
      ['b.x.io', 'a.x.io'],
      ['a.x.io', 'a.x.io'],
    ]) {
      const out = new ByteWriter();
      writeNameList(out, names);
      const value = `v1.n.${Buffer.from(deflateRawSync(out.finish())).toString('base64')}`;
      expect(decodeServedSet(value, expectedSetOf([]))).toMatchObject({ kind: 'undecodable' });
    }
  });
});
