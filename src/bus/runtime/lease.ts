/**
 * The lease arithmetic of one handler attempt: how long this replica may still
 * settle (ack or nak) a message it received. Pure functions of monotonic clock
 * readings (ms), so they are tested exactly; `attempt.ts` applies them.
 *
 * The server redelivers a message `ack_wait` after it delivered it or after the
 * last progress (`+WPI`) it processed, and it then accepts an ack from EITHER
 * attempt: a late ack from an attempt the server already gave away frees a
 * `max_ack_pending: 1` partition while the redelivered attempt still runs
 * (reproduced on nats-server 2.15.2). So the runtime settles a message only
 * while it is sure the server has not redelivered it:
 *
 * - The lease starts when the pull request that brought the message was
 *   sent: the server cannot have delivered it earlier, whereas the receipt
 *   time can be late by any event-loop stall that kept the message in the
 *   socket buffer. It lasts `ack_wait − margin`; the margin (max(1 s,
 *   ack_wait/5)) covers the time an ack takes to reach the server. A pull
 *   waits at most half a lease for a message ({@link pullExpiryMs}), so a
 *   message always arrives with half a lease left, and the first progress is
 *   sent when half of what remains is gone ({@link nextBeatDelayMs}).
 * - A progress request confirmed by the server's reply extends the lease to
 *   (send time + ack_wait − margin): the server processed it after we sent it,
 *   so its own timer starts later than ours.
 * - A reply that arrives after the lease lapsed extends nothing: the server
 *   replies to `+WPI` even for a delivery it has already given to another
 *   replica (verified on 2.15.2), so a late reply may be another attempt's.
 */

/**
 * A lease needs room for a margin (1 s) and a pull of at least 1 s (the
 * client's minimum `expires`) inside half of what remains.
 */
export const MIN_ACK_WAIT_MS = 3_000;

export interface LeaseTimings {
  ackWaitMs: number;
  /** Subtracted from ack_wait: transit of the delivery and of the settling ack. */
  marginMs: number;
  /** Progress is sent this often while a handler runs: three chances per ack_wait. */
  heartbeatMs: number;
}

export function leaseTimings(ackWaitMs: number): LeaseTimings {
  if (!(ackWaitMs >= MIN_ACK_WAIT_MS)) {
    throw new Error(`ack_wait must be at least ${MIN_ACK_WAIT_MS} ms for a handler lease, got ${ackWaitMs}`);
  }
  return {
    ackWaitMs,
    marginMs: Math.max(1_000, Math.floor(ackWaitMs / 5)),
    heartbeatMs: Math.floor(ackWaitMs / 3),
  };
}

/** The lease granted by a pull (or a progress request) sent at `startMs`. */
export function leaseFrom(startMs: number, t: LeaseTimings): number {
  return startMs + t.ackWaitMs - t.marginMs;
}

/**
 * The lease after a progress request sent at `sentMs` was confirmed at
 * `repliedMs`; undefined when the reply came after the lease lapsed (the
 * extension may have gone to another replica's attempt).
 */
export function extendedLease(
  leaseEndMs: number,
  sentMs: number,
  repliedMs: number,
  t: LeaseTimings,
): number | undefined {
  if (!leaseHeld(leaseEndMs, repliedMs)) return undefined;
  return Math.max(leaseEndMs, leaseFrom(sentMs, t));
}

export function leaseHeld(leaseEndMs: number, nowMs: number): boolean {
  return nowMs < leaseEndMs;
}

/** How long a pull may wait for a message: at most half a lease, so a message arrives with time to confirm progress. */
export function pullExpiryMs(requestedMs: number, t: LeaseTimings): number {
  return Math.max(1_000, Math.min(requestedMs, Math.floor((t.ackWaitMs - t.marginMs) / 2)));
}

/** When to send the next progress: every heartbeat, or sooner, when half of the remaining lease is gone. */
export function nextBeatDelayMs(leaseEndMs: number, nowMs: number, t: LeaseTimings): number {
  return Math.max(0, Math.min(t.heartbeatMs, Math.floor((leaseEndMs - nowMs) / 2)));
}
