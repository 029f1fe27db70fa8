// A token bucket, the same shape as client-go's (util/flowcontrol over
// golang.org/x/time/rate): it starts full with `burst` tokens, refills at
// `ratePerSecond` and never holds more than `burst`. Pure: every method takes
// the current time in milliseconds, so tests and benchmarks drive it exactly.
//
// Two ways to take a token, for the two kinds of traffic:
// * `tryTake` never waits: discardable traffic (Events) is shed when empty.
// * `reserve` always succeeds but may go into debt and returns how long the
//   caller must wait; because the debt is fixed at reservation time, waiters
//   proceed in arrival order (FIFO), as with client-go's `Wait`.

export class TokenBucket {
  readonly ratePerSecond: number;
  readonly burst: number;
  private tokens: number;
  private updatedAtMs: number;

  constructor(ratePerSecond: number, burst: number, nowMs: number) {
    if (!(ratePerSecond > 0) || !Number.isFinite(ratePerSecond)) {
      throw new RangeError(`token bucket rate must be a positive finite number, got ${ratePerSecond}`);
    }
    if (!Number.isInteger(burst) || burst < 1) {
      throw new RangeError(`token bucket burst must be an integer >= 1, got ${burst}`);
    }
    this.ratePerSecond = ratePerSecond;
    this.burst = burst;
    this.tokens = burst;
    this.updatedAtMs = nowMs;
  }

  /** Takes one token if one is available at `nowMs`; never waits, never goes into debt. */
  tryTake(nowMs: number): boolean {
    this.refill(nowMs);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Takes one token, going into debt if there is none, and returns the delay in
   * milliseconds after which the caller may proceed (0 when a token was there).
   */
  reserve(nowMs: number): number {
    this.refill(nowMs);
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.ratePerSecond;
  }

  /** Tokens available at `nowMs` (negative while reservations are in debt). */
  available(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens;
  }

  // A clock that steps backwards (it should not: callers use a monotonic one)
  // must not mint tokens, so time only moves forwards here.
  private refill(nowMs: number): void {
    if (nowMs <= this.updatedAtMs) return;
    const refilled = this.tokens + ((nowMs - this.updatedAtMs) * this.ratePerSecond) / 1000;
    this.tokens = Math.min(this.burst, refilled);
    this.updatedAtMs = nowMs;
  }
}
