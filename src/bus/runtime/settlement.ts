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
 * | infrastructure (the bus failed)        | nak(error backoff); last attempt: republish afresh, ack |
 * | lease lapsed / no settle in the grace  | abandon: send nothing, redelivered after ack_wait |
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
}

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
      return settlementOfFailure(result.kind, result.reason, delivery, policy);
  }
}

function settlementOfFailure(
  kind: FailureKind,
  reason: string,
  delivery: DeliveryInfo,
  policy: SettlementPolicy,
): Settlement {
  if (kind === 'permanent') return { action: 'dead-letter', kind: 'permanent', reason };
  const last = delivery.deliveryCount >= delivery.maxDeliver;
  // The bus failing is not the message's fault: it starts over instead of being dead-lettered.
  if (last && kind === 'infrastructure') return { action: 'republish', reason };
  if (last) {
    return {
      action: 'dead-letter',
      kind: 'max-deliver',
      reason: `${kind} on attempt ${delivery.maxDeliver} of ${delivery.maxDeliver}: ${reason}`,
    };
  }
  const backoff = kind === 'conflict' ? policy.conflictBackoff : policy.errorBackoff;
  return {
    action: 'nak',
    delayMs: retryDelayMs(delivery.deliveryCount, backoff, policy.random),
    kind,
    reason,
  };
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
