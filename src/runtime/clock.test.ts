import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { systemClock } from './clock.ts';

describe('systemClock.sleep', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('resolves after the delay', async () => {
    let done = false;
    void systemClock.sleep(1_000).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(999);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(done).toBe(true);
  });

  it('resolves (never rejects) as soon as the signal aborts, so a stop is not an error', async () => {
    const stop = new AbortController();
    const slept = systemClock.sleep(60_000, stop.signal);
    stop.abort();
    await expect(slept).resolves.toBeUndefined();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves at once on a signal that was already aborted', async () => {
    await expect(systemClock.sleep(60_000, AbortSignal.abort())).resolves.toBeUndefined();
  });
});
