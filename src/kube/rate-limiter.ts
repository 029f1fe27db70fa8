import { setTimeout as sleep } from 'node:timers/promises';
import { TokenBucket } from './token-bucket.ts';

/**
 * What a client consults before sending. `wait` is for must-complete traffic
 * (it delays, never refuses); `tryAccept` is for discardable traffic (it
 * refuses, never delays).
 */
export interface RateLimiter {
  /** Resolves when the caller may send; FIFO among waiters. */
  wait(): Promise<void>;
  /** Takes a token if one is available now; never waits. */
  tryAccept(): boolean;
  /** For logs and benchmark tables: "unlimited" or "<qps>/s burst <burst>". */
  readonly description: string;
}

/**
 * The explicit no-op limiter: the writes client's default. Server-side API
 * Priority and Fairness protects the apiserver; a client-side bucket in front
 * of must-complete writes only turns load into latency (see docs/kubernetes-clients.md).
 */
export const unlimited: RateLimiter = {
  wait: () => Promise.resolve(),
  tryAccept: () => true,
  description: 'unlimited',
};

export interface TokenBucketLimits {
  qps: number;
  burst: number;
}

/** A token bucket on a monotonic clock. */
export function tokenBucketLimiter(
  { qps, burst }: TokenBucketLimits,
  now: () => number = () => performance.now(),
): RateLimiter {
  const bucket = new TokenBucket(qps, burst, now());
  return {
    async wait() {
      const delayMs = bucket.reserve(now());
      if (delayMs > 0) await sleep(delayMs);
    },
    tryAccept: () => bucket.tryTake(now()),
    description: `${qps}/s burst ${burst}`,
  };
}

/**
 * The configured meaning of a qps/burst pair: qps ≤ 0 is explicitly unlimited
 * (client-go's QPS < 0, not its "0 means 5/10" trap); a positive qps with no
 * burst gets a burst of ceil(qps), i.e. one second's worth.
 */
export function limiterFor(limits: TokenBucketLimits): RateLimiter {
  if (limits.qps <= 0) return unlimited;
  return tokenBucketLimiter({ qps: limits.qps, burst: effectiveBurst(limits) });
}

export function effectiveBurst({ qps, burst }: TokenBucketLimits): number {
  return burst >= 1 ? Math.floor(burst) : Math.max(1, Math.ceil(qps));
}
