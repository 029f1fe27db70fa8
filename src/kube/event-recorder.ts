// Records Kubernetes Events (events.k8s.io/v1) for state transitions, on the
// events client. Events are discardable: under a storm they are shed, never
// allowed to delay writes or to grow memory.
//
//   record() ─▶ token bucket (eventQPS/eventBurst) ─▶ bounded queue ─▶ N senders ─▶ apiserver
//                 empty: drop + count                 full: drop + count
//
// `record` never waits and never throws. A sender retries only network errors
// (no HTTP response at all), with backoff, a bounded number of times. An Event
// that got any HTTP error status — 4xx, 429 and 5xx alike — is counted and
// not retried: that is client-go's rule (`recordEvent` in
// tools/record/event.go retries transport errors only and gives up on every
// StatusError), and an apiserver answering 429/5xx is shedding or failing
// under load, which a discardable request must not add to. Each Event has a
// fixed name, so a retry after a lost response meets 409 AlreadyExists
// instead of creating a duplicate; that 409 counts as emitted.
//
// What it does not do (client-go's broadcaster does): series aggregation and
// per-object spam filtering. Handlers record transitions, not heartbeats, so
// the bucket is the only spam guard needed so far.
import { createHash } from 'node:crypto';
import type { EventsV1Api, EventsV1Event } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { retryDelayMs } from '../runtime/backoff.ts';
import { systemClock } from '../runtime/clock.ts';
import { isConflict, statusOf } from './errors.ts';
import type { RateLimiter } from './rate-limiter.ts';

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  name: string;
  /** Absent for cluster-scoped objects: their Events go to the `default` namespace, as client-go does. */
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
}

export interface EventInput {
  regarding: ObjectRef;
  related?: ObjectRef;
  type: 'Normal' | 'Warning';
  /** Why the action was taken, CamelCase (e.g. `HandoverGated`); at most 128 characters. */
  reason: string;
  /** What was done or failed, CamelCase (e.g. `PatchConversion`); at most 128 characters. */
  action: string;
  /** Human-readable detail; cut to 1 kB. */
  note?: string;
  /**
   * The transition this Event reports, when it has an identity (e.g. "repointed <target> from
   * resourceVersion 42"): the Event's name derives from it, so a second record of the same
   * transition (a redelivered message, another replica, a retry) meets 409 and is one Event.
   */
  key?: string;
}

/** Where a handler sends its Events: the process's recorder, or a test's list. */
export type EventSink = Pick<EventRecorder, 'record'>;

export interface EventCounters {
  /** Accepted by the apiserver. */
  emitted: number;
  /** Keyed Events already there (409): the same transition recorded again, not emitted twice. */
  deduplicated: number;
  /** Shed by the token bucket. */
  droppedRateLimited: number;
  /** Admitted by the bucket but the queue was full. */
  droppedQueueFull: number;
  /** Recorded after close(). */
  droppedShutdown: number;
  /** All drops: the three above. */
  dropped: number;
  /** Answered with an HTTP error status (4xx or 5xx); not retried. */
  rejected: number;
  /** Network errors on every attempt. */
  failed: number;
  /** Retries after a network error. */
  retried: number;
  /** Waiting in the queue now. */
  queued: number;
  /** Being sent now. */
  inFlight: number;
}

export interface EventRecorderTuning {
  /** Concurrent creates; enough for eventQPS at a few ms per create. */
  concurrency: number;
  /** Tries per Event, first included. */
  maxAttempts: number;
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
}

export const DEFAULT_EVENT_TUNING: EventRecorderTuning = {
  // One create at a time, as client-go's broadcaster had before it grew a
  // goroutine per event: Events then hold at most one apiserver request of this
  // process at any moment. Measured (bench/client-split.ts, 2-core machine): a
  // full LIST of 2,000 objects took as long with an event backlog draining
  // through 1 sender as with none, but ~2× as long with 2 or 4 senders. One
  // sender does ~400 creates/s on loopback; where a create takes longer than
  // 1/eventQPS, the queue absorbs bursts and the excess is dropped and counted.
  concurrency: 1,
  // client-go tries 12 times over ~2 minutes; an Event that late is rarely
  // useful and holds a queue slot, so fewer tries, sooner.
  maxAttempts: 4,
  retryBaseDelayMs: 500,
  retryMaxDelayMs: 5_000,
};

export interface EventRecorderOptions extends Partial<EventRecorderTuning> {
  api: Pick<EventsV1Api, 'createNamespacedEvent'>;
  /** reportingController is `switchyard.dev/<component>`. */
  component: string;
  /** reportingInstance: the pod name. */
  instance: string;
  /** Admission: `tryAccept` only, events never wait. */
  admission: RateLimiter;
  queueSize: number;
  log?: Logger;
  /** Epoch time in microseconds. */
  nowMicros?: () => number;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
}

const REPORTING_DOMAIN = 'switchyard.dev';
const MAX_REASON = 128;
const MAX_NOTE_BYTES = 1024;
const MAX_NAME = 253;
const MAX_KEY = 1024;
/** On a keyed Event: the transition it reports (`EventInput.key`). */
export const KEYED_ANNOTATION = 'switchyard.dev/event-key';

/** events.k8s.io/v1 requires eventTime with microseconds; a JS Date has milliseconds. */
export class MicroTime extends Date {
  readonly epochMicros: number;
  constructor(epochMicros: number) {
    super(Math.floor(epochMicros / 1000));
    this.epochMicros = epochMicros;
  }
  override toISOString(): string {
    const micros = String(((this.epochMicros % 1_000_000) + 1_000_000) % 1_000_000).padStart(6, '0');
    return `${super.toISOString().slice(0, 19)}.${micros}Z`;
  }
}

export function epochMicrosNow(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

function truncateBytes(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  let cut = text.slice(0, maxBytes);
  while (Buffer.byteLength(cut) > maxBytes) cut = cut.slice(0, -1);
  return cut;
}

/**
 * The Event for `input`: pure, so tests can check every field. The name is the
 * regarding object's name plus a digest of the component and the key when the Event
 * has one (the same for every record of that transition), else a time-and-random
 * suffix (unique, and the same across retries of this Event).
 */
export function buildEvent(
  input: EventInput,
  {
    component,
    instance,
    epochMicros,
    suffix,
  }: { component: string; instance: string; epochMicros: number; suffix: string },
): EventsV1Event {
  const unique =
    input.key === undefined
      ? `.${epochMicros.toString(16)}${suffix}`
      : `.${createHash('sha256').update(`${component}\0${input.key}`).digest('hex').slice(0, 20)}`;
  const base = input.regarding.name.slice(0, MAX_NAME - unique.length).replace(/[.-]+$/, '');
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: {
      name: `${base}${unique}`,
      namespace: input.regarding.namespace || 'default',
      ...(input.key !== undefined && { annotations: { [KEYED_ANNOTATION]: input.key.slice(0, MAX_KEY) } }),
    },
    eventTime: new MicroTime(epochMicros),
    reportingController: `${REPORTING_DOMAIN}/${component}`,
    reportingInstance: instance.slice(0, MAX_REASON),
    regarding: { ...input.regarding },
    ...(input.related && { related: { ...input.related } }),
    type: input.type,
    reason: input.reason.slice(0, MAX_REASON),
    action: input.action.slice(0, MAX_REASON),
    ...(input.note !== undefined && { note: truncateBytes(input.note, MAX_NOTE_BYTES) }),
  };
}

function isKeyed(event: EventsV1Event): boolean {
  return event.metadata?.annotations?.[KEYED_ANNOTATION] !== undefined;
}

export class EventRecorder {
  private readonly options: EventRecorderOptions & EventRecorderTuning;
  private readonly queue: EventsV1Event[] = [];
  private readonly count = {
    emitted: 0,
    deduplicated: 0,
    droppedRateLimited: 0,
    droppedQueueFull: 0,
    droppedShutdown: 0,
    rejected: 0,
    failed: 0,
    retried: 0,
  };
  private inFlight = 0;
  private closed = false;
  private idleWaiters: (() => void)[] = [];

  constructor(options: EventRecorderOptions) {
    this.options = { ...DEFAULT_EVENT_TUNING, ...options };
  }

  /** Queues an Event; false when it was dropped (and counted). Never waits, never throws. */
  record(input: EventInput): boolean {
    if (this.closed) {
      this.count.droppedShutdown++;
      return false;
    }
    if (!this.options.admission.tryAccept()) {
      this.count.droppedRateLimited++;
      return false;
    }
    if (this.queue.length >= this.options.queueSize) {
      this.count.droppedQueueFull++;
      return false;
    }
    const random = this.options.random ?? Math.random;
    this.queue.push(
      buildEvent(input, {
        component: this.options.component,
        instance: this.options.instance,
        epochMicros: (this.options.nowMicros ?? epochMicrosNow)(),
        suffix: Math.floor(random() * 0x10000)
          .toString(16)
          .padStart(4, '0'),
      }),
    );
    this.pump();
    return true;
  }

  counters(): EventCounters {
    const c = this.count;
    return {
      ...c,
      dropped: c.droppedRateLimited + c.droppedQueueFull + c.droppedShutdown,
      queued: this.queue.length,
      inFlight: this.inFlight,
    };
  }

  /** Resolves when the queue is empty and nothing is in flight. */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stops accepting Events and waits up to `timeoutMs` for the queue to drain. */
  async close({ timeoutMs = 5_000 }: { timeoutMs?: number } = {}): Promise<void> {
    this.closed = true;
    const timeout = new AbortController();
    await Promise.race([this.idle(), systemClock.sleep(timeoutMs, timeout.signal)]);
    timeout.abort();
  }

  private pump(): void {
    while (this.inFlight < this.options.concurrency && this.queue.length > 0) {
      const event = this.queue.shift() as EventsV1Event;
      this.inFlight++;
      void this.send(event).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.queue.length === 0 && this.inFlight === 0) {
          for (const resolve of this.idleWaiters.splice(0)) resolve();
        }
      });
    }
  }

  private async send(event: EventsV1Event): Promise<void> {
    const { api, maxAttempts, log } = this.options;
    const namespace = event.metadata?.namespace ?? 'default';
    for (let attempt = 1; ; attempt++) {
      try {
        await api.createNamespacedEvent({ namespace, body: event });
        this.count.emitted++;
        return;
      } catch (err) {
        const status = statusOf(err);
        if (isConflict(err) && attempt > 1) {
          this.count.emitted++; // an earlier attempt landed; its response was lost
          return;
        }
        if (isConflict(err) && isKeyed(event)) {
          this.count.deduplicated++;
          return;
        }
        if (status !== undefined) {
          this.count.rejected++;
          log?.warn(
            { status, reason: event.reason, body: (err as { body?: unknown }).body },
            'event rejected',
          );
          return;
        }
        if (attempt >= maxAttempts) {
          this.count.failed++;
          log?.debug({ err, status, attempts: attempt }, 'event not delivered');
          return;
        }
        this.count.retried++;
        await (this.options.sleep ?? systemClock.sleep)(this.backoffMs(attempt));
      }
    }
  }

  /** Exponential from retryBaseDelayMs, capped, up to 25% shorter at random so senders do not retry in lockstep. */
  private backoffMs(attempt: number): number {
    const { retryBaseDelayMs: baseMs, retryMaxDelayMs: maxMs } = this.options;
    return retryDelayMs(attempt, { baseMs, maxMs, jitter: 0.25 }, this.options.random);
  }
}
