/**
 * The handler runtime: runs one concern's handler over its durable pull
 * consumer(s), on every replica of that handler. What holds, and why:
 *
 * - **Horizontal scale.** All replicas pull from the same durable consumer(s)
 *   (`consumers.ts`); the server hands each message to one puller.
 * - **Per-key serialization** (partitioned mode): one durable per partition
 *   with `max_ack_pending: 1`, every replica pulling from every partition.
 *   While a handler runs, `working()` is sent every ack_wait/2, so the server
 *   never redelivers a message that a live replica is still working on; only
 *   a dead (or frozen for longer than ack_wait) replica loses its message.
 * - **No hoarding.** Each lane pulls with `fetch({max_messages: 1})` only when
 *   it is free, so no message waits in a client buffer with its ack_wait
 *   running while other replicas idle (the prefetch of `consume()` would).
 * - **Ack after effect.** A message is acked (`ackAck`, confirmed by the
 *   server) only after the handler's promise resolved — the handler resolves
 *   once its effect is durable. A crash before the ack means redelivery to
 *   another replica after ack_wait; handlers are idempotent, so that is safe.
 * - **Validated input.** The payload is decoded and checked against the zod
 *   schema before the handler sees it; a message that fails is dead-lettered at
 *   once (kind `invalid`), never retried: retrying cannot fix a payload.
 * - **Retries with backoff.** A handler error is nak'd with a delay that grows
 *   with the delivery count (`backoff.ts`); a Kubernetes 409 conflict is its
 *   own kind with a shorter backoff (`errors.ts`). A `PermanentError` is
 *   dead-lettered at once.
 * - **Dead-lettering never blocks the rest.** On the last handler attempt a
 *   failure is republished to the dead-letter subject with its reason, original
 *   subject, stream sequence and delivery count (`dead-letter.ts`), counted,
 *   and acked. A delivery beyond the attempt budget (the previous worker died
 *   without a verdict) is dead-lettered without running the handler.
 * - **Self-healing topology.** A lane whose pull fails (consumer deleted, not
 *   found, heartbeats missed, reconnect) checks that its consumer exists,
 *   re-adds it from the same plan if not, and pulls again. The connection is
 *   expected to reconnect forever (`connectBus` in `src/bus/connect.ts`).
 * - **Graceful stop.** `stop()` stops pulling at once (a message that still
 *   arrives is nak'd for immediate redelivery elsewhere), waits for in-flight
 *   handlers up to the drain timeout, then naks whatever is still running so
 *   another replica takes it without waiting for ack_wait.
 */
import {
  type Consumer,
  type ConsumerMessages,
  type ConsumerNotification,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import type { MsgHdrs, NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { type ZodType, z } from 'zod';
import {
  type BackoffPolicy,
  DEFAULT_CONFLICT_BACKOFF,
  DEFAULT_ERROR_BACKOFF,
  retryDelayMs,
} from './backoff.ts';
import {
  ensureConsumer,
  type HandlerConsumerSpec,
  isConsumerNotFound,
  type PlannedConsumer,
  planHandlerConsumers,
} from './consumers.ts';
import {
  type DeadLetterKind,
  deadLetterHeaders,
  deadLetterMsgId,
  deadLetterRecordFor,
} from './dead-letter.ts';
import { classifyFailure, describeError, type FailureKind } from './errors.ts';
import { keyOfPartitionedSubject } from './partition.ts';

export interface HandlerContext {
  subject: string;
  /** Stream sequence of the message. */
  seq: number;
  /** 1 on first delivery. */
  deliveryCount: number;
  /** The partition key (partitioned mode) or the subject. */
  key: string;
  headers: MsgHdrs | undefined;
  /** A child logger with concern, consumer, subject, seq, key and delivery count bound. */
  log: Logger;
  /** Aborted when the runtime gave the message back at stop (drain timeout): stop working, the result is ignored. */
  signal: AbortSignal;
  /** Server timestamp of the message (ms since epoch). */
  publishedAtMs: number;
}

export type Handler<T> = (data: T, ctx: HandlerContext) => Promise<void>;

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
  /** How long one pull waits for a message (ms, ≥ 1000). Default 10 s. */
  pullExpiresMs?: number;
  errorBackoff?: BackoffPolicy;
  conflictBackoff?: BackoffPolicy;
  classify?: (err: unknown) => FailureKind;
  /** How long `stop()` waits for in-flight handlers before giving their messages back. Default 20 s. */
  drainTimeoutMs?: number;
  /** Payload decoder; default JSON. Throwing means the message is invalid. */
  decode?: (m: JsMsg) => unknown;
  /** Create/update the consumers at start (default true). Set false when the topology owns them. */
  ensureConsumersAtStart?: boolean;
  /** Timeout for ack/dead-letter confirmations (ms). Default 5 s. */
  requestTimeoutMs?: number;
}

/** Monotonic counters (and one gauge) for metrics export. */
export interface HandlerCounters {
  /** Handler succeeded and the ack was sent. */
  processed: number;
  /** Nak'd for a later retry (conflicts included). */
  retried: number;
  /** Of `retried`, those that were Kubernetes conflicts. */
  conflicts: number;
  /** Published to the dead-letter subject (all kinds). */
  deadLettered: number;
  /** Of `deadLettered`, those that failed decoding or validation. */
  invalid: number;
  /** A dead-letter publish failed; the message was nak'd to try again. */
  deadLetterFailures: number;
  /** Given back (nak) at stop because the drain timeout passed, or arriving after stop. */
  released: number;
  /** The ack confirmation failed; the message may be redelivered (handlers are idempotent). */
  ackFailures: number;
  /** Consumers re-added after they were found missing. */
  consumersRecreated: number;
  /** Handlers running right now (gauge). */
  inFlight: number;
}

export interface HandlerRuntime {
  readonly concern: string;
  /** A snapshot of the counters. */
  counters(): HandlerCounters;
  /** Stop pulling, drain in-flight work (bounded by the drain timeout), resolve when every lane ended. */
  stop(opts?: { drainTimeoutMs?: number }): Promise<void>;
  /** Resolves when the runtime has stopped. */
  readonly stopped: Promise<void>;
}

interface InFlight {
  msg: JsMsg;
  released: boolean;
  abort: AbortController;
  release: () => void;
  releasedPromise: Promise<void>;
  log: Logger;
}

const DEFAULTS = {
  concurrency: 1,
  pullExpiresMs: 10_000,
  drainTimeoutMs: 20_000,
  requestTimeoutMs: 5_000,
};

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Starts pulling. Resolves once the consumers exist (when ensured at start) and the lanes are running. */
export async function startHandlerRuntime<T>(opts: HandlerRuntimeOptions<T>): Promise<HandlerRuntime> {
  const runtime = new Runtime(opts, await jetstreamManager(opts.nc));
  await runtime.start();
  return runtime;
}

class Runtime<T> implements HandlerRuntime {
  readonly concern: string;
  readonly stopped: Promise<void>;
  private readonly opts: HandlerRuntimeOptions<T>;
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly plan: PlannedConsumer[];
  private readonly log: Logger;
  private readonly counts: HandlerCounters = {
    processed: 0,
    retried: 0,
    conflicts: 0,
    deadLettered: 0,
    invalid: 0,
    deadLetterFailures: 0,
    released: 0,
    ackFailures: 0,
    consumersRecreated: 0,
    inFlight: 0,
  };
  private readonly inFlight = new Set<InFlight>();
  private readonly fetches = new Set<ConsumerMessages>();
  private readonly stopping = new AbortController();
  private lanes: Promise<void>[] = [];
  private resolveStopped: () => void = () => undefined;
  private stopCalled: Promise<void> | undefined;
  private readonly recreating = new Map<string, Promise<void>>();

  constructor(opts: HandlerRuntimeOptions<T>, jsm: JetStreamManager) {
    this.opts = opts;
    this.concern = opts.concern;
    this.jsm = jsm;
    this.js = jetstream(opts.nc);
    this.plan = planHandlerConsumers(opts.consumers);
    this.log = opts.log.child({ concern: opts.concern });
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
    if (opts.consumers.mode === 'partitioned' && opts.concurrency !== undefined) {
      throw new Error('concurrency is one lane per partition in partitioned mode; do not set it');
    }
  }

  counters(): HandlerCounters {
    return { ...this.counts, inFlight: this.inFlight.size };
  }

  async start(): Promise<void> {
    if (this.opts.ensureConsumersAtStart !== false) {
      for (const c of this.plan) await ensureConsumer(this.jsm, c);
    }
    const lanes: Array<[PlannedConsumer, number]> =
      this.opts.consumers.mode === 'shared'
        ? Array.from({ length: this.opts.concurrency ?? DEFAULTS.concurrency }, (_, i) => {
            const c = this.plan[0];
            if (!c) throw new Error('no consumer planned');
            return [c, i] as [PlannedConsumer, number];
          })
        : this.plan.map((c) => [c, 0] as [PlannedConsumer, number]);
    this.lanes = lanes.map(([c, i]) => this.lane(c, i));
    this.log.info(
      { consumers: this.plan.map((c) => c.name), lanes: lanes.length },
      'handler runtime started',
    );
  }

  async stop(opts: { drainTimeoutMs?: number } = {}): Promise<void> {
    this.stopCalled ??= this.doStop(
      opts.drainTimeoutMs ?? this.opts.drainTimeoutMs ?? DEFAULTS.drainTimeoutMs,
    );
    return this.stopCalled;
  }

  private async doStop(drainTimeoutMs: number): Promise<void> {
    this.log.info({ inFlight: this.inFlight.size, drainTimeoutMs }, 'stopping: no new pulls, draining');
    this.stopping.abort();
    for (const f of this.fetches) f.stop();
    const drained = Promise.all(this.lanes).then(() => true);
    const timedOut = new Promise<false>((resolve) =>
      setTimeout(() => resolve(false), drainTimeoutMs).unref(),
    );
    if (!(await Promise.race([drained, timedOut]))) {
      for (const f of this.inFlight) {
        f.log.warn('drain timeout: giving the message back for immediate redelivery');
        f.released = true;
        f.abort.abort(new Error('runtime stopping: drain timeout'));
        f.msg.nak();
        this.counts.released++;
        f.release();
      }
      await Promise.all(this.lanes);
    }
    // Naks and acks are plain publishes: flush so they reach the server before the caller closes.
    await this.opts.nc.flush().catch(() => undefined);
    this.log.info({ counters: this.counters() }, 'handler runtime stopped');
    this.resolveStopped();
  }

  private async lane(planned: PlannedConsumer, index: number): Promise<void> {
    const log = this.log.child({ consumer: planned.name, lane: index });
    const expires = this.opts.pullExpiresMs ?? DEFAULTS.pullExpiresMs;
    let failures = 0;
    // Looked up once and reused: a lookup is a $JS.API info request, too costly per message.
    let consumer: Consumer | undefined;
    while (!this.stopping.signal.aborted) {
      let fetch: ConsumerMessages | undefined;
      try {
        consumer ??= await this.js.consumers.get(planned.stream, planned.name);
        fetch = await consumer.fetch({ max_messages: 1, expires });
        this.fetches.add(fetch);
        if (this.stopping.signal.aborted) fetch.stop();
        void this.watchStatus(fetch, planned, log);
        for await (const m of fetch) {
          if (this.stopping.signal.aborted) {
            // Pulled before the stop but delivered after it: hand it to another replica now.
            m.nak();
            this.counts.released++;
            continue;
          }
          await this.process(m, planned);
        }
        failures = 0;
      } catch (err) {
        if (this.stopping.signal.aborted) break;
        failures++;
        consumer = undefined;
        log.warn({ err: describeError(err), failures }, 'pull failed; checking the consumer');
        await this.recover(planned, log);
        await sleep(Math.min(5_000, 100 * 2 ** Math.min(failures, 6)), this.stopping.signal);
      } finally {
        if (fetch) this.fetches.delete(fetch);
      }
    }
  }

  private async watchStatus(fetch: ConsumerMessages, planned: PlannedConsumer, log: Logger): Promise<void> {
    try {
      for await (const s of fetch.status()) this.onStatus(s, planned, log);
    } catch {
      // the status iterator ends with the fetch
    }
  }

  private onStatus(s: ConsumerNotification, planned: PlannedConsumer, log: Logger): void {
    if (s.type === 'consumer_deleted' || s.type === 'consumer_not_found' || s.type === 'stream_not_found') {
      log.warn({ status: s }, 'consumer gone; re-adding it');
      void this.recover(planned, log);
    } else if (s.type === 'heartbeats_missed' || s.type === 'exceeded_limits' || s.type === 'no_responders') {
      log.debug({ status: s }, 'pull status');
    }
  }

  /** If the consumer is missing, re-add it from its plan (once at a time per consumer). */
  private recover(planned: PlannedConsumer, log: Logger): Promise<void> {
    const running = this.recreating.get(planned.name);
    if (running) return running;
    const p = (async () => {
      try {
        await this.jsm.consumers.info(planned.stream, planned.name);
      } catch (err) {
        if (!isConsumerNotFound(err)) {
          log.warn({ err: describeError(err) }, 'consumer info failed');
          return;
        }
        try {
          await ensureConsumer(this.jsm, planned);
          this.counts.consumersRecreated++;
          log.warn('consumer was missing; re-added');
        } catch (addErr) {
          log.error({ err: describeError(addErr) }, 're-adding the consumer failed; will retry');
        }
      }
    })().finally(() => this.recreating.delete(planned.name));
    this.recreating.set(planned.name, p);
    return p;
  }

  private keyOf(subject: string): string {
    const spec = this.opts.consumers;
    if (spec.mode === 'partitioned') return keyOfPartitionedSubject(spec.prefix, subject) ?? subject;
    return subject;
  }

  private async process(m: JsMsg, planned: PlannedConsumer): Promise<void> {
    const maxDeliver = this.opts.consumers.maxDeliver;
    const key = this.keyOf(m.subject);
    const log = this.log.child({
      consumer: planned.name,
      subject: m.subject,
      seq: m.info.streamSequence,
      key,
      deliveryCount: m.info.deliveryCount,
    });
    if (m.info.deliveryCount > maxDeliver) {
      await this.deadLetter(
        m,
        'max-deliver',
        `no verdict after ${maxDeliver} handler attempts (a worker died or exceeded ack_wait)`,
        log,
      );
      return;
    }
    let data: T;
    try {
      const raw = (this.opts.decode ?? ((msg: JsMsg) => msg.json()))(m);
      const parsed = this.opts.schema.safeParse(raw);
      if (!parsed.success) {
        await this.deadLetter(
          m,
          'invalid',
          `schema validation failed: ${z.prettifyError(parsed.error)}`,
          log,
        );
        return;
      }
      data = parsed.data;
    } catch (err) {
      await this.deadLetter(m, 'invalid', `undecodable payload: ${describeError(err)}`, log);
      return;
    }

    let release: () => void = () => undefined;
    const releasedPromise = new Promise<void>((resolve) => {
      release = resolve;
    });
    const entry: InFlight = {
      msg: m,
      released: false,
      abort: new AbortController(),
      release,
      releasedPromise,
      log,
    };
    this.inFlight.add(entry);
    const heartbeatMs = Math.max(500, Math.floor(this.opts.consumers.ackWaitMs / 2));
    const heartbeat = setInterval(() => {
      if (!entry.released) m.working();
    }, heartbeatMs);
    const ctx: HandlerContext = {
      subject: m.subject,
      seq: m.info.streamSequence,
      deliveryCount: m.info.deliveryCount,
      key,
      headers: m.headers,
      log,
      signal: entry.abort.signal,
      publishedAtMs: Math.floor(m.info.timestampNanos / 1e6),
    };
    try {
      const outcome = await Promise.race([
        this.opts.handle(data, ctx).then(
          () => ({ ok: true as const }),
          (err: unknown) => ({ ok: false as const, err }),
        ),
        releasedPromise.then(() => ({ ok: 'released' as const })),
      ]);
      clearInterval(heartbeat);
      if (entry.released || outcome.ok === 'released') return;
      if (outcome.ok) {
        await this.ack(m, log);
        this.counts.processed++;
        log.debug('processed');
        return;
      }
      await this.onFailure(m, outcome.err, log);
    } finally {
      clearInterval(heartbeat);
      this.inFlight.delete(entry);
    }
  }

  private async onFailure(m: JsMsg, err: unknown, log: Logger): Promise<void> {
    const kind = (this.opts.classify ?? classifyFailure)(err);
    const maxDeliver = this.opts.consumers.maxDeliver;
    const reason = describeError(err);
    if (kind === 'permanent') {
      await this.deadLetter(m, 'permanent', reason, log);
      return;
    }
    if (m.info.deliveryCount >= maxDeliver) {
      await this.deadLetter(
        m,
        'max-deliver',
        `${kind} on attempt ${maxDeliver} of ${maxDeliver}: ${reason}`,
        log,
      );
      return;
    }
    const policy =
      kind === 'conflict'
        ? (this.opts.conflictBackoff ?? DEFAULT_CONFLICT_BACKOFF)
        : (this.opts.errorBackoff ?? DEFAULT_ERROR_BACKOFF);
    const delayMs = retryDelayMs(m.info.deliveryCount, policy);
    m.nak(delayMs);
    this.counts.retried++;
    if (kind === 'conflict') this.counts.conflicts++;
    log.info({ kind, delayMs, err: reason }, 'handler failed; retrying later');
  }

  private async ack(m: JsMsg, log: Logger): Promise<void> {
    try {
      await m.ackAck({ timeout: this.opts.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs });
    } catch (err) {
      this.counts.ackFailures++;
      log.warn({ err: describeError(err) }, 'ack not confirmed; the message may be redelivered');
    }
  }

  private async deadLetter(m: JsMsg, kind: DeadLetterKind, reason: string, log: Logger): Promise<void> {
    const record = deadLetterRecordFor(m, kind, reason, new Date());
    try {
      await this.js.publish(this.opts.deadLetterSubject, m.data, {
        headers: deadLetterHeaders(record),
        msgID: deadLetterMsgId(record.originalStream, record.originalSeq),
        timeout: this.opts.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
      });
    } catch (err) {
      this.counts.deadLetterFailures++;
      const delayMs = retryDelayMs(m.info.deliveryCount, this.opts.errorBackoff ?? DEFAULT_ERROR_BACKOFF);
      log.error(
        { err: describeError(err), kind, reason, delayMs },
        'dead-letter publish failed; the message stays and is retried',
      );
      m.nak(delayMs);
      return;
    }
    this.counts.deadLettered++;
    if (kind === 'invalid') this.counts.invalid++;
    log.warn({ kind, reason, deadLetterSubject: this.opts.deadLetterSubject }, 'dead-lettered');
    await this.ack(m, log);
  }
}
