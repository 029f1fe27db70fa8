// Carries out the one settlement `settlementFor` (settlement.ts) decided for an attempt: ack,
// nak, abandon, dead-letter, republish afresh, or schedule a re-check or a retry. Every action is sent only
// while the attempt still holds its lease and the connection is up, so an attempt that may have
// lost its message never settles it; a publish an action needs that fails falls back to a nak,
// so the message is tried again rather than lost.
import type { JetStreamClient, JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import type { Clock } from '../../runtime/clock.ts';
import { isWrongLastSequence } from '../errors.ts';
import type { AttemptLease } from './attempt.ts';
import {
  type DeadLetterKind,
  deadLetterHeaders,
  deadLetterMsgId,
  deadLetterRecordFor,
} from './dead-letter.ts';
import { describeError } from './errors.ts';
import type { HandlerCounters } from './handler-counters.ts';
import { scheduleRecheck } from './recheck.ts';
import { originOf, republishHeaders, republishMsgId } from './republish.ts';
import {
  afterPublishFailed,
  type DeliveryInfo,
  type Settlement,
  type SettlementPolicy,
} from './settlement.ts';

export interface SettleDeps {
  js: JetStreamClient;
  /** Whether the connection is up now: a settle sent while down could reach the server after the lease. */
  connected: () => boolean;
  /** The runtime's counters, counted here as actions are confirmed. */
  counts: HandlerCounters;
  delivery: (m: JsMsg) => DeliveryInfo;
  policy: SettlementPolicy;
  clock: Clock;
  deadLetterSubject: string;
  /** On a stream of records, a republish only while the message is still its subject's latest. */
  republishWhileLatest: boolean;
  /** Timeout for ack/dead-letter/re-check confirmations (ms). */
  requestTimeoutMs: number;
}

export class SettleActions {
  private readonly deps: SettleDeps;

  constructor(deps: SettleDeps) {
    this.deps = deps;
  }

  /** Carries out one settlement; a publish it needed that failed falls back to a nak. */
  async settle(m: JsMsg, attempt: AttemptLease, s: Settlement, log: Logger): Promise<void> {
    switch (s.action) {
      case 'ack':
        if (await this.ack(m, attempt, log)) this.deps.counts.processed++;
        return;
      case 'nak':
        if (!this.nak(m, attempt, s.delayMs, log)) return;
        this.deps.counts.retried++;
        if (s.kind === 'conflict') this.deps.counts.conflicts++;
        log.info({ kind: s.kind, delayMs: s.delayMs, err: s.reason }, 'handler failed; retrying later');
        return;
      case 'abandon':
        this.abandon(attempt, s.reason, log);
        return;
      case 'dead-letter':
        return this.deadLetter(m, attempt, s.kind, s.reason, log);
      case 'republish':
        return this.republishAfresh(m, attempt, s.reason, log);
      case 'recheck':
        return this.recheck(m, attempt, s.atMs, s.reason, log);
      case 'retry-later':
        return this.retryLater(m, attempt, s, log);
    }
  }

  private async afterPublishFailed(m: JsMsg, attempt: AttemptLease, what: string, err: unknown, log: Logger) {
    const fallback = afterPublishFailed(this.deps.delivery(m), this.deps.policy, describeError(err));
    log.warn(
      { err: fallback.reason, delayMs: fallback.delayMs },
      `${what} failed; the message stays and is retried`,
    );
    this.nak(m, attempt, fallback.delayMs, log);
  }

  /**
   * Schedules the trigger to come back at `atMs`, then acks it. Only within the
   * lease: an attempt that may have lost its message must not replace the
   * schedule the redelivered attempt makes.
   */
  private async recheck(m: JsMsg, attempt: AttemptLease, atMs: number, reason: string, log: Logger) {
    if (!this.mayStillSettle(attempt, log)) return;
    try {
      await scheduleRecheck(this.deps.js, m, atMs, reason, this.deps.requestTimeoutMs);
    } catch (err) {
      await this.afterPublishFailed(m, attempt, 're-check schedule', err, log);
      return;
    }
    if (!(await this.ack(m, attempt, log))) return;
    this.deps.counts.rechecks++;
    log.debug({ at: new Date(atMs).toISOString(), reason }, 're-check scheduled');
  }

  /**
   * A failed attempt's retry that would hold a partition: scheduled like a re-check, with the
   * attempts failed so far, then acked, so the partition's other keys go on meanwhile.
   */
  private async retryLater(
    m: JsMsg,
    attempt: AttemptLease,
    s: Extract<Settlement, { action: 'retry-later' }>,
    log: Logger,
  ): Promise<void> {
    if (!this.mayStillSettle(attempt, log)) return;
    try {
      await scheduleRecheck(this.deps.js, m, s.atMs, s.reason, this.deps.requestTimeoutMs, s.failedAttempts);
    } catch (err) {
      await this.afterPublishFailed(m, attempt, 'retry schedule', err, log);
      return;
    }
    if (!(await this.ack(m, attempt, log))) return;
    this.deps.counts.retried++;
    if (s.kind === 'conflict') this.deps.counts.conflicts++;
    log.info(
      { kind: s.kind, failedAttempts: s.failedAttempts, at: new Date(s.atMs).toISOString(), err: s.reason },
      'handler failed; retrying later, off the partition',
    );
  }

  /**
   * The bus failed on the last attempt: the message is fine, so it starts over instead of being
   * dead-lettered. On a stream of records (`republishWhileLatest`) only while it is still its
   * subject's latest: a newer record supersedes it, and an older copy must never follow the newer.
   */
  private async republishAfresh(m: JsMsg, attempt: AttemptLease, reason: string, log: Logger): Promise<void> {
    const { stream, streamSequence } = m.info;
    const whileLatest = this.deps.republishWhileLatest;
    try {
      await this.deps.js.publish(m.subject, m.data, {
        headers: republishHeaders(m.headers, originOf(m.headers, stream, streamSequence)),
        msgID: republishMsgId(stream, streamSequence),
        timeout: this.deps.requestTimeoutMs,
        ...(whileLatest ? { expect: { lastSubjectSequence: streamSequence } } : {}),
      });
    } catch (err) {
      if (whileLatest && isWrongLastSequence(err)) {
        if (await this.ack(m, attempt, log)) this.deps.counts.processed++;
        log.info('a newer record of the subject superseded this one; not republished');
        return;
      }
      await this.afterPublishFailed(m, attempt, 'republish', err, log);
      return;
    }
    if (!(await this.ack(m, attempt, log))) return;
    this.deps.counts.republished++;
    log.warn({ err: reason }, 'attempt budget spent on bus failures; republished afresh');
  }

  private abandon(attempt: AttemptLease, reason: string, log: Logger): void {
    attempt.abandon(reason);
    this.deps.counts.abandoned++;
    log.warn(
      { reason: attempt.abandonedBecause ?? reason },
      'attempt abandoned: nothing is sent, the server redelivers after ack_wait',
    );
  }

  /**
   * True while the attempt may settle; otherwise it is abandoned (and counted)
   * here. While disconnected a settle would sit in the client's reconnect
   * buffer and could reach the server after the lease, so none is sent.
   */
  private mayStillSettle(attempt: AttemptLease, log: Logger): boolean {
    const connected = this.deps.connected();
    if (connected && attempt.held()) return true;
    this.abandon(attempt, connected ? 'lease lapsed before settling' : 'disconnected from NATS', log);
    return false;
  }

  private nak(m: JsMsg, attempt: AttemptLease, delayMs: number, log: Logger): boolean {
    if (!this.mayStillSettle(attempt, log)) return false;
    m.nak(delayMs);
    return true;
  }

  /** Acks within the lease; false when the attempt was abandoned instead. */
  private async ack(m: JsMsg, attempt: AttemptLease, log: Logger): Promise<boolean> {
    if (!this.mayStillSettle(attempt, log)) return false;
    try {
      await m.ackAck({ timeout: this.deps.requestTimeoutMs });
    } catch (err) {
      this.deps.counts.ackFailures++;
      log.warn({ err: describeError(err) }, 'ack not confirmed; the message may be redelivered');
    }
    return true;
  }

  private async deadLetter(
    m: JsMsg,
    attempt: AttemptLease,
    kind: DeadLetterKind,
    reason: string,
    log: Logger,
  ): Promise<void> {
    const record = deadLetterRecordFor(m, kind, reason, new Date(this.deps.clock.now()));
    try {
      await this.deps.js.publish(this.deps.deadLetterSubject, m.data, {
        headers: deadLetterHeaders(record),
        msgID: deadLetterMsgId(record.originalStream, record.originalSeq),
        timeout: this.deps.requestTimeoutMs,
      });
    } catch (err) {
      this.deps.counts.deadLetterFailures++;
      await this.afterPublishFailed(m, attempt, `dead-letter publish (${kind}: ${reason})`, err, log);
      return;
    }
    // The dead-letter publish is deduplicated by stream and sequence, so an abandoned one is harmless.
    if (!(await this.ack(m, attempt, log))) return;
    this.deps.counts.deadLettered++;
    if (kind === 'invalid') this.deps.counts.invalid++;
    log.warn({ kind, reason, deadLetterSubject: this.deps.deadLetterSubject }, 'dead-lettered');
  }
}
