import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFLICT_BACKOFF, DEFAULT_ERROR_BACKOFF, retryDelayMs } from './backoff.ts';

const noJitter = () => 0;

describe('retryDelayMs', () => {
  it('grows exponentially from the delivery count and stops at the cap', () => {
    const policy = { baseMs: 100, maxMs: 1_000, jitter: 0 };
    expect([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, policy, noJitter))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
  });

  it('retries conflicts sooner than other errors', () => {
    for (const n of [1, 2, 3]) {
      expect(retryDelayMs(n, DEFAULT_CONFLICT_BACKOFF, noJitter)).toBeLessThan(
        retryDelayMs(n, DEFAULT_ERROR_BACKOFF, noJitter),
      );
    }
  });

  it('stays within [raw*(1-jitter), raw] and never exceeds the cap, for any count', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -5, max: 10_000 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (n, r) => {
          const d = retryDelayMs(n, { baseMs: 50, maxMs: 30_000, jitter: 0.5 }, () => r);
          return Number.isFinite(d) && d >= 0 && d <= 30_000;
        },
      ),
    );
  });

  it('subtracts at most the jitter fraction', () => {
    const policy = { baseMs: 1_000, maxMs: 10_000, jitter: 0.25 };
    expect(retryDelayMs(1, policy, () => 0.999_999)).toBeGreaterThanOrEqual(750);
    expect(retryDelayMs(1, policy, () => 0)).toBe(1_000);
  });
});
