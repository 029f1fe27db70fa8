// The Prometheus metrics of a worker process (watchers, router, every handler), served on its
// probe port at /metrics (runtime/health-server.ts). One registry per process, like any
// Prometheus client's default: a worker is one process, and what it counts comes from several
// places (the handler runtime, the Kubernetes clients, the event recorder, the view, the
// handlers' decisions).
//
// Hot paths keep their own counts and the collectors below read them when Prometheus scrapes:
// the runtime's counters and attempt histogram, the event recorder's counters, a view's lag.
// Rare events (a Kubernetes request, a handover decision, a Lease read) count here directly.
//
// Nothing on the bus imports this file: the handler runtime and the view only expose what they
// know, and a worker's wiring hands each runtime and view it starts to `observeHandlerRuntime`
// and `observeViewLag` (handlers/run-handler.ts, handlers/assign/run.ts, handlers/router/run.ts). It reads their
// types, never the other way round, so no import circle runs through the metrics.
//
// Every name below is the contract of deploy/monitoring (the alerts and the dashboard): a test
// reads their queries and fails on a metric this file does not define (worker-metrics.test.ts),
// and the end-to-end run scrapes each one from the running workers.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { ConsumerState, HandlerCounters, HandlerRuntime } from '../bus/runtime/index.ts';
import type { ViewLag } from '../bus/view-lag.ts';
import type { EventCounters } from '../kube/event-recorder.ts';
import { systemClock } from '../runtime/clock.ts';
import { registerBuildInfo } from './build-info.ts';
import { HistogramFamily } from './histogram-family.ts';

export const workerRegistry = new Registry();

let processMetricsCollected = false;

/**
 * The registry a worker serves: everything below, plus the CPU, memory, event-loop lag and GC of
 * the process (prom-client's defaults, added on the first call: a test process that never serves
 * metrics does not sample them).
 */
export function workerMetricsToServe(): Registry {
  if (!processMetricsCollected) {
    processMetricsCollected = true;
    collectDefaultMetrics({ register: workerRegistry });
    registerBuildInfo(workerRegistry);
  }
  return workerRegistry;
}

// --- the handler runtime

const runtimes = new Set<HandlerRuntime>();

/** Counts `runtime`'s work in this process's metrics until it stops, or the returned function is called. */
export function observeHandlerRuntime(runtime: HandlerRuntime): () => void {
  runtimes.add(runtime);
  const unobserve = () => {
    runtimes.delete(runtime);
  };
  void runtime.stopped.then(unobserve);
  return unobserve;
}

/** How each settled message ended, from the runtime's counters (`settlement.ts` has the table). */
const OUTCOMES: Record<string, (c: HandlerCounters) => number> = {
  done: (c) => c.processed,
  recheck: (c) => c.rechecks,
  retry: (c) => c.retried - c.conflicts,
  conflict: (c) => c.conflicts,
  'dead-letter': (c) => c.deadLettered,
  republished: (c) => c.republished,
  abandoned: (c) => c.abandoned,
  released: (c) => c.released,
};

/** The runtimes' counters summed by concern (a test process may run two of one concern). */
function countersByConcern(): Map<string, HandlerCounters[]> {
  const out = new Map<string, HandlerCounters[]>();
  for (const runtime of runtimes) {
    const list = out.get(runtime.concern) ?? [];
    list.push(runtime.counters());
    out.set(runtime.concern, list);
  }
  return out;
}

function sumOf(list: HandlerCounters[], pick: (c: HandlerCounters) => number): number {
  return list.reduce((n, c) => n + pick(c), 0);
}

new Counter({
  name: 'switchyard_handler_messages_total',
  help: 'Messages a handler settled, by concern and outcome (done, recheck, retry, conflict, dead-letter, republished, abandoned, released).',
  labelNames: ['concern', 'outcome'] as const,
  registers: [workerRegistry],
  collect() {
    this.reset();
    for (const [concern, list] of countersByConcern())
      for (const [outcome, pick] of Object.entries(OUTCOMES))
        this.inc({ concern, outcome }, sumOf(list, pick));
  },
});

/** A counter with one series per concern, summed over its runtimes' counters at each scrape. */
function concernCounter(name: string, help: string, pick: (c: HandlerCounters) => number): void {
  new Counter({
    name,
    help,
    labelNames: ['concern'] as const,
    registers: [workerRegistry],
    collect() {
      this.reset();
      for (const [concern, list] of countersByConcern()) this.inc({ concern }, sumOf(list, pick));
    },
  });
}

concernCounter(
  'switchyard_handler_rechecks_scheduled_total',
  'Durable re-checks a handler scheduled (it asked to look at a key again later).',
  (c) => c.rechecks,
);
concernCounter(
  'switchyard_handler_dead_letters_total',
  'Messages a handler dead-lettered (invalid payload, permanent error, retries exhausted): inspect them with `switchyard dlq`.',
  (c) => c.deadLettered,
);

new Gauge({
  name: 'switchyard_handler_in_flight',
  help: 'Handler attempts running now.',
  labelNames: ['concern'] as const,
  registers: [workerRegistry],
  collect() {
    this.reset();
    for (const [concern, list] of countersByConcern())
      this.set(
        { concern },
        sumOf(list, (c) => c.inFlight),
      );
  },
});

new HistogramFamily(
  'switchyard_handler_attempt_seconds',
  'Time from a message’s arrival to its settlement: the decision and its writes.',
  () => [...runtimes].map((r) => ({ labels: { concern: r.concern }, counts: r.attemptSeconds })),
).register(workerRegistry);

/** Consumer states are read from the server at most this often, however often Prometheus scrapes. */
const CONSUMER_STATE_MAX_AGE_MS = 10_000;
let consumerStates: { at: number; states: { concern: string; state: ConsumerState }[] } | undefined;

async function currentConsumerStates(): Promise<{ concern: string; state: ConsumerState }[]> {
  if (consumerStates && systemClock.monotonic() - consumerStates.at < CONSUMER_STATE_MAX_AGE_MS)
    return consumerStates.states;
  const read = await Promise.all(
    [...runtimes].map(async (r) =>
      (await r.consumerStates()).map((state) => ({ concern: r.concern, state })),
    ),
  );
  consumerStates = { at: systemClock.monotonic(), states: read.flat() };
  return consumerStates.states;
}

function consumerGauge(name: string, help: string, pick: (s: ConsumerState) => number): void {
  new Gauge({
    name,
    help,
    labelNames: ['concern', 'consumer'] as const,
    registers: [workerRegistry],
    async collect() {
      this.reset();
      for (const { concern, state } of await currentConsumerStates())
        this.set({ concern, consumer: state.consumer }, pick(state));
    },
  });
}

consumerGauge(
  'switchyard_consumer_pending_messages',
  'Messages waiting for a handler consumer (its backlog), as the server reports it. Every replica reports the same value: aggregate with max.',
  (s) => s.pending,
);
consumerGauge(
  'switchyard_consumer_ack_pending_messages',
  'Messages delivered to a handler consumer and not yet acked (in flight, or held by a replica that died).',
  (s) => s.ackPending,
);
consumerGauge(
  'switchyard_consumer_redelivered_messages',
  'Messages of a handler consumer delivered more than once and not yet acked.',
  (s) => s.redelivered,
);

// --- views

/** What a view reports of how far behind the stream it is (bus/view.ts). */
export interface ViewLagSource {
  /** Per stream followed: sequences between the last applied and the bus's last answer. */
  lag(): ReadonlyMap<string, number>;
  /** Whether the view is current, and since when it was last confirmed so (bus/view-lag.ts). */
  freshness(): Pick<ViewLag, 'state' | 'confirmedAgoMs'>;
  /** Resolves when the view stops: it is no longer counted then. */
  readonly stopped: Promise<void>;
}

const views = new Set<ViewLagSource>();

/** Counts `view`'s lag in this process's metrics until it stops, or the returned function is called. */
export function observeViewLag(view: ViewLagSource): () => void {
  views.add(view);
  const unobserve = () => {
    views.delete(view);
  };
  void view.stopped.then(unobserve);
  return unobserve;
}

new Gauge({
  name: 'switchyard_view_lag_messages',
  help: 'Records of a stream a worker’s view had not applied at its last check of the bus, an upper bound (per stream; the largest view of the process).',
  labelNames: ['stream'] as const,
  registers: [workerRegistry],
  collect() {
    this.reset();
    const worst = new Map<string, number>();
    for (const view of views)
      for (const [stream, lag] of view.lag()) worst.set(stream, Math.max(lag, worst.get(stream) ?? 0));
    for (const [stream, lag] of worst) this.set({ stream }, lag);
  },
});

new Gauge({
  name: 'switchyard_view_current',
  help: 'Whether every view of the process is current: 1 when each was confirmed to hold what the bus held within view.maxLagSeconds, 0 when one is behind or cannot tell (decisions that need the present state wait).',
  registers: [workerRegistry],
  collect() {
    this.set([...views].every((view) => view.freshness().state === 'current') ? 1 : 0);
  },
});

new Gauge({
  name: 'switchyard_view_unconfirmed_seconds',
  help: 'Seconds since the least fresh view of the process was last confirmed to hold what the bus held (−1: never).',
  registers: [workerRegistry],
  collect() {
    let worst = 0;
    for (const view of views) {
      const ago = view.freshness().confirmedAgoMs;
      if (ago === undefined) {
        this.set(-1);
        return;
      }
      worst = Math.max(worst, ago / 1000);
    }
    this.set(worst);
  },
});

// --- Kubernetes clients

const kubeRequests = new Counter({
  name: 'switchyard_kube_requests_total',
  help: 'Requests to the apiserver by client (writes, informers, events), method and status code (`error`: no response).',
  labelNames: ['client', 'method', 'code'] as const,
  registers: [workerRegistry],
});

/** Counts one response (or `error`) of a request sent through the named client. */
export function countKubeResponse(client: string, method: string, code: number | 'error'): void {
  kubeRequests.inc({ client, method, code: String(code) });
}

// --- Events

const recorders = new Set<{ counters(): EventCounters }>();

export function observeEventRecorder(recorder: { counters(): EventCounters }): () => void {
  recorders.add(recorder);
  return () => recorders.delete(recorder);
}

/** What became of each Event, from the recorder's counters. */
const EVENT_RESULTS: Record<string, (c: EventCounters) => number> = {
  emitted: (c) => c.emitted,
  deduplicated: (c) => c.deduplicated,
  'dropped-rate-limited': (c) => c.droppedRateLimited,
  'dropped-queue-full': (c) => c.droppedQueueFull,
  'dropped-shutdown': (c) => c.droppedShutdown,
  rejected: (c) => c.rejected,
  failed: (c) => c.failed,
};

new Counter({
  name: 'switchyard_events_total',
  help: 'Kubernetes Events by result: emitted, deduplicated (already there), dropped (rate limit, full queue, shutdown), rejected or failed.',
  labelNames: ['result'] as const,
  registers: [workerRegistry],
  collect() {
    this.reset();
    for (const [result, pick] of Object.entries(EVENT_RESULTS))
      this.inc(
        { result },
        [...recorders].reduce((n, r) => n + pick(r.counters()), 0),
      );
  },
});

// --- served-set Leases (lease-aggregate)

const servedLeaseReports = new Counter({
  name: 'switchyard_served_lease_reports_total',
  help: 'Served-set Leases read by lease-aggregate, by state (live, stale, truncated, undecodable, futureSkewed): a truncated or undecodable one makes its instance’s served set unknown.',
  labelNames: ['state'] as const,
  registers: [workerRegistry],
});

const servedLeaseBytes = new Histogram({
  name: 'switchyard_served_lease_bytes',
  help: 'Size of the served-set annotation of each Lease read by lease-aggregate.',
  buckets: [64, 256, 1024, 4096, 16_384, 65_536, 131_072, 196_608, 262_144],
  registers: [workerRegistry],
});

/** One Lease as an aggregation read it: its state and the size of its annotation, if any. */
export function countServedLeaseReport(state: string, annotationBytes: number | undefined): void {
  servedLeaseReports.inc({ state });
  if (annotationBytes !== undefined) servedLeaseBytes.observe(annotationBytes);
}

// --- handover

const handoverDecisions = new Counter({
  name: 'switchyard_handover_decisions_total',
  help: 'Handover gate decisions, by action (patch: point the target at its destination; wait) and the HandoverReady reason they set (HandoverStalled: a move waiting past the stall threshold).',
  labelNames: ['action', 'reason'] as const,
  registers: [workerRegistry],
});

const handoverRepoints = new Counter({
  name: 'switchyard_handover_repoints_total',
  help: 'Targets whose spec.conversion was pointed at a new Service, by the reason the move went (FirstApply, HandoverReady, HandoverUnverified).',
  labelNames: ['reason'] as const,
  registers: [workerRegistry],
});

const handoverWait = new Histogram({
  name: 'switchyard_handover_wait_seconds',
  help: 'How long a move waited for its destination before the repoint (0 when the gate was open at once), by the reason it went.',
  labelNames: ['reason'] as const,
  buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
  registers: [workerRegistry],
});

export function countHandoverDecision(action: string, reason: string): void {
  handoverDecisions.inc({ action, reason });
}

/** A repoint that landed, and how long its move had waited. */
export function countHandoverRepoint(reason: string, waitedSeconds: number): void {
  handoverRepoints.inc({ reason });
  handoverWait.observe({ reason }, Math.max(0, waitedSeconds));
}

// --- resync (handlers/resync.ts)

const resyncRounds = new Counter({
  name: 'switchyard_resync_rounds_total',
  help: 'Resync rounds of a handler concern (every key reconciled again from the view), by round (start, period) and result (published; skipped: an earlier round was still being released; failed: given up until the next round).',
  labelNames: ['concern', 'round', 'result'] as const,
  registers: [workerRegistry],
});

const resyncKeys = new Counter({
  name: 'switchyard_resync_keys_total',
  help: 'Keys a handler concern published for resync (each one a work item, released at resync.ratePerSecond).',
  labelNames: ['concern'] as const,
  registers: [workerRegistry],
});

/** One resync round of `concern` and how it ended; `keys` published in it. */
export function countResyncRound(concern: string, round: string, result: string, keys: number): void {
  resyncRounds.inc({ concern, round, result });
  resyncKeys.inc({ concern }, keys);
}
