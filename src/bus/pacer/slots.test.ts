import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertRate,
  maxReleasesIn,
  nextSlotToTry,
  slotIndex,
  slotKey,
  slotStartMs,
  waitForSlotMs,
} from './slots.ts';

const rate = fc.oneof(
  fc.constantFrom(1, 10, 50, 200, 1_000),
  fc.double({ min: 0.1, max: 1_000, noNaN: true }),
);
const now = fc.integer({ min: 1_600_000_000_000, max: 2_200_000_000_000 });

describe('pacer slots', () => {
  it('at 50/s, slots are 20 ms long', () => {
    expect(slotIndex(1_000, 50)).toBe(50);
    expect(slotIndex(1_019, 50)).toBe(50);
    expect(slotIndex(1_020, 50)).toBe(51);
    expect(slotStartMs(51, 50)).toBe(1_020);
    expect(slotKey(51)).toBe('slot.51');
  });

  it("a slot's start lies in that slot and the millisecond before it does not", () => {
    fc.assert(
      fc.property(now, rate, (t, r) => {
        const i = slotIndex(t, r);
        const s = slotStartMs(i, r);
        return slotIndex(s, r) === i && slotIndex(s - 1, r) === i - 1 && s <= t;
      }),
    );
  });

  it('never proposes a slot that is over, nor one this process already tried', () => {
    fc.assert(
      fc.property(now, rate, fc.option(fc.integer({ min: -5, max: 5 })), (t, r, offset) => {
        const current = slotIndex(t, r);
        const last = offset === null ? undefined : current + offset;
        const next = nextSlotToTry(t, r, last);
        return next >= current && (last === undefined || next > last);
      }),
    );
  });

  it('waits exactly until the slot starts', () => {
    expect(waitForSlotMs(51, 1_005, 50)).toBe(15);
    expect(waitForSlotMs(50, 1_005, 50)).toBe(0);
  });

  it('bounds releases in a window: one token per slot, claimed within its own slot', () => {
    // Simulate any claim times: each slot claimed at most once, claims inside their slot.
    fc.assert(
      fc.property(rate, now, fc.integer({ min: 1, max: 5_000 }), (r, t0, windowMs) => {
        const first = slotIndex(t0, r);
        const last = slotIndex(t0 + windowMs, r);
        return last - first + 1 <= maxReleasesIn(windowMs, r);
      }),
    );
  });

  it('rejects rates it cannot honour', () => {
    expect(() => assertRate(0)).toThrow();
    expect(() => assertRate(5_000)).toThrow();
    expect(() => assertRate(Number.NaN)).toThrow();
    expect(() => assertRate(50)).not.toThrow();
  });
});
