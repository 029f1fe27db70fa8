// The router: how records become work. A durable consumer on K8S (every recorded change, in
// order), scaled like any handler: replicas share it and the server hands each record to one.
// For each record it reads the object's previous record, waits until its view has reached the
// record, asks every registered concern (concerns.ts) what the change wakes, publishes that work
// (enqueue-work.ts), and acks only after every item is stored. It knows no concern by name.
//
// Why the previous record comes from the stream: the watcher publishes every record with
// `Nats-Expected-Last-Subject-Sequence` (records/record-writer.ts), and the server stores that
// header, so each record names the exact sequence of the one before it. A direct get of that
// sequence (a get from K8S itself, not a direct get, see below) gives what the object looked like just before this change, whatever the view holds
// by now and whichever replica routed the earlier record: the decision is a function of the
// stream alone, which `replay` can reproduce. When that record has aged out (or there was
// none), or belongs to an earlier incarnation of the name (a tombstone, another uid), the
// object counts as new, which wakes a superset and never misses work.
//
// Every work item's message id is derived from the record's sequence and the key, so a record
// redelivered after a crash publishes nothing twice (within the duplicate window; beyond it a
// repeat is a harmless no-op reconcile). Paced items carry the same id to their release.
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { MsgHdrs } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import {
  decodeObjectEvent,
  type ObjectEvent,
  objectEventSchema,
  type RecordedObject,
} from '../bus/messages.ts';
import {
  done,
  type HandlerConsumerSpec,
  type HandlerContext,
  type HandlerRuntime,
  type Outcome,
  startHandlerRuntime,
} from '../bus/runtime/index.ts';
import { parseObjectSubject } from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import type { ObjectView } from '../bus/view.ts';
import { type ConcernWork, type Partitions, routedChangeOf } from './concern.ts';
import { CONCERNS } from './concerns.ts';
import { enqueueWork } from './enqueue-work.ts';

const EXPECTED_LAST_SUBJECT_SEQUENCE = 'Nats-Expected-Last-Subject-Sequence';

export const ROUTER_CONSUMER: HandlerConsumerSpec = {
  mode: 'shared',
  stream: STREAMS.records,
  durable: 'router',
  filterSubject: 'k8s.>',
  ackWaitMs: 30_000,
  maxDeliver: 10,
  republishWhileLatest: true,
};

/** Records routed at once per replica: a record's work is a handful of publishes, a fan-out a few hundred. */
const ROUTER_LANES = 4;

export interface RouterDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  /** Holds the kinds the trigger functions read (concern.ts `ROUTED_VIEW_KINDS`). */
  view: ObjectView;
  partitions: Partitions;
  /** The concerns it routes to; every registered one (concerns.ts) unless a test narrows it. */
  concerns?: readonly ConcernWork[];
}

/** The sequence of the object's previous record, from the header the watcher stored; 0 when none. */
export function previousSeqOf(headers: MsgHdrs | undefined): number {
  const value = Number(headers?.get(EXPECTED_LAST_SUBJECT_SEQUENCE) ?? '0');
  return Number.isSafeInteger(value) && value > 0 ? value : 0;
}

/**
 * What the object was before a change, from the data of its previous record: undefined (absent
 * before) unless that record is an upsert of the same object (the same uid). A tombstone carries
 * the deleted object, and an object deleted and created again with the same name names the
 * tombstone as its previous record: compared with the deleted incarnation, an identical new one
 * "changed nothing" and woke nothing, so a re-created config was never assigned. An upsert of
 * another uid is an earlier incarnation too (its tombstone never recorded).
 */
export function previousObjectOf(data: Uint8Array, uid: string): RecordedObject | undefined {
  const decoded = decodeObjectEvent(data);
  if (!decoded.ok || decoded.value.op !== 'upsert') return undefined;
  return decoded.value.object.metadata.uid === uid ? decoded.value.object : undefined;
}

export class Router {
  private readonly deps: RouterDeps;

  constructor(deps: RouterDeps) {
    this.deps = deps;
  }

  readonly route = async (event: ObjectEvent, ctx: HandlerContext): Promise<Outcome> => {
    const key = parseObjectSubject(ctx.subject);
    if (!key) return done;
    const previous = await this.previousRecord(ctx.headers, event.object.metadata.uid);
    await this.deps.view.waitFor(ctx.seq);
    const change = { kind: key.kind, op: event.op, object: event.object };
    const routed = routedChangeOf(change, previous, this.deps.view);
    const woken = (this.deps.concerns ?? CONCERNS).map((work) => ({ work, wakes: work.wakes(routed) }));
    await Promise.all(
      woken.flatMap(({ work, wakes }) =>
        wakes.map((wake) =>
          enqueueWork(this.deps.js, work, this.deps.partitions[work.partitionsOf], {
            key: wake.key,
            causeSeq: ctx.seq,
            ...(wake.cause !== undefined && { cause: wake.cause }),
            ...(wake.paced && { paced: true }),
          }),
        ),
      ),
    );
    const count = Object.fromEntries(
      woken.filter((w) => w.wakes.length > 0).map((w) => [w.work.concern, w.wakes.length]),
    );
    if (Object.keys(count).length > 0) {
      ctx.log.debug(
        { woken: count, previousSeq: previousSeqOf(ctx.headers), previousFound: previous !== undefined },
        'routed',
      );
    }
    return done;
  };

  private async previousRecord(
    headers: MsgHdrs | undefined,
    uid: string,
  ): Promise<RecordedObject | undefined> {
    const seq = previousSeqOf(headers);
    if (seq === 0) return undefined;
    // Not a direct get: K8S_LATEST, a mirror with allow_direct, also answers direct gets for
    // K8S (mirror_direct) and holds only each subject's last record, so an older sequence would
    // come back "not found" whenever the mirror answered first. The stream's own get is exact.
    const stored = await this.deps.jsm.streams.getMessage(STREAMS.records, { seq });
    return stored ? previousObjectOf(stored.data, uid) : undefined;
  }
}

/** Records may be gzip-compressed (messages.ts), so they are decoded the way every reader decodes them. */
function decodeRecord(data: Uint8Array): ObjectEvent {
  const decoded = decodeObjectEvent(data);
  if (!decoded.ok) throw new Error(decoded.reason);
  return decoded.value;
}

export function startRouter(
  deps: RouterDeps & { nc: Parameters<typeof startHandlerRuntime>[0]['nc']; log: Logger },
): Promise<HandlerRuntime> {
  const router = new Router(deps);
  return startHandlerRuntime({
    nc: deps.nc,
    concern: 'router',
    consumers: ROUTER_CONSUMER,
    concurrency: ROUTER_LANES,
    schema: objectEventSchema,
    decode: (m) => decodeRecord(m.data),
    handle: router.route,
    deadLetterSubject: 'dlq.router',
    log: deps.log,
  });
}
