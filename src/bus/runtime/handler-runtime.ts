/**
 * The handler runtime: runs one concern's handler over its durable pull
 * consumer(s), on every replica of that handler. What holds, and why:
 *
 * - **Horizontal scale.** All replicas pull from the same durable consumer(s)
 *   (`consumers.ts`); the server hands each message to one puller.
 * - **Per-key serialization** (partitioned mode): one durable per partition
 *   with `max_ack_pending: 1`, every replica pulling from every partition.
 *   The server frees a partition on the first ack it gets for the delivered
 *   message, even a late one from an attempt it has already redelivered
 *   elsewhere. So each attempt holds a lease (`lease.ts`, `attempt.ts`):
 *   it starts when the pull was sent, confirmed `+WPI` progress (every
 *   ack_wait/3, sooner when it runs short) keeps it, and the runtime acks
 *   or naks ONLY within it. An attempt whose lease lapsed (event loop stalled,
 *   connection cut) is abandoned: its signal aborts and nothing is sent, so a
 *   late completion can never release the partition while the redelivered
 *   attempt runs.
 * - **Handler deadline** (`handlerTimeoutMs`). At the deadline the signal
 *   aborts; a handler that settles within {@link HANDLER_GRACE_MS} is settled
 *   as usual (a failure is nak'd with backoff), one that does not is abandoned:
 *   no more progress and no nak, so the message is redelivered only after
 *   ack_wait, while the hung write finishes or fails. The drain timeout of
 *   `stop()` follows the same rule: the message is never handed to another
 *   replica while the first attempt may still write.
 * - **The handler's side of the contract.** An abandoned attempt may still be
 *   running when another replica gets the message, so at-most-one *attempt*
 *   per key is not what the runtime promises; it promises never to ack an
 *   attempt it may have lost. Handlers therefore make every Kubernetes write
 *   conditional — a `resourceVersion` precondition, or server-side apply with
 *   the concern's field manager — so a stale writer loses (409) instead of
 *   overwriting the newer attempt's result; and they pass `ctx.signal` to
 *   their I/O so an abandoned attempt stops early.
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
 * - **Outcomes, settled by one pure decision.** The handler returns `done` or
 *   `recheck after T` (`outcome.ts`), or throws; `settlementFor`
 *   (`settlement.ts`) turns that into one action, which `settle-actions.ts` sends.
 *   A re-check is a message schedule published before the ack (`recheck.ts`):
 *   durable, and never a failed delivery.
 * - **Retries with backoff.** A handler error is nak'd with a delay that grows
 *   with the delivery count (`backoff.ts`); a Kubernetes 409 conflict is its
 *   own kind with a shorter backoff (`errors.ts`). A `PermanentError` is
 *   dead-lettered at once.
 * - **The bus's failures are not the message's.** A failure classified
 *   `infrastructure` (stream missing, JetStream not enabled, timeout, no
 *   responders, connection closed) is retried with backoff like any other,
 *   but when it ends the attempt budget the message is republished afresh
 *   (`republish.ts`) and the original acked: a NATS restart never
 *   dead-letters work.
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
 *   handlers up to the drain timeout, then cuts them short as at the deadline.
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
import type { Logger } from 'pino';
import { type BackoffPolicy, retryDelayMs } from '../../runtime/backoff.ts';
import { BucketCounts } from '../../runtime/bucket-counts.ts';
import type { Clock } from '../../runtime/clock.ts';
import { followConnection } from '../connection-state.ts';
import { isConsumerNotFound } from '../errors.ts';
import { STREAMS } from '../topology.ts';
import { AttemptLease } from './attempt.ts';
import { ensureConsumer, type PlannedConsumer, planHandlerConsumers } from './consumers.ts';
import { describeError } from './errors.ts';
import type { HandlerContext } from './handler.ts';
import { type HandlerCounters, noHandlerCounters } from './handler-counters.ts';
import { type LeaseTimings, leaseTimings, pullExpiryMs } from './lease.ts';
import type { Outcome } from './outcome.ts';
import { keyOfPartitionedSubject } from './partition.ts';
import { admitPayload } from './payload.ts';
import { failedAttemptsOf, recheckDueOf } from './recheck.ts';
import {
  type HandlerRuntimeOptions,
  type ResolvedRuntimeOptions,
  resolveRuntimeOptions,
} from './runtime-options.ts';
import { SettleActions } from './settle-actions.ts';
import { type AttemptResult, type DeliveryInfo, settlementFor } from './settlement.ts';
import { retryWhileBusUnavailable } from './while-unavailable.ts';

/** One consumer's state on the server, as the runtime reads it for metrics. */
export interface ConsumerState {
  consumer: string;
  /** Matching messages not yet delivered: the backlog. */
  pending: number;
  /** Delivered and not yet acked: in flight, or held by a replica that died. */
  ackPending: number;
  /** Delivered more than once and not yet acked. */
  redelivered: number;
}

/** Bounds of the attempt-duration histogram (seconds): a view read and one or two writes. */
export const ATTEMPT_SECONDS_BOUNDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * A running handler runtime and what it knows of its work, for whoever observes it: a worker's
 * wiring hands it to the metrics (metrics/worker-metrics.ts), which read it at each scrape.
 */
export interface HandlerRuntime {
  readonly concern: string;
  /** A snapshot of the counters. */
  counters(): HandlerCounters;
  /** How long attempts took, from the message's arrival to its settlement, whatever they came to. */
  readonly attemptSeconds: BucketCounts;
  /**
   * Each of the runtime's consumers as the server reports it now (one request each, within the
   * connection's request timeout); those it cannot read are left out.
   */
  consumerStates(): Promise<ConsumerState[]>;
  /** Stop pulling, drain in-flight work (bounded by the drain timeout), resolve when every lane ended. */
  stop(opts?: { drainTimeoutMs?: number }): Promise<void>;
  /** Resolves when the runtime has stopped. */
  readonly stopped: Promise<void>;
}

interface InFlight {
  /** Starts the handler's grace, as the deadline does. */
  cutShort: (reason: string) => void;
  log: Logger;
}

/** After the deadline, how long a handler may take to settle: enough for an aborted request to unwind. */
export const HANDLER_GRACE_MS = 2_000;

/** A lane whose pull failed: 200 ms doubling to 5 s while its consumer is checked and re-added. */
const PULL_FAILURE_BACKOFF: BackoffPolicy = { baseMs: 200, maxMs: 5_000 };

/** Starts pulling. Resolves once the consumers exist (when ensured at start) and the lanes are running. */
export async function startHandlerRuntime<T>(opts: HandlerRuntimeOptions<T>): Promise<HandlerRuntime> {
  const resolved = resolveRuntimeOptions(opts);
  const runtime = new Runtime(resolved, await jetstreamManager(opts.nc));
  await runtime.start();
  return runtime;
}

class Runtime<T> implements HandlerRuntime {
  readonly concern: string;
  readonly stopped: Promise<void>;
  private readonly opts: ResolvedRuntimeOptions<T>;
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly plan: PlannedConsumer[];
  private readonly timings: LeaseTimings;
  private readonly log: Logger;
  private readonly clock: Clock;
  private readonly settleActions: SettleActions;
  readonly attemptSeconds = new BucketCounts(ATTEMPT_SECONDS_BOUNDS);
  private readonly counts = noHandlerCounters();
  private readonly inFlight = new Set<InFlight>();
  private readonly fetches = new Set<ConsumerMessages>();
  private readonly stopping = new AbortController();
  private lanes: Promise<void>[] = [];
  private resolveStopped: () => void = () => undefined;
  private stopCalled: Promise<void> | undefined;
  private readonly recreating = new Map<string, Promise<void>>();

  constructor(opts: ResolvedRuntimeOptions<T>, jsm: JetStreamManager) {
    this.opts = opts;
    this.concern = opts.concern;
    this.jsm = jsm;
    this.js = jetstream(opts.nc);
    this.plan = planHandlerConsumers(opts.consumers);
    this.timings = leaseTimings(opts.consumers.ackWaitMs);
    this.log = opts.log.child({ concern: opts.concern });
    this.clock = opts.clock;
    const connection = followConnection(opts.nc);
    this.settleActions = new SettleActions({
      js: this.js,
      connected: () => connection.connected(),
      counts: this.counts,
      delivery: (m) => this.delivery(m),
      policy: opts.policy,
      clock: opts.clock,
      deadLetterSubject: opts.deadLetterSubject,
      republishWhileLatest: opts.consumers.republishWhileLatest === true,
      requestTimeoutMs: opts.requestTimeoutMs,
    });
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  counters(): HandlerCounters {
    return { ...this.counts, inFlight: this.inFlight.size };
  }

  async consumerStates(): Promise<ConsumerState[]> {
    const read = async (c: PlannedConsumer): Promise<ConsumerState | undefined> => {
      const info = await this.jsm.consumers.info(c.stream, c.name).catch(() => undefined);
      return (
        info && {
          consumer: c.name,
          pending: info.num_pending,
          ackPending: info.num_ack_pending,
          redelivered: info.num_redelivered,
        }
      );
    };
    const states = await Promise.all(this.plan.map(read));
    return states.filter((s): s is ConsumerState => s !== undefined);
  }

  async start(): Promise<void> {
    if (this.opts.ensureConsumersAtStart) {
      // On a cluster each consumer is a replicated group of its own, and creating 64 of them while
      // a node restarts or the stream elects a leader can outlast a request's timeout.
      for (const c of this.plan)
        await retryWhileBusUnavailable(`creating consumer ${c.name}`, () => ensureConsumer(this.jsm, c), {
          log: this.log,
        });
    }
    const lanes: Array<[PlannedConsumer, number]> =
      this.opts.consumers.mode === 'shared'
        ? Array.from({ length: this.opts.concurrency }, (_, i) => {
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
    this.stopCalled ??= this.doStop(opts.drainTimeoutMs ?? this.opts.drainTimeoutMs);
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
      for (const f of this.inFlight) f.cutShort(`drain timeout of ${drainTimeoutMs} ms passed`);
      await Promise.all(this.lanes);
    }
    // Naks are plain publishes: flush so they reach the server before the caller closes.
    await this.opts.nc.flush().catch(() => undefined);
    this.log.info({ counters: this.counters() }, 'handler runtime stopped');
    this.resolveStopped();
  }

  private async lane(planned: PlannedConsumer, index: number): Promise<void> {
    const log = this.log.child({ consumer: planned.name, lane: index });
    const expires = pullExpiryMs(this.opts.pullExpiresMs, this.timings);
    let failures = 0;
    // Looked up once and reused: a lookup is a $JS.API info request, too costly per message.
    let consumer: Consumer | undefined;
    while (!this.stopping.signal.aborted) {
      let fetch: ConsumerMessages | undefined;
      try {
        consumer ??= await this.js.consumers.get(planned.stream, planned.name);
        // The lease of a message starts here: the server cannot have delivered it before this pull.
        const pulledAt = this.clock.monotonic();
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
          await this.process(m, planned, pulledAt);
        }
        failures = 0;
      } catch (err) {
        if (this.stopping.signal.aborted) break;
        failures++;
        consumer = undefined;
        log.warn({ err: describeError(err), failures }, 'pull failed; checking the consumer');
        await this.recover(planned, log);
        await this.clock.sleep(retryDelayMs(failures, PULL_FAILURE_BACKOFF), this.stopping.signal);
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

  /** Plumbing: what the attempt came to, the one decision of what to send (`settlement.ts`), then sending it. */
  private async process(m: JsMsg, planned: PlannedConsumer, pulledAt: number): Promise<void> {
    // Lease arithmetic runs on the monotonic clock: a wall-clock step must not extend or shorten a lease.
    const arrivedAt = this.clock.monotonic();
    const attempt = new AttemptLease(this.opts.nc, m, this.timings, () => this.clock.monotonic(), pulledAt);
    const key = this.keyOf(m.subject);
    const log = this.log.child({
      consumer: planned.name,
      subject: m.subject,
      seq: m.info.streamSequence,
      key,
      ...this.opts.keyLogFields(key),
      deliveryCount: m.info.deliveryCount,
    });
    try {
      const result = await this.attempt(m, key, attempt, log);
      await this.settleActions.settle(
        m,
        attempt,
        settlementFor(result, this.delivery(m), this.opts.policy, this.clock.now()),
        log,
      );
    } finally {
      attempt.end();
      this.attemptSeconds.observe((this.clock.monotonic() - arrivedAt) / 1000);
    }
  }

  private delivery(m: JsMsg): DeliveryInfo {
    return {
      deliveryCount: m.info.deliveryCount,
      maxDeliver: this.opts.consumers.maxDeliver,
      earlierFailures: failedAttemptsOf(m.headers),
      holdsPartition: this.holdsPartition(m),
    };
  }

  /** Whether `m` came from a partition of WORK, where a waiting retry would hold back the partition's other keys. */
  private holdsPartition(m: JsMsg): boolean {
    return (
      m.info.stream === STREAMS.work &&
      this.plan.some((c) => c.partition !== undefined && c.name === m.info.consumer)
    );
  }

  /** Admits the message (budget, payload) and runs the handler on it. */
  private async attempt(m: JsMsg, key: string, attempt: AttemptLease, log: Logger): Promise<AttemptResult> {
    if (m.info.deliveryCount > this.opts.consumers.maxDeliver) return { type: 'beyond-budget' };
    const decoded = this.decode(m);
    if ('invalid' in decoded) return { type: 'invalid', reason: decoded.invalid };
    return this.runHandler(decoded.value, m, key, attempt, log);
  }

  private decode(m: JsMsg): { value: T } | { invalid: string } {
    const admitted = admitPayload(m, this.opts.schema, this.opts.decode);
    return admitted.ok ? { value: admitted.value } : { invalid: admitted.reason };
  }

  /**
   * Runs the handler under its deadline. Past the deadline (or the drain
   * timeout) the signal aborts and the handler gets a grace to settle; one
   * that does not is abandoned, so no other replica gets the message while
   * this attempt may still write (until ack_wait ends).
   */
  private async runHandler(
    data: T,
    m: JsMsg,
    key: string,
    attempt: AttemptLease,
    log: Logger,
  ): Promise<AttemptResult> {
    const timeoutMs = this.opts.handlerTimeoutMs;
    let cutShort: (reason: string) => void = () => undefined;
    const cut = new Promise<string>((resolve) => {
      cutShort = resolve;
    });
    const entry: InFlight = { cutShort, log };
    this.inFlight.add(entry);
    const deadline = setTimeout(() => cutShort(`handler deadline of ${timeoutMs} ms passed`), timeoutMs);
    const recheckDueAtMs = recheckDueOf(m.headers);
    const ctx: HandlerContext = {
      subject: m.subject,
      seq: m.info.streamSequence,
      deliveryCount: m.info.deliveryCount,
      key,
      headers: m.headers,
      log,
      signal: attempt.signal,
      deadline: this.clock.now() + timeoutMs,
      publishedAtMs: Math.floor(m.info.timestampNanos / 1e6),
      ...(recheckDueAtMs !== undefined && { recheckDueAtMs }),
    };
    try {
      // Through a promise, so a handler that throws synchronously is a failure like any other.
      const settled = new Promise<Outcome>((resolve) => resolve(this.opts.handle(data, ctx))).then(
        (outcome): AttemptResult => ({ type: 'returned', outcome }),
        (err: unknown): AttemptResult => ({
          type: 'failed',
          kind: this.opts.classify(err),
          reason: describeError(err),
        }),
      );
      const abandoned = attempt.abandoned.then((reason): AttemptResult => ({ type: 'abandoned', reason }));
      const first = await Promise.race([settled, abandoned, cut.then((reason) => ({ cut: reason }))]);
      return 'cut' in first ? await this.graceAfterCut(first.cut, settled, attempt, log) : first;
    } finally {
      clearTimeout(deadline);
      this.inFlight.delete(entry);
    }
  }

  private graceAfterCut(
    reason: string,
    settled: Promise<AttemptResult>,
    attempt: AttemptLease,
    log: Logger,
  ): Promise<AttemptResult> {
    log.warn({ reason, graceMs: HANDLER_GRACE_MS }, 'handler cut short; waiting for it to settle');
    this.counts.timedOut++;
    attempt.cutShort(reason);
    const grace = this.clock
      .sleep(HANDLER_GRACE_MS)
      .then((): AttemptResult => ({ type: 'abandoned', reason: `${reason}; no settle within the grace` }));
    const abandoned = attempt.abandoned.then((r): AttemptResult => ({ type: 'abandoned', reason: r }));
    return Promise.race([settled, abandoned, grace]);
  }
}
