/**
 * One handler attempt's hold on its message (the adapter over `lease.ts`):
 * confirmed progress heartbeats while the handler runs, the abort signal the
 * handler sees, and the one gate every settle (ack, nak) goes through.
 *
 * Progress is a `+WPI` *request* to the message's reply subject: the server's
 * (empty) reply is what lets the lease move forward. A fire-and-forget
 * `working()` gives no such knowledge, so a replica whose heartbeats are lost
 * (cut off, event loop stalled) would go on to ack a message the server has
 * given away. When the lease lapses the attempt is abandoned: the signal
 * aborts, heartbeats stop and nothing is ever sent for this delivery again;
 * the server redelivers it after ack_wait.
 */
import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { extendedLease, type LeaseTimings, leaseFrom, leaseHeld, nextBeatDelayMs } from './lease.ts';

const PROGRESS = new TextEncoder().encode('+WPI');

/** The abort reason a handler sees when its attempt was abandoned or cut short. */
export class AttemptAbortedError extends Error {
  override readonly name = 'AttemptAbortedError';
}

/** The delivery's ack subject: `JsMsg` does not declare it, its implementation exposes it as `reply`. */
function ackSubjectOf(msg: JsMsg): string {
  const reply = (msg as JsMsg & { reply?: unknown }).reply;
  if (typeof reply !== 'string' || reply === '')
    throw new Error('a JetStream delivery without an ack subject');
  return reply;
}

export class AttemptLease {
  private leaseEndMs: number;
  private abandonedReason: string | undefined;
  private readonly abort = new AbortController();
  private heartbeat: NodeJS.Timeout | undefined;
  private lapseTimer: NodeJS.Timeout | undefined;
  private ended = false;
  private onAbandon: (reason: string) => void = () => undefined;
  /** Resolves with the reason once the attempt is abandoned. */
  readonly abandoned: Promise<string>;

  private readonly nc: NatsConnection;
  private readonly replySubject: string;
  private readonly timings: LeaseTimings;
  private readonly now: () => number;

  /** `pulledAtMs`: when the pull request that brought the message was sent (monotonic). */
  constructor(nc: NatsConnection, msg: JsMsg, timings: LeaseTimings, now: () => number, pulledAtMs: number) {
    this.nc = nc;
    this.replySubject = ackSubjectOf(msg);
    this.timings = timings;
    this.now = now;
    this.leaseEndMs = leaseFrom(pulledAtMs, timings);
    this.abandoned = new Promise((resolve) => {
      this.onAbandon = resolve;
    });
    this.scheduleBeat();
    this.armLapseTimer();
  }

  get signal(): AbortSignal {
    return this.abort.signal;
  }

  /** True while this replica may still settle the message; abandons the attempt the moment it is not. */
  held(): boolean {
    if (this.abandonedReason !== undefined) return false;
    if (leaseHeld(this.leaseEndMs, this.now())) return true;
    this.abandon('lease lapsed (event loop stalled or progress not confirmed within ack_wait)');
    return false;
  }

  get abandonedBecause(): string | undefined {
    return this.abandonedReason;
  }

  /** Aborts the handler's signal but keeps the lease (deadline, drain timeout): it may still settle in its grace. */
  cutShort(reason: string): void {
    if (!this.abort.signal.aborted) this.abort.abort(new AttemptAbortedError(reason));
  }

  /** Gives the message up without a word to the server: it redelivers after ack_wait. */
  abandon(reason: string): void {
    if (this.abandonedReason !== undefined) return;
    this.abandonedReason = reason;
    this.end();
    this.cutShort(reason);
    this.onAbandon(reason);
  }

  /** Stops heartbeats once the message was settled. */
  end(): void {
    this.ended = true;
    clearTimeout(this.heartbeat);
    clearTimeout(this.lapseTimer);
  }

  /** One progress request at a time: the next is scheduled when the previous one was answered or failed. */
  private scheduleBeat(): void {
    if (this.ended) return;
    const delay = nextBeatDelayMs(this.leaseEndMs, this.now(), this.timings);
    this.heartbeat = setTimeout(() => void this.beat().finally(() => this.scheduleBeat()), delay);
  }

  private armLapseTimer(): void {
    clearTimeout(this.lapseTimer);
    this.lapseTimer = setTimeout(() => this.held(), Math.max(0, this.leaseEndMs - this.now()));
  }

  private async beat(): Promise<void> {
    if (!this.held()) return;
    const sentMs = this.now();
    try {
      await this.nc.request(this.replySubject, PROGRESS, { timeout: Math.max(1, this.leaseEndMs - sentMs) });
    } catch {
      // Unconfirmed progress extends nothing; the lapse timer decides.
      return;
    }
    if (this.abandonedReason !== undefined) return;
    const extended = extendedLease(this.leaseEndMs, sentMs, this.now(), this.timings);
    if (extended === undefined) {
      this.held();
      return;
    }
    this.leaseEndMs = extended;
    this.armLapseTimer();
  }
}
