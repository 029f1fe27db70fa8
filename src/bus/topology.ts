import { isDeepStrictEqual } from 'node:util';
import {
  DiscardPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { isNoRoomForReplicas, isReplicasNotSupported, isStreamNotFound } from './errors.ts';

/**
 * The JetStream topology, declared in one place. One owner applies it
 * (`switchyard bus setup`, or the `setup` Job in deploy/): it creates what is
 * missing and updates what drifted. Every other process only verifies it at
 * start (`verifyTopology`) and waits, saying what is missing, until it holds:
 * with one owner, the last process to start can no longer set retention.
 *
 * Records are kept twice, each copy with its own retention:
 * - K8S is the flight recorder: every recorded change, kept for
 *   `recordRetentionHours`, replayable by time or sequence. Watchers publish
 *   here, with a never-older check per object (`src/bus/records/`).
 * - K8S_LATEST is a mirror of K8S that keeps one message per object subject
 *   and no age limit: the latest state of every live object is always on the
 *   bus, however long it has been unchanged. Views rebuild from it. A mirror
 *   keeps the origin's sequence numbers, so a trigger's K8S sequence is a
 *   position in K8S_LATEST too. Deletions are tombstones with a per-message TTL
 *   (2.11) equal to the record retention: the mirror drops them after that.
 *   The mirror reads K8S, which holds every change for the retention period, so
 *   it never misses the last one of an object (a mirror of a per-subject
 *   stream could).
 *
 * HEARTBEATS keeps only the latest renewal per Lease: liveness, not history.
 * WORK and FANOUT are work queues (a message leaves on ack). WORK also holds
 * the handlers' durable re-checks: one message schedule per key on
 * `recheck.<…>`, firing onto `work.<…>`. A work queue deletes only what a
 * consumer acks and no consumer's filter covers `recheck.>`, so a waiting
 * schedule stays until it fires (`runtime/recheck.ts`). DLQ keeps what could
 * not be processed, with the reason, for a week.
 *
 * DECISIONS keeps what handlers decided, each with the view sequence it was
 * decided on, for as long as K8S keeps the records it was decided from: `switchyard
 * replay` rebuilds the view at that sequence and decides again (`src/replay/`).
 *
 * Every stream, the mirror included, and every pacer's slot bucket have
 * `streamReplicas` replicas (1, or 3 on a JetStream cluster: the bus survives
 * losing a server). The owner applies the count to what exists, in both
 * directions, so no later run resets it; a process that creates a missing bucket
 * creates it with the same count (`pacer.ts`). A worker whose configuration
 * says otherwise only warns: how many copies the server keeps changes nothing
 * it relies on.
 */

export interface TopologyOptions {
  /** How long K8S keeps recorded changes, and K8S_LATEST keeps tombstones. */
  recordRetentionHours: number;
  /** Window in which a repeated message id is stored once (two watchers, a relist, a retried publish). */
  duplicateWindowSeconds: number;
  /** Replicas of every stream and slot bucket: 1, or 3 on a JetStream cluster of at least 3 servers. */
  streamReplicas: StreamReplicas;
}

export type StreamReplicas = 1 | 3;

export const DEFAULT_TOPOLOGY: TopologyOptions = {
  recordRetentionHours: 24,
  duplicateWindowSeconds: 120,
  streamReplicas: 1,
};

/** The topology settings of a process's `bus` configuration. */
export function topologyOptions(bus: TopologyOptions): TopologyOptions {
  return {
    recordRetentionHours: bus.recordRetentionHours,
    duplicateWindowSeconds: bus.duplicateWindowSeconds,
    streamReplicas: bus.streamReplicas,
  };
}

export const STREAMS = {
  records: 'K8S',
  latest: 'K8S_LATEST',
  heartbeats: 'HEARTBEATS',
  work: 'WORK',
  fanout: 'FANOUT',
  deadLetters: 'DLQ',
  decisions: 'DECISIONS',
} as const;

const HOUR_MS = 3_600_000;

export type StreamDeclaration = Partial<StreamConfig> & { name: string };

export function streamConfigs(opts: TopologyOptions = DEFAULT_TOPOLOGY): StreamDeclaration[] {
  const dedup = nanos(opts.duplicateWindowSeconds * 1000);
  const replicated = { storage: StorageType.File, num_replicas: opts.streamReplicas };
  const common = { ...replicated, duplicate_window: dedup };
  return [
    {
      ...common,
      name: STREAMS.records,
      subjects: ['k8s.>'],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_age: nanos(opts.recordRetentionHours * HOUR_MS),
      allow_msg_ttl: true,
      allow_direct: true,
    },
    {
      ...replicated,
      name: STREAMS.latest,
      mirror: { name: STREAMS.records },
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      max_msgs_per_subject: 1,
      allow_msg_ttl: true,
      allow_direct: true,
    },
    {
      ...common,
      name: STREAMS.heartbeats,
      subjects: ['hb.>'],
      retention: RetentionPolicy.Limits,
      max_msgs_per_subject: 1,
      max_age: nanos(HOUR_MS),
      allow_direct: true,
    },
    {
      ...common,
      name: STREAMS.work,
      // recheck.> holds the durable re-checks (message schedules) that fire onto work.> (runtime/recheck.ts).
      subjects: ['work.>', 'recheck.>'],
      retention: RetentionPolicy.Workqueue,
      allow_msg_schedules: true,
    },
    { ...common, name: STREAMS.fanout, subjects: ['fanout.>'], retention: RetentionPolicy.Workqueue },
    {
      ...common,
      name: STREAMS.deadLetters,
      subjects: ['dlq.>'],
      retention: RetentionPolicy.Limits,
      max_age: nanos(7 * 24 * HOUR_MS),
    },
    {
      ...common,
      name: STREAMS.decisions,
      subjects: ['decision.>'],
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      // A decision is replayable while the records it was made from are kept, and no longer.
      max_age: nanos(opts.recordRetentionHours * HOUR_MS),
      allow_direct: true,
    },
  ];
}

/** How long a tombstone stays on the bus: as long as the history keeps the changes before it. */
export function tombstoneTtl(opts: TopologyOptions): string {
  return `${Math.max(1, Math.round(opts.recordRetentionHours * 3600))}s`;
}

/**
 * The oldest nats-server Switchyard runs on, and why: message schedules (the
 * handlers' durable re-checks) arrived in 2.12.0, and a schedule's subject
 * could come back corrupted when the stream recovered after a restart until
 * "Potential corrupted schedule subject key after recovery" (nats-server
 * #8085), released in 2.12.9 and 2.14.0 (there is no 2.13). Re-checks must
 * survive a restart, so 2.12.9. Per-message TTL for tombstones (2.11.0) is
 * older. Tested on 2.15.2, the version the local stack builds (tools/nats-server).
 */
export const MIN_SERVER_VERSION = '2.12.9';
const MIN_SERVER_REASON =
  'message schedules that survive a restart (durable re-checks), fixed in 2.12.9; per-message TTL for tombstones';

function versionParts(version: string): number[] {
  return version
    .replace(/^v/, '')
    .split(/[.-]/)
    .slice(0, 3)
    .map((p) => Number.parseInt(p, 10) || 0);
}

export function compareVersions(a: string, b: string): number {
  const [pa, pb] = [versionParts(a), versionParts(b)];
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Fails fast, with a message an operator can act on, on a server the topology cannot run on. */
export function checkServerVersion(version: string, jetstreamEnabled: boolean): void {
  if (!jetstreamEnabled) {
    throw new Error(
      `nats-server ${version} has JetStream disabled; start it with -js (or jetstream {} in its config)`,
    );
  }
  if (compareVersions(version, MIN_SERVER_VERSION) < 0) {
    throw new Error(
      `nats-server ${version} is too old: Switchyard needs ${MIN_SERVER_VERSION} or newer (${MIN_SERVER_REASON})`,
    );
  }
}

async function streamInfo(jsm: JetStreamManager, name: string): Promise<StreamInfo | undefined> {
  try {
    return await jsm.streams.info(name);
  } catch (err) {
    if (isStreamNotFound(err)) return undefined;
    throw err;
  }
}

/**
 * What the owner did to a stream or bucket: `absent` is a slot bucket no pacer has created yet
 * (its pacer creates it with the topology's replicas at start).
 */
export type Applied = 'created' | 'updated' | 'absent';

async function ensureStream(jsm: JetStreamManager, config: StreamDeclaration): Promise<Applied> {
  try {
    if (!(await streamInfo(jsm, config.name))) {
      await jsm.streams.add(config);
      return 'created';
    }
    await jsm.streams.update(config.name, config);
    return 'updated';
  } catch (err) {
    throw replicasRefused(err, config.name, config.num_replicas) ?? err;
  }
}

/** The stream that backs a KV bucket. */
export function bucketStream(bucket: string): string {
  return `KV_${bucket}`;
}

/** A slot bucket's stream brought to the topology's replicas; its other settings are its pacer's. */
async function ensureBucketReplicas(
  jsm: JetStreamManager,
  bucket: string,
  replicas: StreamReplicas,
): Promise<Applied> {
  const name = bucketStream(bucket);
  const live = await streamInfo(jsm, name);
  if (!live) return 'absent';
  if (live.config.num_replicas === replicas) return 'updated';
  try {
    await jsm.streams.update(name, { num_replicas: replicas });
  } catch (err) {
    throw replicasRefused(err, name, replicas) ?? err;
  }
  return 'updated';
}

/**
 * A replica count the server cannot place, as an operator can act on it: a single server refuses
 * more than one replica (10074), a cluster with too few servers finds no peers (10005) or no
 * resources (10023) for them. Undefined for any other failure.
 */
export function replicasRefused(
  err: unknown,
  stream: string,
  replicas: number | undefined,
): Error | undefined {
  if (replicas === undefined || replicas <= 1) return undefined;
  const need = `bus.streamReplicas=${replicas} needs a JetStream cluster of at least ${replicas} servers`;
  const cause = { cause: err };
  if (isReplicasNotSupported(err))
    return new Error(
      `${need}; this server is not clustered (stream ${stream}): run a cluster, or set bus.streamReplicas=1`,
      cause,
    );
  if (isNoRoomForReplicas(err))
    return new Error(
      `${need} with JetStream; the cluster has no room for ${replicas} replicas of stream ${stream} ` +
        `(${(err as Error).message}): bring its servers up, or set bus.streamReplicas=1`,
      cause,
    );
  return undefined;
}

/**
 * Applies the topology: what `switchyard bus setup` (the topology's one owner) runs. Streams are
 * created or updated to their declaration, replicas included; the pacers' slot buckets that exist
 * (`buckets`: their names) get the topology's replicas.
 */
export async function ensureTopology(
  jsm: JetStreamManager,
  opts: TopologyOptions = DEFAULT_TOPOLOGY,
  buckets: readonly string[] = [],
): Promise<Record<string, Applied>> {
  const result: Record<string, Applied> = {};
  for (const config of streamConfigs(opts)) result[config.name] = await ensureStream(jsm, config);
  for (const bucket of buckets)
    result[bucketStream(bucket)] = await ensureBucketReplicas(jsm, bucket, opts.streamReplicas);
  return result;
}

/** The settings a component relies on; drift in anything else (limits, replicas) is the owner's business. */
const VERIFIED_FIELDS = [
  'subjects',
  'retention',
  'max_msgs_per_subject',
  'allow_msg_ttl',
  'allow_msg_schedules',
  'allow_direct',
] as const satisfies readonly (keyof StreamConfig)[];

/** What differs between the declared and the live stream, as messages an operator can act on. */
export function streamDrift(declared: StreamDeclaration, live: StreamConfig | undefined): string[] {
  if (!live) return [`stream ${declared.name} is missing`];
  const problems: string[] = [];
  for (const field of VERIFIED_FIELDS) {
    const want = declared[field];
    if (want === undefined) continue;
    if (!isDeepStrictEqual(want, live[field]))
      problems.push(
        `stream ${declared.name}: ${field} is ${JSON.stringify(live[field])}, expected ${JSON.stringify(want)}`,
      );
  }
  if (declared.mirror && live.mirror?.name !== declared.mirror.name)
    problems.push(`stream ${declared.name}: expected a mirror of ${declared.mirror.name}`);
  return problems;
}

/**
 * A stream whose replica count is not the configured one: worth a warning, never a wait (a worker
 * runs the same on one copy or three; `bus setup` changes the count, and during a change the
 * workers' configuration and the bus differ for a while).
 */
export function replicaDrift(
  declared: StreamDeclaration,
  live: StreamConfig | undefined,
): string | undefined {
  if (!live || declared.num_replicas === undefined || live.num_replicas === declared.num_replicas)
    return undefined;
  return `stream ${declared.name}: num_replicas is ${live.num_replicas}, bus.streamReplicas is ${declared.num_replicas}`;
}

export interface TopologyCheck {
  /** What the component cannot run without: it waits until they are gone. */
  problems: string[];
  /** What differs but does not matter to it (replicas). */
  warnings: string[];
}

/**
 * Checks, without changing anything, that the streams a component relies on
 * exist with the settings it relies on. No problems when all is well.
 */
export async function verifyTopology(
  jsm: JetStreamManager,
  opts: TopologyOptions = DEFAULT_TOPOLOGY,
): Promise<TopologyCheck> {
  const check: TopologyCheck = { problems: [], warnings: [] };
  for (const declared of streamConfigs(opts)) {
    const live = (await streamInfo(jsm, declared.name))?.config;
    check.problems.push(...streamDrift(declared, live));
    const drift = replicaDrift(declared, live);
    if (drift) check.warnings.push(drift);
  }
  return check;
}
