/**
 * Retry delays for `nak(delay)`. The consumer's `backoff` list only applies to
 * ack *timeouts*, and a plain `nak()` redelivers at once, so the runtime picks
 * the delay itself from the message's delivery count: exponential, capped, with
 * optional jitter so that replicas that failed together do not retry together.
 * Pure (the random source is a parameter) so the schedule is testable.
 */

export interface BackoffPolicy {
  /** Delay after the first failed delivery. */
  baseMs: number;
  /** Upper bound for any single delay. */
  maxMs: number;
  /** Growth factor per delivery (default 2). */
  factor?: number;
  /** Fraction of the delay that is randomised, 0 (none) to 1 (full jitter). Default 0.2. */
  jitter?: number;
}

/**
 * Generic handler errors: start at 1 s, double, cap at 60 s — a failing
 * dependency gets breathing room without stalling the key for minutes.
 */
export const DEFAULT_ERROR_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/**
 * Kubernetes 409 conflicts: the object changed under us and a re-read usually
 * fixes it, so retry quickly (100 ms, doubling, capped at 5 s).
 */
export const DEFAULT_CONFLICT_BACKOFF: BackoffPolicy = { baseMs: 100, maxMs: 5_000 };

/**
 * The delay before redelivery after delivery number `deliveryCount` (1-based)
 * failed: `min(maxMs, baseMs * factor^(deliveryCount-1))`, minus up to
 * `jitter` of it.
 */
export function retryDelayMs(
  deliveryCount: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const factor = policy.factor ?? 2;
  const jitter = Math.min(1, Math.max(0, policy.jitter ?? 0.2));
  const attempt = Math.max(1, Math.floor(deliveryCount));
  // Cap the exponent before exponentiating so huge delivery counts cannot overflow to Infinity/NaN.
  const exponent = Math.min(attempt - 1, 64);
  const raw = Math.min(policy.maxMs, policy.baseMs * factor ** exponent);
  const delay = raw - raw * jitter * random();
  return Math.max(0, Math.round(delay));
}
