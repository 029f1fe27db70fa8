/**
 * The durable re-check: a message schedule (nats-server 2.12, ADR-51) that
 * brings a trigger back to its own work subject at a given time.
 *
 * - **Where.** The schedule is published to `recheck.<rest>` for the work
 *   subject `work.<rest>` (one schedule subject per key), with the trigger's
 *   payload and `@at <RFC3339>` targeting the work subject. Both are subjects
 *   of the WORK stream (a schedule's target must be in its own stream). WORK
 *   keeps work-queue retention: no consumer's filter covers `recheck.>`, so
 *   nothing acks, and so nothing deletes, a waiting schedule (a work-queue
 *   stream deletes only what a consumer acked); the fired copy lands on the
 *   work subject like any trigger, and its ack removes it. Verified on 2.15.2
 *   (`recheck.itest.ts`).
 * - **Replace.** A newer schedule on the same subject replaces the older (the
 *   server keeps one per subject): the key's latest decision wins.
 * - **Durable.** It is stored in the stream: it fires after a worker dies, and
 *   after a nats-server restart (one due during the downtime fires at once).
 * - **Not an attempt.** The fired copy is a new message, delivery count 1, and
 *   the trigger it came from was acked: re-checking never spends `max_deliver`.
 * - **Late or superseded fires are harmless.** A fire after downtime, or one
 *   left from a decision a newer trigger already made, just runs the handler
 *   again; handlers are level-triggered (they decide on the view, not on the
 *   trigger), so the late run makes the current decision. That is why no
 *   due-by check drops a late fire: dropping it could lose the only wake-up
 *   of a time-driven decision. The due time travels in a header so the
 *   handler and the logs can tell how late it came.
 * - **A narrow race.** Storing the fired copy purges its schedule subject
 *   (`Nats-Schedule-Next: purge`); a newer schedule stored in the same instant
 *   is purged with it. The fired copy still runs the handler after that newer
 *   decision, so the handler schedules again: the key is re-checked no later.
 */
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import { type MsgHdrs, headers as natsHeaders } from '@nats-io/transport-node';
import { recheckSubject } from '../subjects.ts';

export const RECHECK_HEADERS = {
  /** When the re-check was due (ISO 8601), set on the schedule and copied onto the fired message. */
  due: 'Switchyard-Recheck-Due',
  /** Why the handler asked for it, for logs and `nats stream view`. */
  reason: 'Switchyard-Recheck-Reason',
  /** On a failed attempt's retry: how many attempts of this trigger failed so far (settlement.ts). */
  failedAttempts: 'Switchyard-Failed-Attempts',
} as const;

/**
 * The schedule's headers: the trigger's own (minus the server's `Nats-*`), plus when and why.
 * The count of failed attempts is set on a retry and dropped otherwise: an attempt that returned
 * a decision ends the run of failures.
 */
export function recheckHeaders(
  original: MsgHdrs | undefined,
  atMs: number,
  reason: string,
  failedAttempts?: number,
): MsgHdrs {
  const h = natsHeaders();
  for (const [name, values] of original ?? []) {
    // Msg-Id, Expected-*, TTL and an earlier fire's Scheduler headers belong to one publish, not to the trigger.
    if (name.toLowerCase().startsWith('nats-')) continue;
    if (name.toLowerCase() === RECHECK_HEADERS.failedAttempts.toLowerCase()) continue;
    for (const v of values) h.append(name, v);
  }
  h.set(RECHECK_HEADERS.due, new Date(atMs).toISOString());
  h.set(RECHECK_HEADERS.reason, reason.replace(/[\r\n]+/g, ' ').slice(0, 200));
  if (failedAttempts !== undefined) h.set(RECHECK_HEADERS.failedAttempts, String(failedAttempts));
  return h;
}

/** Attempts of this trigger that failed before this copy (0 when the header is absent or not a count). */
export function failedAttemptsOf(headers: MsgHdrs | undefined): number {
  const value = headers?.get(RECHECK_HEADERS.failedAttempts) ?? '';
  return /^\d{1,6}$/.test(value) ? Number(value) : 0;
}

/** When a fired re-check was due (ms since epoch); undefined for any other trigger. */
export function recheckDueOf(headers: MsgHdrs | undefined): number | undefined {
  const due = headers?.get(RECHECK_HEADERS.due);
  if (!due) return undefined;
  const ms = Date.parse(due);
  return Number.isNaN(ms) ? undefined : ms;
}

/** Schedules `m`'s trigger to come back to `m.subject` at `atMs`, replacing the key's earlier schedule. */
export async function scheduleRecheck(
  js: JetStreamClient,
  m: Pick<JsMsg, 'subject' | 'data' | 'headers'>,
  atMs: number,
  reason: string,
  timeoutMs: number,
  failedAttempts?: number,
): Promise<void> {
  await js.publish(recheckSubject(m.subject), m.data, {
    headers: recheckHeaders(m.headers, atMs, reason, failedAttempts),
    schedule: { specification: new Date(atMs), target: m.subject },
    timeout: timeoutMs,
  });
}
