import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TokenBucket } from './token-bucket.ts';

// Non-decreasing times in ms, built from random gaps.
const timeline = fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 400 }).map((gaps) => {
  let t = 0;
  return gaps.map((gap) => {
    t += gap;
    return t;
  });
});
const rate = fc.integer({ min: 1, max: 1000 });
const burst = fc.integer({ min: 1, max: 50 });

describe('TokenBucket', () => {
  it('starts full: exactly `burst` tokens at one instant, then sheds', () => {
    const bucket = new TokenBucket(200, 400, 0);
    const taken = Array.from({ length: 1000 }, () => bucket.tryTake(0)).filter(Boolean).length;
    expect(taken).toBe(400);
  });

  it('refills at the rate and never above the burst', () => {
    const bucket = new TokenBucket(10, 5, 0);
    for (let i = 0; i < 5; i++) bucket.tryTake(0);
    expect(bucket.available(100)).toBeCloseTo(1);
    expect(bucket.available(10_000)).toBe(5);
  });

  it('rejects a rate or burst that would make the limit meaningless', () => {
    expect(() => new TokenBucket(0, 1, 0)).toThrow(/rate/);
    expect(() => new TokenBucket(1, 0, 0)).toThrow(/burst/);
    expect(() => new TokenBucket(1, 1.5, 0)).toThrow(/burst/);
  });

  it('a clock stepping backwards mints no tokens', () => {
    const bucket = new TokenBucket(1000, 1, 1000);
    expect(bucket.tryTake(1000)).toBe(true);
    expect(bucket.tryTake(0)).toBe(false);
    expect(bucket.tryTake(1000)).toBe(false);
  });

  it('property: tryTake never admits more than burst + rate × elapsed in any window', () => {
    fc.assert(
      fc.property(rate, burst, timeline, (r, b, times) => {
        const bucket = new TokenBucket(r, b, 0);
        const admitted = times.filter((t) => bucket.tryTake(t));
        // Every window [admitted[i], admitted[j]] holds at most b + r·Δt tokens.
        for (let i = 0; i < admitted.length; i++) {
          for (let j = i; j < admitted.length; j++) {
            const elapsed = ((admitted[j] as number) - (admitted[i] as number)) / 1000;
            if (j - i + 1 > b + r * elapsed + 1e-9) return false;
          }
        }
        return true;
      }),
    );
  });

  it('property: tryTake admits whenever a token has accumulated (it is not stricter than the rate)', () => {
    fc.assert(
      fc.property(rate, burst, timeline, (r, b, times) => {
        const bucket = new TokenBucket(r, b, 0);
        for (const t of times) {
          const before = bucket.available(t);
          expect(bucket.tryTake(t)).toBe(before >= 1);
        }
      }),
    );
  });

  it('property: reservations proceed in arrival order and at most burst + rate × elapsed by any time', () => {
    fc.assert(
      fc.property(rate, burst, timeline, (r, b, times) => {
        const bucket = new TokenBucket(r, b, 0);
        const proceedAt = times.map((t) => t + bucket.reserve(t));
        for (let k = 1; k < proceedAt.length; k++) {
          expect(proceedAt[k]).toBeGreaterThanOrEqual((proceedAt[k - 1] as number) - 1e-6);
        }
        for (let k = 0; k < proceedAt.length; k++) {
          // The (k+1)-th request cannot proceed before its token exists.
          expect(k + 1).toBeLessThanOrEqual(b + (r * (proceedAt[k] as number)) / 1000 + 1e-6);
        }
      }),
    );
  });

  it('the k-th reservation beyond the burst waits (k − burst) / rate, as client-go does', () => {
    const bucket = new TokenBucket(50, 100, 0);
    const delays = Array.from({ length: 150 }, () => bucket.reserve(0));
    expect(delays[99]).toBe(0);
    expect(delays[100]).toBeCloseTo(20);
    expect(delays[149]).toBeCloseTo(1000);
  });
});
