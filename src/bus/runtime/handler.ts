// The handler's side of the runtime's contract: what it is given for one attempt, and what it
// returns. Its writes are conditional and take `signal`, so an attempt the runtime abandoned
// loses to the one that replaced it (handler-runtime.ts, "The handler's side of the contract").
import type { MsgHdrs } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Outcome } from './outcome.ts';

export interface HandlerContext {
  subject: string;
  /** Stream sequence of the message. */
  seq: number;
  /** 1 on first delivery. */
  deliveryCount: number;
  /** The partition key (partitioned mode) or the subject. */
  key: string;
  headers: MsgHdrs | undefined;
  /** A child logger with concern, consumer, subject, seq, key (and its `target`, `config` or `instance`) and delivery count bound. */
  log: Logger;
  /**
   * Aborted at the handler deadline, at the drain timeout of `stop()`, or when
   * the attempt's lease lapsed (then the result is ignored). Pass it to I/O.
   */
  signal: AbortSignal;
  /** Wall-clock time (ms since epoch) at which `signal` aborts unless the handler settled. */
  deadline: number;
  /** Server timestamp of the message (ms since epoch). */
  publishedAtMs: number;
  /** Set when this trigger is a fired re-check: when it was due (ms since epoch; it may come late after an outage). */
  recheckDueAtMs?: number;
}

/**
 * Resolves with the attempt's {@link Outcome} once its effect is durable (`done`, or a re-check);
 * throws to fail. Always an outcome: a handler says it is done, nothing is assumed.
 */
export type Handler<T> = (data: T, ctx: HandlerContext) => Promise<Outcome>;
