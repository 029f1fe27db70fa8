import type { Logger } from 'pino';
import { retryDelayMs } from '../../runtime/backoff.ts';
import { systemClock } from '../../runtime/clock.ts';
import { describeError, isInfrastructureError } from './errors.ts';

const BACKOFF = { baseMs: 100, maxMs: 2_000 };

/**
 * Runs a start-up step on the bus again while the bus cannot answer it yet, up to `patienceMs`:
 * on a cluster, a stream or bucket just created answers only once its replicas elected a leader
 * (no responders, timeouts until then), and a node may be restarting as a process starts. Any
 * other failure, and the last one past the patience, is thrown at once.
 */
export async function retryWhileBusUnavailable<T>(
  what: string,
  step: () => Promise<T>,
  opts: { log: Logger; patienceMs?: number },
): Promise<T> {
  const deadline = Date.now() + (opts.patienceMs ?? 60_000);
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isInfrastructureError(err) || Date.now() > deadline) throw err;
      if (attempt === 1)
        opts.log.warn({ err: describeError(err) }, `${what}: the bus is not answering yet; retrying`);
      await systemClock.sleep(retryDelayMs(attempt, BACKOFF));
    }
  }
}
