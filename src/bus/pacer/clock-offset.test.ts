import { describe, expect, it } from 'vitest';
import { correctionMs, nextOffset, offsetFromWrite } from './clock-offset.ts';

describe('clock offset to the NATS server', () => {
  it('is the server stamp minus the midpoint of the write, within half the round trip', () => {
    // A replica 90 s behind: sent at 1000, acked at 1010, the server stamped 91 005.
    expect(offsetFromWrite(1_000, 1_010, 91_005)).toEqual({ offsetMs: 90_000, uncertaintyMs: 5 });
  });

  it('refuses readings that run backwards', () => {
    expect(() => offsetFromWrite(1_010, 1_000, 5)).toThrow();
  });

  it('takes the first sample, then any tight one, and a loose one only if it is tighter', () => {
    const tight = { offsetMs: 100, uncertaintyMs: 2 };
    const loose = { offsetMs: 400, uncertaintyMs: 300 };
    expect(nextOffset(undefined, loose, 50)).toBe(loose);
    expect(nextOffset(tight, loose, 50), 'a slow round trip does not replace a good estimate').toBe(tight);
    expect(nextOffset(loose, tight, 50)).toBe(tight);
    const drifted = { offsetMs: 130, uncertaintyMs: 20 };
    expect(nextOffset(tight, drifted, 50), 'a tight sample always refreshes the estimate').toBe(drifted);
  });

  it('corrects a real skew but not the few ms of estimate noise between synced replicas', () => {
    expect(correctionMs(undefined, 50)).toBe(0);
    expect(correctionMs({ offsetMs: 4, uncertaintyMs: 1 }, 50)).toBe(0);
    expect(correctionMs({ offsetMs: -50, uncertaintyMs: 1 }, 50)).toBe(0);
    expect(correctionMs({ offsetMs: 90_000, uncertaintyMs: 1 }, 50)).toBe(90_000);
    expect(correctionMs({ offsetMs: -51, uncertaintyMs: 1 }, 50)).toBe(-51);
  });
});
