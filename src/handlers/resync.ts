// Resync: a handler concern reconciles every key of its concern from its view, once at start
// (the view has caught up by then) and then on a slow period, so that a work item lost,
// dead-lettered or decided on a wrong view cannot leave its key wrong until the next record
// about it. Controllers are level-triggered; a trigger is only a wake-up, and this is the
// wake-up that needs no record.
//
// A round is a fan-out: each key's work item goes to `fanout.resync.<concern>` and the
// concern's own resync pacer (durable `<concern>-resync` on FANOUT, slot bucket
// `pacer-<concern>-resync`) releases it into the key's work subject at `resync.ratePerSecond`,
// fleet-wide. Its own rate domain, not the assign fan-out's: a round of thousands of keys
// queued in front of an instance change's fan-out would hold that change's moves back for as
// long as the round takes. When rounds happen, under which ids, and when one is skipped is
// decided in core/resync.ts; this file does the I/O.
import { type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { type Pacer, publishPaced, startPacer } from '../bus/pacer/index.ts';
import { STREAMS, type StreamReplicas } from '../bus/topology.ts';
import type { ObjectView } from '../bus/view.ts';
import type { Config } from '../config/schema.ts';
import {
  decideRound,
  nextPeriodRound,
  type ResyncRound,
  resyncMsgId,
  roundName,
  roundSeconds,
} from '../core/resync.ts';
import { countResyncRound } from '../metrics/worker-metrics.ts';
import { DEFAULT_ERROR_BACKOFF, retryDelayMs } from '../runtime/backoff.ts';
import type { Clock } from '../runtime/clock.ts';
import type { ConcernWork, Partitions } from './concern.ts';

export type ResyncView = Pick<ObjectView, 'list' | 'sequence'>;

/** One key's work item: where it goes and what it carries (the concern's own work payload). */
export interface ResyncItem {
  key: string;
  subject: string;
  payload: unknown;
}

/**
 * The work item of every key of the concern as `view` holds it, caused by view sequence `seq`:
 * the same subject and payload the router publishes for the key (the concern's registration).
 * A key whose object is gone is simply not listed: its deletion was a record, and whatever it
 * left behind is some remaining key's business (an instance's list, a target's config).
 */
export function resyncItems(
  work: ConcernWork,
  view: ResyncView,
  seq: number,
  partitions: Partitions,
): ResyncItem[] {
  const count = partitions[work.partitionsOf];
  return work
    .resyncKeys(view)
    .map((key) => ({ key, subject: work.workSubject(key, count), payload: work.schema.parse({ key, seq }) }));
}

/** The pacer that releases a concern's resync rounds: its consumer, bucket and dead letters. */
export function resyncPacerOf(concern: string) {
  return {
    concern: `${concern}-resync`,
    stream: STREAMS.fanout,
    durable: `${concern}-resync`,
    filterSubject: `fanout.resync.${concern}`,
    bucket: `pacer-${concern}-resync`,
    deadLetterSubject: `dlq.${concern}-resync`,
  } as const;
}

export interface ResyncOptions {
  nc: NatsConnection;
  /** Replicas of the resync pacer's slot bucket when it creates it (`bus.streamReplicas`). */
  bucketReplicas: StreamReplicas;
  view: ResyncView;
  /** The concern's registration: its keys, work subjects and payloads. */
  work: ConcernWork;
  partitions: Partitions;
  settings: Config['resync'];
  clock: Clock;
  log: Logger;
}

export interface Resync {
  /** Settles once the start round is published or skipped (or given up at stop). */
  started: Promise<void>;
  /** The concern's resync pacer, for a worker's wiring to hand its runtime to the metrics. */
  pacer: Pacer;
  stop(): Promise<void>;
}

/** Publishes in flight at once while a round is published: thousands of keys in a few seconds. */
const PUBLISH_WINDOW = 64;

/** Starts the concern's resync pacer, runs the start round, then one round per period. */
export async function startResync(opts: ResyncOptions): Promise<Resync> {
  const { work, view, clock } = opts;
  const pacerSpec = resyncPacerOf(work.concern);
  const log = opts.log.child({ resync: work.concern });
  const pacer: Pacer = await startPacer({
    ...pacerSpec,
    nc: opts.nc,
    log,
    ratePerSecond: opts.settings.ratePerSecond,
    bucketReplicas: opts.bucketReplicas,
  });
  const js = jetstream(opts.nc);
  const jsm = await jetstreamManager(opts.nc);
  const stopping = new AbortController();

  const publishRound = async (round: ResyncRound, seq: number, items: ResyncItem[]): Promise<void> => {
    let next = 0;
    let failed = false;
    const lane = async () => {
      while (next < items.length && !failed && !stopping.signal.aborted) {
        const item = items[next++] as ResyncItem;
        const msgId = resyncMsgId(work.concern, round, item.key);
        await publishPaced(
          js,
          pacerSpec.filterSubject,
          { subject: item.subject, payload: item.payload, msgId },
          { msgID: `fanout:${msgId}` },
        ).catch((err: unknown) => {
          failed = true;
          throw err;
        });
      }
    };
    const lanes = await Promise.allSettled(
      Array.from({ length: Math.min(PUBLISH_WINDOW, items.length) }, lane),
    );
    const failure = lanes.find((l) => l.status === 'rejected');
    if (failure) throw failure.reason;
    if (stopping.signal.aborted) throw new Error(`stopped while publishing resync round ${roundName(round)}`);
    log.info(
      {
        concern: work.concern,
        round: roundName(round),
        keys: items.length,
        seq,
        releaseSeconds: Math.ceil(roundSeconds(items.length, opts.settings.ratePerSecond)),
      },
      'resync round published',
    );
  };

  /** One round, retried with backoff on bus failures until it is published, skipped or `giveUpAtMs` passes. */
  const runRound = async (round: ResyncRound, giveUpAtMs: number): Promise<void> => {
    let resumed = false;
    for (let attempt = 1; !stopping.signal.aborted; attempt++) {
      try {
        const decision = decideRound(await waitingItems(jsm, pacerSpec.durable), resumed);
        if (!decision.publish) {
          log.info(
            { concern: work.concern, round: roundName(round), reason: decision.reason },
            'resync round skipped',
          );
          countResyncRound(work.concern, round.kind, 'skipped', 0);
          return;
        }
        const seq = round.kind === 'start' ? round.viewSeq : view.sequence;
        const items = resyncItems(work, view, seq, opts.partitions);
        resumed = true;
        await publishRound(round, seq, items);
        countResyncRound(work.concern, round.kind, 'published', items.length);
        return;
      } catch (err) {
        if (stopping.signal.aborted) return;
        const delayMs = retryDelayMs(attempt, DEFAULT_ERROR_BACKOFF);
        if (clock.now() + delayMs > giveUpAtMs) {
          log.warn(
            { err, concern: work.concern, round: roundName(round) },
            'resync round failed; the next round covers it',
          );
          countResyncRound(work.concern, round.kind, 'failed', 0);
          return;
        }
        log.warn(
          { err, concern: work.concern, round: roundName(round), delayMs },
          'resync round failed; retrying',
        );
        await clock.sleep(delayMs, stopping.signal);
      }
    }
  };

  const periodMs = opts.settings.periodSeconds * 1000;
  const started = runRound(
    { kind: 'start', viewSeq: view.sequence },
    periodMs > 0 ? nextPeriodRound(clock.now(), periodMs).atMs : Number.POSITIVE_INFINITY,
  );
  const periodic = (async () => {
    await started;
    if (periodMs <= 0) return;
    while (!stopping.signal.aborted) {
      const due = nextPeriodRound(clock.now(), periodMs);
      await clock.sleep(due.atMs - clock.now(), stopping.signal);
      if (stopping.signal.aborted) return;
      await runRound({ kind: 'period', index: due.index }, due.atMs + periodMs);
    }
  })();
  log.info(
    { concern: work.concern, periodSeconds: opts.settings.periodSeconds, rate: opts.settings.ratePerSecond },
    'resync started',
  );
  return {
    started,
    pacer,
    stop: async () => {
      stopping.abort();
      await periodic;
      await pacer.stop();
    },
  };
}

/** Items of the concern's resync waiting in FANOUT: not yet delivered to its pacer, or not yet released. */
async function waitingItems(jsm: JetStreamManager, durable: string): Promise<number> {
  const info = await jsm.consumers.info(STREAMS.fanout, durable);
  return info.num_pending + info.num_ack_pending;
}
