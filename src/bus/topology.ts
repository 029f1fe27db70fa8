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
import { isStreamNotFound } from './errors.ts';

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
 */

export interface TopologyOptions {
  /** How long K8S keeps recorded changes, and K8S_LATEST keeps tombstones. */
  recordRetentionHours: number;
  /** Window in which a repeated message id is stored once (two watchers, a relist, a retried publish). */
  duplicateWindowSeconds: number;
}

export const DEFAULT_TOPOLOGY: TopologyOptions = { recordRetentionHours: 24, duplicateWindowSeconds: 120 };

/** The topology settings of a process's `bus` configuration. */
export function topologyOptions(bus: TopologyOptions): TopologyOptions {
  return {
    recordRetentionHours: bus.recordRetentionHours,
    duplicateWindowSeconds: bus.duplicateWindowSeconds,
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
  const common = { storage: StorageType.File, num_replicas: 1, duplicate_window: dedup };
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
      storage: StorageType.File,
      num_replicas: 1,
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

async function ensureStream(
  jsm: JetStreamManager,
  config: StreamDeclaration,
): Promise<'created' | 'updated'> {
  if (!(await streamInfo(jsm, config.name))) {
    await jsm.streams.add(config);
    return 'created';
  }
  await jsm.streams.update(config.name, config);
  return 'updated';
}

/** Applies the topology: what `switchyard bus setup` (the topology's one owner) runs. */
export async function ensureTopology(
  jsm: JetStreamManager,
  opts: TopologyOptions = DEFAULT_TOPOLOGY,
): Promise<Record<string, 'created' | 'updated'>> {
  const result: Record<string, 'created' | 'updated'> = {};
  for (const config of streamConfigs(opts)) result[config.name] = await ensureStream(jsm, config);
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
 * Checks, without changing anything, that the streams a component relies on
 * exist with the settings it relies on. Empty when all is well.
 */
export async function verifyTopology(
  jsm: JetStreamManager,
  opts: TopologyOptions = DEFAULT_TOPOLOGY,
): Promise<string[]> {
  const problems: string[] = [];
  for (const declared of streamConfigs(opts)) {
    problems.push(...streamDrift(declared, (await streamInfo(jsm, declared.name))?.config));
  }
  return problems;
}
