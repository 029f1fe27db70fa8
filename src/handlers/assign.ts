// The assign handler: one concern's reconciler and its wiring. Its keys are configs
// (`crdconfig/<name>`, `xrdconfig/<name>`) and instances (`webhookserver/<name>`), each on its
// partition of `work.assign`, so one replica at a time handles a key.
//
// * A config key: resolve it with the pure resolver over the view, write the config's
//   `assignedWebhookServer`/`webhookPath`/`Assigned` condition only when they change, and
//   emit handover work when the resolved instance differs from the one its status names.
// * An instance key: its `assignedTargets`/count/digest are the targets the resolver assigns to
//   it (not what configs' statuses say), written only when they change. Computing the list from
//   the resolver means an instance key never waits for the config keys of a rebalance, and two
//   keys never write one object.
//
// Level-triggered: the work item is a wake-up; the decision reads the view once it has reached
// the item's cause. Handover work is published before the status write, with an id derived
// from the cause, so a crash between the two republishes the same item (stored once) and a
// crash after the write loses nothing: the write is what marks the move as announced.
// Every write is on the status subresource, conditional on the version the decision read
// (`switchyard-assign`): server-side apply of this concern's fields only, except the write that
// records a new instance, a merge patch that also resets HandoverReady (core/assign-decision.ts).
import type { JetStreamClient } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { API_VERSION } from '../api/constants.ts';
import type { ConfigStatus } from '../api/conversion-config.ts';
import { ownKind } from '../api/resources.ts';
import { WEBHOOK_SERVER_KIND, type WebhookServerStatus } from '../api/webhook-server.ts';
import {
  type DecisionRecord,
  decisionRecordSchema,
  encodeMessage,
  type WorkItem,
  workItemSchema,
} from '../bus/messages.ts';
import { type Pacer, startPacer } from '../bus/pacer/index.ts';
import {
  done,
  type HandlerContext,
  type HandlerRuntime,
  type Outcome,
  PermanentError,
  startHandlerRuntime,
} from '../bus/runtime/index.ts';
import { decisionSubject } from '../bus/subjects.ts';
import { STREAMS, type StreamReplicas } from '../bus/topology.ts';
import type { LiveRecord, ObjectView } from '../bus/view.ts';
import {
  type ConfigAssignmentDecision,
  decideConfigAssignment,
  decideInstanceAssignment,
  type Move,
} from '../core/assign-decision.ts';
import {
  assignSubjects,
  type Fleet,
  fleetOf,
  type Resolution,
  type ResolvedFleet,
  resolveIn,
} from '../core/assignment.ts';
import { assignedTargetsEvent } from '../core/transition-events.ts';
import type { EventSink } from '../kube/event-recorder.ts';
import type { KubeWriter } from '../kube/writer.ts';
import type { Clock } from '../runtime/clock.ts';
import { ASSIGN_WORK } from './assign/wakes.ts';
import {
  ASSIGN_CONCERN,
  type AssignWorld,
  assignWorldOf,
  claimantsOf,
  configSubjectOf,
  fleetOfView,
  INSTANCE_KIND,
  instanceReadinessOf,
  isConfigKind,
  type KeyedSubject,
} from './assign/world.ts';
import { enqueueWork } from './enqueue-work.ts';
import { HANDOVER_WORK } from './handover/wakes.ts';
import { type ObjectWorkKey, parseWorkKey } from './work-keys.ts';

export interface AssignDeps {
  view: ObjectView;
  writer: KubeWriter;
  js: JetStreamClient;
  clock: Clock;
  events: EventSink;
  partitions: { handover: number };
  /** Where an instance without spec.namespace runs (its Service, its ready Pods): the operator's namespace. */
  defaultNamespace: string;
}

export class AssignHandler {
  private readonly deps: AssignDeps;

  constructor(deps: AssignDeps) {
    this.deps = deps;
  }

  readonly handle = async (item: WorkItem, ctx: HandlerContext): Promise<Outcome> => {
    const key = parseWorkKey(item.key);
    if (!key || !(isConfigKind(key.kind) || key.kind === INSTANCE_KIND)) {
      throw new PermanentError(
        `assign has no key ${JSON.stringify(item.key)}: expected <crdconfig|xrdconfig|webhookserver>/<name>`,
      );
    }
    await this.deps.view.waitFor(item.seq);
    if (key.kind === INSTANCE_KIND) await this.reconcileInstance(key, ctx);
    else await this.reconcileConfig(key, item.seq, ctx);
    return done;
  };

  private async reconcileConfig(key: ObjectWorkKey, causeSeq: number, ctx: HandlerContext): Promise<void> {
    // One synchronous read of the view: the sequence recorded is the one decided on.
    const viewSeq = this.deps.view.sequence;
    const decidedAt = new Date(this.deps.clock.now()).toISOString();
    const decided = configAssignmentOnView(this.deps.view, key, decidedAt, this.deps.defaultNamespace);
    if (!decided) return;
    const { record, subject, decision } = decided;
    await this.recordDecision(key, viewSeq, decidedAt, decision);
    if (decision.held) {
      ctx.log.info({ target: subject.target, held: decision.held }, 'move held');
      return;
    }
    if (decision.move) await this.announceMove(subject, decision.move, causeSeq);
    if (!decision.write) return;
    const readVersion = record.object.metadata.resourceVersion;
    if (decision.write.via === 'apply') await this.applyStatus(key, decision.write.status, readVersion, ctx);
    else await this.mergePatchStatus(key, decision.write.status, readVersion, ctx);
    ctx.log.info({ target: subject.target, move: decision.move }, 'assignment written');
  }

  private async reconcileInstance(key: ObjectWorkKey, ctx: HandlerContext): Promise<void> {
    const object = this.deps.view.get({ kind: INSTANCE_KIND, namespace: '', name: key.name });
    if (!object) return;
    const targets = targetsByInstanceOn(this.deps.view).get(key.name) ?? [];
    const status = (object as { status?: WebhookServerStatus }).status;
    const write = decideInstanceAssignment(status, targets);
    if (!write) return;
    await this.applyStatus(key, write, object.metadata.resourceVersion, ctx);
    ctx.log.info({ assigned: write.assignedTargetCount }, 'assigned targets written');
    this.deps.events.record({
      regarding: {
        apiVersion: API_VERSION,
        kind: WEBHOOK_SERVER_KIND,
        name: key.name,
        uid: object.metadata.uid,
      },
      ...assignedTargetsEvent({
        instance: key.name,
        readVersion: object.metadata.resourceVersion,
        before: status && { targets: status.assignedTargets, count: status.assignedTargetCount },
        after: {
          targets: write.assignedTargets,
          count: write.assignedTargetCount,
          digest: write.assignedTargetsDigest,
        },
      }),
    });
  }

  /**
   * What was decided, on which view and at which time, for `switchyard replay` (`src/replay/`).
   * Before acting: a decision that led to a write is always on record. The id is the key and the
   * view's sequence, so a retry on the same view records once.
   */
  private async recordDecision(
    key: ObjectWorkKey,
    viewSeq: number,
    decidedAt: string,
    decision: ConfigAssignmentDecision,
  ): Promise<void> {
    const workKey = `${key.kind}/${key.name}`;
    const record: DecisionRecord = { concern: ASSIGN_CONCERN, key: workKey, viewSeq, decidedAt, decision };
    await this.deps.js.publish(
      decisionSubject(ASSIGN_CONCERN, workKey),
      encodeMessage(decisionRecordSchema, record),
      { msgID: `decision:${ASSIGN_CONCERN}:${workKey}:${viewSeq}` },
    );
  }

  /** Handover work for the target: its id is the cause and the target, so a retry stores it once. */
  private async announceMove(subject: KeyedSubject, move: Move, causeSeq: number): Promise<void> {
    await enqueueWork(this.deps.js, HANDOVER_WORK, this.deps.partitions.handover, {
      key: subject.target,
      causeSeq,
      fields: { config: subject.config, ...move },
    });
  }

  /** The merge patch of a new assignment, on exactly the version read (the conditions list is replaced whole). */
  private mergePatchStatus(
    key: ObjectWorkKey,
    status: object,
    resourceVersion: string,
    ctx: HandlerContext,
  ): Promise<unknown> {
    const ref = ownKind(key.kind);
    if (!ref) throw new PermanentError(`no resource for kind ${key.kind}`);
    return this.deps.writer.mergePatch(
      ref,
      { name: key.name, resourceVersion },
      { status },
      { signal: ctx.signal, subresource: 'status' },
    );
  }

  /**
   * Applies assign's status fields on the version the decision read: a stale attempt (one
   * the runtime gave up on while it still ran) gets 409 instead of overwriting a newer
   * decision, and the conflict outcome retries on the newer view.
   */
  private applyStatus(
    key: ObjectWorkKey,
    status: object,
    resourceVersion: string,
    ctx: HandlerContext,
  ): Promise<unknown> {
    const ref = ownKind(key.kind);
    if (!ref) throw new PermanentError(`no resource for kind ${key.kind}`);
    return this.deps.writer.applyStatus(
      ref,
      { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: key.name }, status },
      { signal: ctx.signal, resourceVersion },
    );
  }
}

/**
 * Every instance's targets, resolved once per world: the world is the same object while no
 * config's target or pin and no instance the resolver reads changed, so the instance keys a
 * join wakes (every member's) share one pass over the configs instead of one each (21 passes
 * over 50,000 configs planned a join in 5.6 s of CPU, BENCHMARKS.md). The pass starts from the
 * view's previous world's resolutions: after a join, a leave or a reweight, a target costs two
 * rendezvous draws instead of one per pool member.
 */
const TARGETS_BY_INSTANCE = new WeakMap<AssignWorld, ReadonlyMap<string, readonly string[]>>();
const LAST_RESOLVED = new WeakMap<object, ResolvedFleet>();

function targetsByInstanceOn(view: Pick<ObjectView, 'list'>): ReadonlyMap<string, readonly string[]> {
  const world = assignWorldOf(view);
  let byInstance = TARGETS_BY_INSTANCE.get(world);
  if (byInstance === undefined) {
    const fleet = fleetOf(world.instances);
    const resolutions = assignSubjects(world.configs, fleet, LAST_RESOLVED.get(view));
    LAST_RESOLVED.set(view, { fleet, resolutions });
    const grouped = new Map<string, string[]>();
    for (const [target, resolution] of resolutions) {
      if (!resolution.ok) continue;
      const targets = grouped.get(resolution.instance);
      if (targets) targets.push(target);
      else grouped.set(resolution.instance, [target]);
    }
    byInstance = grouped;
    TARGETS_BY_INSTANCE.set(world, byInstance);
  }
  return byInstance;
}

/**
 * The decision about one config on the view as it is: what to write to its status and whether it
 * moved. Undefined when there is nothing to decide (the config is gone, recorded without its
 * content, or not a config assign reads). Shared by the handler and `switchyard replay`, so a
 * replay decides with the very function the handler did.
 */
export function configAssignmentOnView(
  view: Pick<ObjectView, 'list' | 'record' | 'records' | 'changesSince' | 'renewTime'>,
  key: { kind: string; name: string },
  decidedAt: string,
  defaultNamespace: string,
): { record: LiveRecord; subject: KeyedSubject; decision: ConfigAssignmentDecision } | undefined {
  const record = view.record({ kind: key.kind, namespace: '', name: key.name });
  // Gone: its instance's list is woken by the deletion itself. Omitted: fail closed, no guess.
  if (!record || record.omitted) return undefined;
  const subject = configSubjectOf(key.kind, record.object);
  if (!subject) return undefined;
  const status = (record.object as { status?: ConfigStatus }).status;
  const decision = decideConfigAssignment(
    status,
    subject.target,
    resolutionAmong(claimantsOf(view, subject.target), fleetOfView(view), subject.target),
    decidedAt,
    generationOf(record.object),
    instanceReadinessOf(view, defaultNamespace),
  );
  return { record, subject, decision };
}

function generationOf(object: LiveRecord['object']): number | undefined {
  const { generation } = object.metadata;
  return typeof generation === 'number' ? generation : undefined;
}

/** The target's resolution among the configs that claim it (a second claimant is a DuplicateTarget). */
function resolutionAmong(claimants: readonly KeyedSubject[], fleet: Fleet, target: string): Resolution {
  const [only] = claimants;
  if (claimants.length === 1 && only) return resolvedOnce(fleet, only);
  const resolution = assignSubjects(claimants, fleet).get(target);
  if (!resolution) throw new Error(`no resolution for ${target}`);
  return resolution;
}

const resolutions = new WeakMap<Fleet, Map<string, Resolution>>();

/**
 * A lone claimant's resolution, hashed once per fleet: the fleet is derived again only when an
 * instance changes, and a target's every status write would otherwise hash it against every pool
 * member again. Read-only, like the fleet.
 */
function resolvedOnce(fleet: Fleet, subject: KeyedSubject): Resolution {
  let byTarget = resolutions.get(fleet);
  if (!byTarget) {
    byTarget = new Map();
    resolutions.set(fleet, byTarget);
  }
  // A target name has no newline: unpinned targets are keyed by their name alone.
  const key = subject.pinnedTo === undefined ? subject.target : `${subject.target}\n${subject.pinnedTo}`;
  let resolution = byTarget.get(key);
  if (!resolution) {
    resolution = resolveIn(fleet, subject);
    byTarget.set(key, resolution);
  }
  return resolution;
}

export interface AssignWorker {
  runtime: HandlerRuntime;
  pacer: Pacer;
}

/** The pacer of assign's fan-out: the router parks paced work on `fanout.assign.>`, released at the bucket's rate. */
export const ASSIGN_PACER = {
  concern: `${ASSIGN_CONCERN}-fanout`,
  stream: STREAMS.fanout,
  durable: `${ASSIGN_CONCERN}-pacer`,
  filterSubject: `fanout.${ASSIGN_CONCERN}.>`,
  bucket: `pacer-${ASSIGN_CONCERN}`,
  deadLetterSubject: `dlq.${ASSIGN_CONCERN}-fanout`,
} as const;

/** The assign runtime and the pacer that releases its fan-out (every replica runs both). */
export async function startAssignWorker(opts: {
  nc: NatsConnection;
  log: Logger;
  deps: AssignDeps;
  partitions: number;
  fanoutRatePerSecond: number;
  /** Replicas of the fan-out pacer's slot bucket when it creates it (`bus.streamReplicas`). */
  bucketReplicas: StreamReplicas;
}): Promise<AssignWorker> {
  const handler = new AssignHandler(opts.deps);
  const pacer = await startPacer({
    ...ASSIGN_PACER,
    nc: opts.nc,
    log: opts.log,
    ratePerSecond: opts.fanoutRatePerSecond,
    bucketReplicas: opts.bucketReplicas,
  });
  const runtime = await startHandlerRuntime({
    nc: opts.nc,
    concern: ASSIGN_CONCERN,
    consumers: ASSIGN_WORK.consumers(opts.partitions),
    schema: workItemSchema,
    handle: handler.handle,
    deadLetterSubject: `dlq.${ASSIGN_CONCERN}`,
    keyLogFields: ASSIGN_WORK.logFieldsOf,
    log: opts.log,
    clock: opts.deps.clock,
  });
  return { runtime, pacer };
}
