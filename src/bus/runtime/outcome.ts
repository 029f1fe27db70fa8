/**
 * What a handler returns (controller-runtime's `Reconcile → (Result{RequeueAfter}, error)`):
 *
 * - `done`: the effect is durable; the trigger is acked.
 * - `recheck`: nothing to do now, but time alone will change the answer (a
 *   Lease goes stale at `renewTime + leaseDurationSeconds`, a move's grace
 *   ends). The runtime schedules the same trigger to come back at that time
 *   (a message schedule, durable on the server, see `recheck.ts`) and acks
 *   this one: a re-check is a new delivery, so it never spends the attempt
 *   budget (`max_deliver`), and no process has to stay alive to remember it.
 * - An error is thrown, never returned: `classifyFailure` (`errors.ts`) turns it
 *   into transient, conflict, permanent or infrastructure.
 *
 * A handler that returns nothing is `done`. `settlement.ts` maps each outcome
 * to what is sent to JetStream.
 */
export type Outcome = { kind: 'done' } | { kind: 'recheck'; afterMs: number; reason: string };

export const done: Outcome = { kind: 'done' };

/** Look again after `afterMs` (≤ 0: at once), e.g. `recheckAfter(nextExpiry - now, 'lease expires')`. */
export function recheckAfter(afterMs: number, reason: string): Outcome {
  if (!Number.isFinite(afterMs)) throw new Error(`recheckAfter needs a finite delay, got ${afterMs}`);
  return { kind: 'recheck', afterMs: Math.max(0, afterMs), reason };
}

/** Look again at `atMs` (ms since epoch), for pure functions that answer "when" rather than "in how long". */
export function recheckAt(atMs: number, now: number, reason: string): Outcome {
  return recheckAfter(atMs - now, reason);
}
