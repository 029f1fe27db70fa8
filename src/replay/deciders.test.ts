import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareDecisions, sameJsonText } from './deciders.ts';

describe('comparing decisions as JSON text', () => {
  it('agrees with comparing what JSON.stringify prints, for any two values', () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    const nearly = value.chain((v) =>
      fc.oneof(
        fc.constant(v),
        fc.constant(JSON.parse(JSON.stringify(v))),
        fc.jsonValue({ maxDepth: 3 }),
        fc.constant(
          typeof v === 'object' && v !== null && !Array.isArray(v)
            ? Object.fromEntries(Object.entries(v).reverse())
            : v,
        ),
      ),
    );
    fc.assert(
      fc.property(value, nearly, (a, b) => {
        expect(sameJsonText(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
      }),
      { numRuns: 3_000 },
    );
  });

  it('tells key order and undefined fields as the recorded text does', () => {
    expect(sameJsonText({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJsonText({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(compareDecisions({ write: { x: 1 } }, { write: { x: 1 }, move: undefined })).toBe('same');
    expect(compareDecisions(null, undefined)).toBe('same');
    expect(compareDecisions({ move: { to: 'a' } }, { move: { to: 'b' } })).toBe('different');
  });
});
