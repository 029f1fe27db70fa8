/**
 * The one decision of how a delivery is settled: (what the attempt came to,
 * the delivery's count and budget, the retry policy, now) → one JetStream
 * action. Pure, so every rule below is a table test (`settlement.test.ts`);
 * `settle-actions.ts` only carries the action out.
 *
 * | attempt came to                        | action                                        |
 * |----------------------------------------|-----------------------------------------------|
 * | delivered beyond the budget            | dead-letter `max-deliver` (a worker died)     |
 * | undecodable / fails its schema         | dead-letter `invalid`                         |
 * | `done`                                 | ack                                           |
 * | `recheck after T`                      | schedule the trigger at now+T, then ack       |
 * | permanent error                        | dead-letter `permanent`                       |
 * | transient error                        | nak(error backoff); last attempt: dead-letter |
 * | conflict (409)                         | nak(conflict backoff); last attempt: dead-letter |
 * | either, holding a partition, wait ≥ ½ s | retry later: schedule the trigger, then ack   |
 * | infrastructure (the bus failed)        | nak(error backoff); last attempt: republish afresh, ack |
 * | lease lapsed / no settle in the grace  | abandon: send nothing, redelivered after ack_wait |
 *
 * A nak keeps its message in the consumer's pending count until it is redelivered, so on a
 * partition (`max_ack_pending: 1`) a failing key would hold back every other key of the
 * partition for its whole retry budget. A retry there that waits half a second or more goes off the
 * consumer instead: the trigger comes back as a durable re-check carrying how many attempts
 * already failed (`DeliveryInfo.earlierFailures`), so the budget still counts every attempt.
 *
 * When the publish an action depends on (dead letter, republish, re-check)
 * fails, {@link afterPublishFailed} keeps the message: nak with the error
 * backoff, so it is tried again rather than lost.
 */
import type { BackoffPolicy } from '../../runtime/backoff.ts';
import { retryDelayMs } from '../../runtime/backoff.ts';
import type { DeadLetterKind } from './dead-letter.ts';
import type { FailureKind } from './errors.ts';
import type { Outcome } from './outcome.ts';

export type AttemptResult =
  /** The server delivered it more often than the handler may run (the last worker died without a verdict). */
  | { type: 'beyond-budget' }
  | { type: 'invalid'; reason: string }
  | { type: 'returned'; outcome: Outcome }
  | { type: 'failed'; kind: FailureKind; reason: string }
  | { type: 'abandoned'; reason: string };

export interface DeliveryInfo {
  /** 1 on the first delivery. */
  deliveryCount: number;
  /** Handler attempts before a failure is dead-lettered. */
  maxDeliver: number;
  /** Failed attempts on earlier copies of this trigger (retries that waited as re-checks). */
  earlierFailures?: number;
  /** The delivery holds a partition of WORK: a retry that waits long goes off the consumer. */
  holdsPartition?: boolean;
}

/** The longest a failing key may keep its partition waiting on a nak; longer waits are re-checks. */
export const LONGEST_NAK_ON_PARTITION_MS = 500;

export interface SettlementPolicy {
  errorBackoff: BackoffPolicy;
  conflictBackoff: BackoffPolicy;
  /** Jitter source; a parameter so the decision stays pure. */
  random?: () => number;
}

export type Settlement =
  | { action: 'ack' }
  | { action: 'nak'; delayMs: number; kind: Exclude<FailureKind, 'permanent'>; reason: string }
  | { action: 'dead-letter'; kind: DeadLetterKind; reason: string }
  /** Schedule the trigger to come back at `atMs` (ms since epoch), then ack this delivery. */
  | { action: 'recheck'; atMs: number; reason: string }
  /** A failed attempt's retry, scheduled like a re-check and carrying the attempts failed so far. */
  | {
      action: 'retry-later';
      atMs: number;
      failedAttempts: number;
      kind: Exclude<FailureKind, 'permanent'>;
      reason: string;
    }
  /** Publish the message afresh (a new delivery count), then ack this delivery. */
  | { action: 'republish'; reason: string }
  /** Send nothing: the server redelivers after ack_wait. */
  | { action: 'abandon'; reason: string };

export function settlementFor(
  result: AttemptResult,
  delivery: DeliveryInfo,
  policy: SettlementPolicy,
  now: number,
): Settlement {
  switch (result.type) {
    case 'beyond-budget':
      return {
        action: 'dead-letter',
        kind: 'max-deliver',
        reason: `no verdict after ${delivery.maxDeliver} handler attempts (a worker died or exceeded ack_wait)`,
      };
    case 'invalid':
      return { action: 'dead-letter', kind: 'invalid', reason: result.reason };
    case 'abandoned':
      return { action: 'abandon', reason: result.reason };
    case 'returned':
      return result.outcome.kind === 'done'
        ? { action: 'ack' }
        : { action: 'recheck', atMs: now + result.outcome.afterMs, reason: result.outcome.reason };
    case 'failed':
      return settlementOfFailure(result.kind, result.reason, delivery, policy, now);
  }
}

function settlementOfFailure(
  kind: FailureKind,
  reason: string,
  delivery: DeliveryInfo,
  policy: SettlementPolicy,
  now: number,
): Settlement {
  if (kind === 'permanent') return { action: 'dead-letter', kind: 'permanent', reason };
  const attempt = attemptNumber(delivery);
  const last = attempt >= delivery.maxDeliver;
  // The bus failing is not the message's fault: it starts over instead of being dead-lettered.
  if (last && kind === 'infrastructure') return { action: 'republish', reason };
  if (last) {
    return {
      action: 'dead-letter',
      kind: 'max-deliver',
      reason: `${kind} on attempt ${attempt} of ${delivery.maxDeliver}: ${reason}`,
    };
  }
  const backoff = kind === 'conflict' ? policy.conflictBackoff : policy.errorBackoff;
  const delayMs = retryDelayMs(attempt, backoff, policy.random);
  // The bus failing would fail the schedule too: those stay naks.
  if (
    delivery.holdsPartition === true &&
    kind !== 'infrastructure' &&
    delayMs >= LONGEST_NAK_ON_PARTITION_MS
  ) {
    return { action: 'retry-later', atMs: now + delayMs, failedAttempts: attempt, kind, reason };
  }
  return { action: 'nak', delayMs, kind, reason };
}

/** Which attempt this delivery is, counting those of earlier copies that failed and waited off the consumer. */
function attemptNumber(delivery: DeliveryInfo): number {
  return (delivery.earlierFailures ?? 0) + delivery.deliveryCount;
}

/** The publish a settlement needed failed: the message stays and is tried again after the error backoff. */
export function afterPublishFailed(
  delivery: DeliveryInfo,
  policy: SettlementPolicy,
  reason: string,
): Extract<Settlement, { action: 'nak' }> {
  return {
    action: 'nak',
    delayMs: retryDelayMs(delivery.deliveryCount, policy.errorBackoff, policy.random),
    kind: 'infrastructure',
    reason,
  };
}
