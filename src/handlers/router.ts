// The router: how records become work. A durable consumer on K8S (every recorded change, in
// order), scaled like any handler: replicas share it and the server hands each record to one.
// For each record it reads the object's previous record, waits until its view has reached the
// record, asks each concern's pure trigger function what the change wakes, publishes those work
// items, and acks only after every one of them is stored.
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
  encodeMessage,
  handoverWorkSchema,
  type ObjectEvent,
  objectEventSchema,
  type RecordedObject,
  type WorkItem,
  workItemSchema,
} from '../bus/messages.ts';
import { publishPaced } from '../bus/pacer/index.ts';
import {
  type HandlerConsumerSpec,
  type HandlerContext,
  type HandlerRuntime,
  startHandlerRuntime,
} from '../bus/runtime/index.ts';
import { parseObjectSubject } from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import type { ObjectView } from '../bus/view.ts';
import { assignTriggers } from './assign-triggers.ts';
import { ASSIGN_CONCERN, assignWorldOf, INSTANCE_KIND } from './assign-world.ts';
import { CONFIG_STATUS, configStatusSubject } from './config-status.ts';
import { configStatusTriggers } from './config-status-triggers.ts';
import { HANDOVER } from './handover.ts';
import { handoverTriggers } from './handover-triggers.ts';
import { INSTANCES, instancesSubject } from './instances.ts';
import { deletingInstances, instancesTriggers } from './instances-triggers.ts';
import { LEASE_AGGREGATE, leaseAggregateSubject } from './lease-aggregate.ts';
import { leaseAggregateTriggers } from './lease-aggregate-triggers.ts';
import { statusEchoes } from './status-echo.ts';
import {
  formatWorkKey,
  handoverWorkSubject,
  type ObjectWorkKey,
  objectFanoutSubject,
  objectWorkSubject,
  workMsgId,
} from './work-keys.ts';

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
  /** Holds the kinds the trigger functions read (assign-world.ts `ASSIGN_VIEW_KINDS`). */
  view: ObjectView;
  partitions: {
    assign: number;
    leaseAggregate: number;
    configStatus: number;
    instances: number;
    handover: number;
  };
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

  readonly route = async (event: ObjectEvent, ctx: HandlerContext): Promise<void> => {
    const key = parseObjectSubject(ctx.subject);
    if (!key) return;
    const previous = await this.previousRecord(ctx.headers, event.object.metadata.uid);
    await this.deps.view.waitFor(ctx.seq);
    const change = { kind: key.kind, op: event.op, object: event.object };
    const world = assignWorldOf(this.deps.view);
    const triggers = assignTriggers(change, previous, world);
    const instances = leaseAggregateTriggers(change, previous);
    const configs = configStatusTriggers(change, world);
    const owners = instancesTriggers(change, previous, deletingInstances(this.deps.view.list(INSTANCE_KIND)));
    const targets = handoverTriggers(change, previous, world);
    const echoes = statusEchoes(change, previous);
    const item = (k: ObjectWorkKey): WorkItem => ({ key: formatWorkKey(k), seq: ctx.seq });
    const woken = new Set(triggers.now.map(formatWorkKey));
    const assignEchoes = echoes.assign.filter((k) => !woken.has(formatWorkKey(k)));
    await Promise.all([
      ...triggers.now.map((k) => this.publishNow(item(k), k)),
      ...assignEchoes.map((k) => this.publishNow(item(k), k, ASSIGN_ECHO)),
      ...triggers.paced.map((k) => this.publishPacedItem(item(k), k)),
      ...instances.map((instance) => this.publishLeaseAggregate(instance, ctx.seq)),
      ...echoes.leaseAggregate
        .filter((instance) => !instances.includes(instance))
        .map((instance) => this.publishLeaseAggregate(instance, ctx.seq, LEASE_AGGREGATE_ECHO)),
      ...configs.map((k) => this.publishConfigStatus(item(k), k)),
      ...owners.map((instance) => this.publishInstances(instance, ctx.seq)),
      ...targets.map((target) => this.publishHandover(target, ctx.seq)),
    ]);
    if (triggers.now.length + triggers.paced.length > 0) {
      ctx.log.debug(
        {
          now: triggers.now.length,
          paced: triggers.paced.length,
          previousSeq: previousSeqOf(ctx.headers),
          previousFound: previous !== undefined,
        },
        'routed',
      );
    }
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

  /** `idPrefix`: what woke it, in the message id (`assign-echo`: the record of assign's own write, status-echo.ts). */
  private async publishNow(item: WorkItem, key: ObjectWorkKey, idPrefix = ASSIGN_CONCERN): Promise<void> {
    await this.deps.js.publish(
      objectWorkSubject(ASSIGN_CONCERN, key, this.deps.partitions.assign),
      encodeMessage(workItemSchema, item),
      { msgID: workMsgId(idPrefix, item.seq, item.key) },
    );
  }

  /** Few instances per record, so lease-aggregate work is never paced. */
  private async publishLeaseAggregate(
    instance: string,
    seq: number,
    idPrefix = LEASE_AGGREGATE,
  ): Promise<void> {
    await this.deps.js.publish(
      leaseAggregateSubject(instance, this.deps.partitions.leaseAggregate),
      encodeMessage(workItemSchema, { key: instance, seq }),
      { msgID: workMsgId(idPrefix, seq, instance) },
    );
  }

  private async publishInstances(instance: string, seq: number): Promise<void> {
    await this.deps.js.publish(
      instancesSubject(instance, this.deps.partitions.instances),
      encodeMessage(workItemSchema, { key: instance, seq }),
      { msgID: workMsgId(INSTANCES, seq, instance) },
    );
  }

  /** The same id assign gives a move's handover work for this record: one of the two is stored. */
  private async publishHandover(target: string, seq: number): Promise<void> {
    await this.deps.js.publish(
      handoverWorkSubject(target, this.deps.partitions.handover),
      encodeMessage(handoverWorkSchema, { key: target, seq }),
      { msgID: workMsgId(HANDOVER, seq, target) },
    );
  }

  private async publishConfigStatus(item: WorkItem, key: ObjectWorkKey): Promise<void> {
    await this.deps.js.publish(
      configStatusSubject(key, this.deps.partitions.configStatus),
      encodeMessage(workItemSchema, item),
      { msgID: workMsgId(CONFIG_STATUS, item.seq, item.key) },
    );
  }

  private async publishPacedItem(item: WorkItem, key: ObjectWorkKey): Promise<void> {
    const msgId = workMsgId(ASSIGN_CONCERN, item.seq, item.key);
    await publishPaced(
      this.deps.js,
      objectFanoutSubject(ASSIGN_CONCERN, key),
      {
        subject: objectWorkSubject(ASSIGN_CONCERN, key, this.deps.partitions.assign),
        payload: workItemSchema.parse(item),
        msgId,
      },
      { msgID: `fanout:${msgId}` },
    );
  }
}

/** The message-id prefixes of work woken by the record of the handler's own status write (status-echo.ts). */
export const ASSIGN_ECHO = `${ASSIGN_CONCERN}-echo`;
export const LEASE_AGGREGATE_ECHO = `${LEASE_AGGREGATE}-echo`;

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
