/**
 * Paced fan-out: one change fans out into many work items, and the fleet
 * releases them into their work subjects at a fixed rate (default 50/s) that
 * holds for ALL replicas together. JetStream (through 2.15) has no
 * message-rate limit (`rate_limit_bps` is bits/s and push-only), so the pacing
 * is built on the bus:
 *
 * 1. A producer publishes each item, as a {@link PacedItem} envelope naming its
 *    target subject, to a fan-out WorkQueue stream (`publishPaced`).
 * 2. Every replica runs a pacer: a handler runtime (shared durable consumer on
 *    the fan-out stream) whose handler claims a time-slot token in a KV bucket
 *    (`slot-claimer.ts`), then republishes the payload to the target subject
 *    with a deterministic `Nats-Msg-Id`, and only then lets the runtime ack.
 *    One token per slot of 1000/rate ms, each won by exactly one replica and
 *    only during its own slot, gives the fleet-wide rate.
 *
 * Guarantees: at most ceil(W*rate/1000)+1 releases in any W ms, on the
 * server's clock: each replica claims slots on its own clock corrected by its
 * measured offset to the NATS server (`server-clock.ts`), so a skewed replica
 * claims the same slots as the others (residual error: half a KV round trip); no item is lost (acked only after the
 * republish is stored); an item whose pacer died after publishing but before
 * acking is republished with the same message id, which the work stream's
 * duplicate window drops. Backlog = the pacer consumer's `num_pending`.
 * Everything the handler runtime guarantees (validation, dead-lettering,
 * consumer recreation, drain on stop) holds for the pacer too.
 *
 * A NATS restart or a lost bucket is not the item's fault: a claim or release
 * that fails on the bus is classified `infrastructure` (`runtime/errors.ts`),
 * retried with backoff, and never dead-lettered — an item whose attempts all
 * failed that way is republished afresh with its original identity, so its
 * release message id, `paced:<stream>:<first seq>`, stays the same. The slot
 * bucket lives on file storage and is re-created if a claim finds it gone,
 * always with the topology's replicas (`bus.streamReplicas`): a bucket a pacer
 * re-creates on a cluster must not come back with one copy.
 */
import { type JetStreamClient, StorageType } from '@nats-io/jetstream';
import { Kvm, type KvOptions } from '@nats-io/kv';
import { type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { HandlerConsumerSpec } from '../runtime/consumers.ts';
import { describeError, isInfrastructureError } from '../runtime/errors.ts';
import type { HandlerCounters } from '../runtime/handler-counters.ts';
import { type HandlerRuntime, startHandlerRuntime } from '../runtime/handler-runtime.ts';
import { done } from '../runtime/outcome.ts';
import { originOf } from '../runtime/republish.ts';
import { retryWhileBusUnavailable } from '../runtime/while-unavailable.ts';
import type { StreamReplicas } from '../topology.ts';
import { ServerClock } from './server-clock.ts';
import { SlotClaimer } from './slot-claimer.ts';
import { assertRate } from './slots.ts';

/** The default fleet-wide release rate (BRIEF §7). */
export const DEFAULT_PACER_RATE_PER_SECOND = 50;

/**
 * The slot bucket: one revision per key suffices (tokens are only created,
 * never updated); a minute of max_age is far longer than any slot is
 * contended, and bounds the bucket to rate*60 keys. File storage, so the
 * bucket survives a nats-server restart: in memory it vanished with the
 * server and every claim after the restart failed (issue 9, item 3).
 */
export const PACER_BUCKET_OPTIONS: Partial<KvOptions> = {
  history: 1,
  ttl: 60_000,
  storage: StorageType.File,
  description: 'switchyard pacer time-slot tokens',
};

// An item is checked for everything its release needs, so one the pacer cannot release is
// dead-lettered at once with what is wrong, not retried to max_deliver (a slot claimed each time)
// and dead-lettered with a stack overflow or a header error (found by payload.fuzz.test.ts).
const PUBLISHABLE_SUBJECT = /^[^\s.*>]+(\.[^\s.*>]+)*$/;
/** What nats.js accepts as a header name: printable ASCII but the colon. */
const HEADER_NAME = /^[!-9;-~]+$/;
const ONE_LINE = /^[^\r\n]*$/;

function isWritableJson(value: unknown): boolean {
  try {
    return typeof JSON.stringify(value) === 'string';
  } catch {
    return false;
  }
}

export const pacedItemSchema = z.object({
  /** The work subject the payload is released to. */
  subject: z
    .string()
    .regex(
      PUBLISHABLE_SUBJECT,
      'must be a subject to publish to: dot-separated tokens, no spaces or wildcards',
    ),
  /** The work item, published as JSON. Validated by the work handler's own schema. */
  payload: z
    .unknown()
    .refine(isWritableJson, 'must be a value the pacer can write as JSON (present, and not nested too deep)'),
  /** Message id of the released message; default `paced:<fan-out stream>:<seq>`. */
  msgId: z.string().min(1).regex(ONE_LINE, 'must be one line (it is a header value)').optional(),
  /** Extra headers of the released message. */
  headers: z
    .record(
      z.string().regex(HEADER_NAME, 'a header name is printable ASCII without spaces or colons'),
      z.string().regex(ONE_LINE, 'a header value must be one line'),
    )
    .optional(),
});
export type PacedItem = z.infer<typeof pacedItemSchema>;

/** Publishes one item for paced release. `msgID` dedups the fan-out publish itself. */
export async function publishPaced(
  js: Pick<JetStreamClient, 'publish'>,
  fanoutSubject: string,
  item: PacedItem,
  opts: { msgID?: string; timeoutMs?: number } = {},
): Promise<{ seq: number; duplicate: boolean }> {
  const checked = pacedItemSchema.parse(item);
  const pa = await js.publish(fanoutSubject, JSON.stringify(checked), {
    ...(opts.msgID === undefined ? {} : { msgID: opts.msgID }),
    timeout: opts.timeoutMs ?? 5_000,
  });
  return { seq: pa.seq, duplicate: pa.duplicate };
}

export interface PacerOptions {
  nc: NatsConnection;
  log: Logger;
  /** Name in logs and metrics, e.g. `config-fanout`. */
  concern: string;
  /** The fan-out WorkQueue stream and the pacer's shared durable on it. */
  stream: string;
  durable: string;
  filterSubject: string;
  /** Fleet-wide releases per second. Default 50. */
  ratePerSecond?: number;
  /** KV bucket of slot tokens; one bucket per pacer (rate domain). Created at start if missing. */
  bucket: string;
  /** Replicas of the bucket when this pacer creates it: the topology's (`bus.streamReplicas`), as `bus setup` applies. */
  bucketReplicas: StreamReplicas;
  /** Items in flight per replica. Default 2 (one waits for a slot while the other publishes). */
  lanes?: number;
  ackWaitMs?: number;
  /** Release attempts before an item is dead-lettered. Default 10. */
  maxDeliver?: number;
  deadLetterSubject: string;
  /** Token value, for debugging; default the connection's client id. */
  owner?: string;
  drainTimeoutMs?: number;
  /** This replica's wall clock (tests inject a skewed one); slots are claimed on it corrected to the server's. */
  clock?: () => number;
}

export interface PacerCounters extends HandlerCounters {
  /** Items released into their work subject. */
  itemsReleased: number;
  slotsWon: number;
  /** Slot claims lost to another replica (contention, not an error). */
  slotsLost: number;
}

export interface Pacer {
  counters(): PacerCounters;
  /** The handler runtime that releases the items, for a worker's wiring to hand to its metrics. */
  readonly runtime: HandlerRuntime;
  stop(opts?: { drainTimeoutMs?: number }): Promise<void>;
}

/** The pacer's one consumer, shared by every replica. */
export function pacerConsumers(
  opts: Pick<PacerOptions, 'stream' | 'durable' | 'filterSubject' | 'ackWaitMs' | 'maxDeliver'>,
): HandlerConsumerSpec {
  return {
    mode: 'shared',
    stream: opts.stream,
    durable: opts.durable,
    filterSubject: opts.filterSubject,
    ackWaitMs: opts.ackWaitMs ?? 30_000,
    maxDeliver: opts.maxDeliver ?? 10,
  };
}

export async function startPacer(opts: PacerOptions): Promise<Pacer> {
  const rate = opts.ratePerSecond ?? DEFAULT_PACER_RATE_PER_SECOND;
  assertRate(rate);
  const kvm = new Kvm(opts.nc);
  const bucketOptions: Partial<KvOptions> = { ...PACER_BUCKET_OPTIONS, replicas: opts.bucketReplicas };
  // `create` opens an existing bucket and creates a missing one, so it is also the repair.
  const kv = await retryWhileBusUnavailable(
    `opening slot bucket ${opts.bucket}`,
    () => kvm.create(opts.bucket, bucketOptions),
    { log: opts.log },
  );
  const recreateBucket = () =>
    kvm.create(opts.bucket, bucketOptions).then(
      () => opts.log.warn({ bucket: opts.bucket }, 'pacer slot bucket checked after a bus failure'),
      (err: unknown) => opts.log.warn({ err: describeError(err) }, 'pacer slot bucket not reachable yet'),
    );
  const owner = opts.owner ?? `client-${opts.nc.info?.client_id ?? 'unknown'}`;
  const serverClock = new ServerClock({
    kv,
    owner,
    log: opts.log,
    ...(opts.clock ? { local: opts.clock } : {}),
  });
  await serverClock.start();
  const claimer = new SlotClaimer({ kv, ratePerSecond: rate, owner, clock: serverClock.now });
  const js = kvm.js;
  let releasedCount = 0;
  const runtime = await startHandlerRuntime({
    nc: opts.nc,
    concern: opts.concern,
    log: opts.log,
    consumers: pacerConsumers(opts),
    concurrency: opts.lanes ?? 2,
    schema: pacedItemSchema,
    deadLetterSubject: opts.deadLetterSubject,
    ...(opts.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: opts.drainTimeoutMs }),
    errorBackoff: { baseMs: 200, maxMs: 10_000 },
    handle: async (item, ctx) => {
      const slot = await claimer.claim(ctx.signal).catch(async (err: unknown) => {
        if (isInfrastructureError(err)) await recreateBucket();
        throw err;
      });
      const h = natsHeaders();
      for (const [k, v] of Object.entries(item.headers ?? {})) h.set(k, v);
      await js.publish(item.subject, JSON.stringify(item.payload), {
        msgID: item.msgId ?? `paced:${originOf(ctx.headers, opts.stream, ctx.seq)}`,
        headers: h,
        timeout: 5_000,
      });
      releasedCount++;
      ctx.log.debug({ slot, target: item.subject }, 'released');
      return done;
    },
  });
  opts.log.info({ concern: opts.concern, rate, bucket: opts.bucket }, 'pacer started');
  return {
    runtime,
    counters: () => ({
      ...runtime.counters(),
      itemsReleased: releasedCount,
      slotsWon: claimer.won,
      slotsLost: claimer.lost,
    }),
    stop: (o) => {
      serverClock.stop();
      return runtime.stop(o);
    },
  };
}
