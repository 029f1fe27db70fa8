// A handler runtime's options, resolved once: every default filled in and every rule between
// options checked before anything connects, so the runtime reads one settled object and a
// wrong option fails at start with its name, not on the first message.
import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { ZodType } from 'zod';
import {
  type BackoffPolicy,
  DEFAULT_CONFLICT_BACKOFF,
  DEFAULT_ERROR_BACKOFF,
} from '../../runtime/backoff.ts';
import { type Clock, systemClock } from '../../runtime/clock.ts';
import type { HandlerConsumerSpec } from './consumers.ts';
import { classifyFailure, type FailureKind } from './errors.ts';
import type { Handler } from './handler.ts';
import type { SettlementPolicy } from './settlement.ts';

export interface HandlerRuntimeOptions<T> {
  /** A connection that reconnects forever (see `connectBus`). The runtime does not close it. */
  nc: NatsConnection;
  /** Name used in logs and metrics, e.g. `handover`. */
  concern: string;
  consumers: HandlerConsumerSpec;
  schema: ZodType<T>;
  handle: Handler<T>;
  /** Subject dead-lettered messages are published to, e.g. `dlq.handover`; a stream must capture it. */
  deadLetterSubject: string;
  log: Logger;
  /** Shared mode: messages in flight per replica (lanes). Partitioned mode has one lane per partition. Default 1. */
  concurrency?: number;
  /** How long one pull waits for a message (ms, ≥ 1000; at most half a lease, see `lease.ts`). Default 10 s. */
  pullExpiresMs?: number;
  errorBackoff?: BackoffPolicy;
  conflictBackoff?: BackoffPolicy;
  classify?: (err: unknown) => FailureKind;
  /** How long `stop()` waits for in-flight handlers before cutting them short. Default 20 s. */
  drainTimeoutMs?: number;
  /** Handler deadline (ms); see {@link DEFAULT_HANDLER_TIMEOUT_MS}. */
  handlerTimeoutMs?: number;
  /** Payload decoder; default the bus's (`parsePayload`: JSON, gzip-compressed or not). Throwing means the message is invalid. */
  decode?: (m: JsMsg) => unknown;
  /** Create/update the consumers at start (default true). Set false when the topology owns them. */
  ensureConsumersAtStart?: boolean;
  /** Timeout for ack/dead-letter/re-check confirmations (ms). Default 5 s. */
  requestTimeoutMs?: number;
  /** Time source (tests inject one); default the system clock. */
  clock?: Clock;
  /**
   * What a log line about one key names it by, beside `key` (e.g. `{ target }`), so that one
   * target, config or instance is followed through every concern by the same field. Default none.
   */
  keyLogFields?: (key: string) => Record<string, string>;
}

/**
 * A handler reads the view and makes one or two Kubernetes writes. The API
 * server gives up on a request after its default `--request-timeout` of 60 s,
 * so a handler still running then is hung, not slow; cutting it there keeps a
 * hung write from holding its partition fleet-wide for longer than that plus
 * ack_wait.
 */
export const DEFAULT_HANDLER_TIMEOUT_MS = 60_000;

/** The options with every default applied: what the runtime reads. */
export interface ResolvedRuntimeOptions<T>
  extends Required<Omit<HandlerRuntimeOptions<T>, 'decode' | 'errorBackoff' | 'conflictBackoff'>> {
  /** Undefined: the bus's own decoder (`admitPayload` applies it). */
  decode: ((m: JsMsg) => unknown) | undefined;
  policy: SettlementPolicy;
}

/** Fills in the defaults and checks the options against each other; throws naming the wrong one. */
export function resolveRuntimeOptions<T>(opts: HandlerRuntimeOptions<T>): ResolvedRuntimeOptions<T> {
  if (opts.handlerTimeoutMs !== undefined && !(opts.handlerTimeoutMs > 0)) {
    throw new Error(`handlerTimeoutMs must be positive, got ${opts.handlerTimeoutMs}`);
  }
  if (opts.consumers.mode === 'partitioned' && opts.concurrency !== undefined) {
    throw new Error('concurrency is one lane per partition in partitioned mode; do not set it');
  }
  if (opts.concurrency !== undefined && !(Number.isInteger(opts.concurrency) && opts.concurrency >= 1)) {
    throw new Error(`concurrency must be a whole number of lanes, at least 1, got ${opts.concurrency}`);
  }
  const concurrency = opts.concurrency ?? 1;
  return {
    ...opts,
    concurrency,
    pullExpiresMs: opts.pullExpiresMs ?? 10_000,
    classify: opts.classify ?? classifyFailure,
    drainTimeoutMs: opts.drainTimeoutMs ?? 20_000,
    handlerTimeoutMs: opts.handlerTimeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS,
    decode: opts.decode,
    ensureConsumersAtStart: opts.ensureConsumersAtStart ?? true,
    requestTimeoutMs: opts.requestTimeoutMs ?? 5_000,
    clock: opts.clock ?? systemClock,
    keyLogFields: opts.keyLogFields ?? (() => ({})),
    policy: {
      errorBackoff: opts.errorBackoff ?? DEFAULT_ERROR_BACKOFF,
      conflictBackoff: opts.conflictBackoff ?? DEFAULT_CONFLICT_BACKOFF,
    },
  };
}
