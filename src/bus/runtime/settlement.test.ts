import { describe, expect, it } from 'vitest';
import { done, recheckAfter, recheckAt } from './outcome.ts';
import {
  type AttemptResult,
  afterPublishFailed,
  type SettlementPolicy,
  settlementFor,
} from './settlement.ts';

const policy: SettlementPolicy = {
  errorBackoff: { baseMs: 1_000, maxMs: 60_000, jitter: 0 },
  conflictBackoff: { baseMs: 100, maxMs: 5_000, jitter: 0 },
};
const NOW = 1_700_000_000_000;
const first = { deliveryCount: 1, maxDeliver: 3 };
const last = { deliveryCount: 3, maxDeliver: 3 };
const failed = (kind: 'transient' | 'conflict' | 'permanent' | 'infrastructure'): AttemptResult => ({
  type: 'failed',
  kind,
  reason: 'boom',
});

describe('settlementFor', () => {
  it('acks done', () => {
    expect(settlementFor({ type: 'returned', outcome: done }, first, policy, NOW)).toEqual({ action: 'ack' });
  });

  it('schedules a re-check at now + T and acks, on any delivery, the last one included', () => {
    const outcome = recheckAfter(30_000, 'lease expires');
    for (const delivery of [first, last]) {
      expect(settlementFor({ type: 'returned', outcome }, delivery, policy, NOW)).toEqual({
        action: 'recheck',
        atMs: NOW + 30_000,
        reason: 'lease expires',
      });
    }
  });

  it('a re-check in the past is due at once, never earlier than now', () => {
    expect(recheckAt(NOW - 5_000, NOW, 'overdue')).toEqual({
      kind: 'recheck',
      afterMs: 0,
      reason: 'overdue',
    });
    expect(() => recheckAfter(Number.NaN, 'x')).toThrow(/finite/);
  });

  it('naks a transient error with the error backoff, growing with the delivery count', () => {
    expect(settlementFor(failed('transient'), first, policy, NOW)).toMatchObject({
      action: 'nak',
      delayMs: 1_000,
    });
    expect(
      settlementFor(failed('transient'), { deliveryCount: 2, maxDeliver: 3 }, policy, NOW),
    ).toMatchObject({
      action: 'nak',
      delayMs: 2_000,
      kind: 'transient',
    });
  });

  it('naks a conflict with the short conflict backoff', () => {
    expect(settlementFor(failed('conflict'), first, policy, NOW)).toMatchObject({
      action: 'nak',
      delayMs: 100,
      kind: 'conflict',
    });
  });

  it('dead-letters a permanent error at once, on the first delivery', () => {
    expect(settlementFor(failed('permanent'), first, policy, NOW)).toEqual({
      action: 'dead-letter',
      kind: 'permanent',
      reason: 'boom',
    });
  });

  it('dead-letters a transient error or a conflict on the last attempt, with the attempt in the reason', () => {
    expect(settlementFor(failed('transient'), last, policy, NOW)).toEqual({
      action: 'dead-letter',
      kind: 'max-deliver',
      reason: 'transient on attempt 3 of 3: boom',
    });
    expect(settlementFor(failed('conflict'), last, policy, NOW)).toMatchObject({ kind: 'max-deliver' });
  });

  it('never dead-letters for a bus failure: the last attempt republishes afresh', () => {
    expect(settlementFor(failed('infrastructure'), first, policy, NOW)).toMatchObject({ action: 'nak' });
    expect(settlementFor(failed('infrastructure'), last, policy, NOW)).toEqual({
      action: 'republish',
      reason: 'boom',
    });
  });

  it('dead-letters a delivery beyond the budget without running the handler, and an invalid payload at once', () => {
    expect(
      settlementFor({ type: 'beyond-budget' }, { deliveryCount: 4, maxDeliver: 3 }, policy, NOW),
    ).toMatchObject({
      action: 'dead-letter',
      kind: 'max-deliver',
    });
    expect(settlementFor({ type: 'invalid', reason: 'bad' }, first, policy, NOW)).toEqual({
      action: 'dead-letter',
      kind: 'invalid',
      reason: 'bad',
    });
  });

  it('abandons an attempt that lost its lease: nothing is sent', () => {
    expect(settlementFor({ type: 'abandoned', reason: 'lease lapsed' }, first, policy, NOW)).toEqual({
      action: 'abandon',
      reason: 'lease lapsed',
    });
  });

  describe('on a partition, where a nak would hold back every other key', () => {
    const onPartition = { deliveryCount: 1, maxDeliver: 3, holdsPartition: true };

    it('a retry that waits half a second or more goes off the consumer, carrying the attempts failed so far', () => {
      expect(settlementFor(failed('transient'), onPartition, policy, NOW)).toEqual({
        action: 'retry-later',
        atMs: NOW + 1_000,
        failedAttempts: 1,
        kind: 'transient',
        reason: 'boom',
      });
    });

    it('a short wait stays a nak: a conflict retries sooner than a schedule would fire', () => {
      expect(settlementFor(failed('conflict'), onPartition, policy, NOW)).toMatchObject({
        action: 'nak',
        delayMs: 100,
      });
    });

    it('a bus failure stays a nak: the schedule would fail the same way', () => {
      expect(settlementFor(failed('infrastructure'), onPartition, policy, NOW)).toMatchObject({
        action: 'nak',
      });
    });

    it('the budget counts the attempts of earlier copies: the backoff grows and the last one dead-letters', () => {
      expect(
        settlementFor(failed('transient'), { ...onPartition, earlierFailures: 1 }, policy, NOW),
      ).toMatchObject({ action: 'retry-later', atMs: NOW + 2_000, failedAttempts: 2 });
      expect(settlementFor(failed('transient'), { ...onPartition, earlierFailures: 2 }, policy, NOW)).toEqual(
        {
          action: 'dead-letter',
          kind: 'max-deliver',
          reason: 'transient on attempt 3 of 3: boom',
        },
      );
    });

    it('off a partition the same failure is a nak, as before', () => {
      expect(settlementFor(failed('transient'), first, policy, NOW)).toMatchObject({ action: 'nak' });
    });
  });

  it('keeps the message when the publish a settlement needed failed', () => {
    expect(afterPublishFailed({ deliveryCount: 2, maxDeliver: 3 }, policy, 'no responders')).toEqual({
      action: 'nak',
      delayMs: 2_000,
      kind: 'infrastructure',
      reason: 'no responders',
    });
  });
});
