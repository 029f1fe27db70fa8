/**
 * The one clock every process reads time through. Decisions never read it:
 * pure functions take `now` as a parameter (as kubernetes-controller-sharding's
 * `leases.ToState(lease, now)`), and the adapters that call them pass
 * `clock.now()`. Injecting it lets a test fix time, and gives one `sleep` whose
 * abort behaviour every loop shares.
 */
export interface Clock {
  /** Wall-clock time, ms since the epoch: for timestamps other processes compare (schedules, Events). */
  now(): number;
  /**
   * A monotonic reading in ms (arbitrary origin): for durations this process
   * measures itself (leases, deadlines), which a wall-clock step must not stretch.
   */
  monotonic(): number;
  /**
   * Resolves after `ms`, or as soon as `signal` aborts (it never rejects):
   * callers check `signal.aborted` afterwards, so a stop is never an error.
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep,
};
