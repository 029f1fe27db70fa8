import { systemClock } from '../runtime/clock.ts';

/** Thrown by a check that knows the wait is hopeless (the process it waits on exited): `waitFor` gives up at once. */
export class WaitHopeless extends Error {}

/**
 * Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`, or as
 * soon as `check` throws `WaitHopeless`.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined> | T | undefined,
  { timeoutMs = 60_000, intervalMs = 200 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      if (err instanceof WaitHopeless) throw new Error(`gave up waiting for ${what}: ${err.message}`);
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await systemClock.sleep(intervalMs);
  }
}
