import {
  DiscardPolicy,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';

/**
 * The JetStream topology, declared in one place and applied idempotently at
 * every process start (create what is missing, update what drifted), so a
 * deleted or hand-edited stream heals on the next start of any component.
 *
 * K8S is the system's source of truth and flight recorder: every recorded
 * object change, kept for the retention period, replayable by time or
 * sequence. HEARTBEATS keeps only the latest renewal per Lease: liveness, not
 * history. WORK and FANOUT are work queues (a message leaves on ack). DLQ
 * keeps what could not be processed, with the reason, for a week.
 */

export interface TopologyOptions {
  /** How long K8S keeps recorded changes. */
  recordRetentionHours: number;
  /** Window in which a repeated message id is stored once (two watchers, a relist). */
  duplicateWindowSeconds: number;
}

export const DEFAULT_TOPOLOGY: TopologyOptions = { recordRetentionHours: 24, duplicateWindowSeconds: 120 };

export const STREAMS = {
  records: 'K8S',
  heartbeats: 'HEARTBEATS',
  work: 'WORK',
  fanout: 'FANOUT',
  deadLetters: 'DLQ',
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
    { ...common, name: STREAMS.work, subjects: ['work.>'], retention: RetentionPolicy.Workqueue },
    { ...common, name: STREAMS.fanout, subjects: ['fanout.>'], retention: RetentionPolicy.Workqueue },
    {
      ...common,
      name: STREAMS.deadLetters,
      subjects: ['dlq.>'],
      retention: RetentionPolicy.Limits,
      max_age: nanos(7 * 24 * HOUR_MS),
    },
  ];
}

/** The oldest nats-server the topology works on: per-subject discard-new and named ephemeral consumers. */
export const MIN_SERVER_VERSION = '2.9.0';

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
      `nats-server ${version} is too old: Switchyard needs ${MIN_SERVER_VERSION} or newer (per-subject discard-new, named consumers)`,
    );
  }
}

async function ensureStream(
  jsm: JetStreamManager,
  config: StreamDeclaration,
): Promise<'created' | 'updated'> {
  const { name } = config;
  try {
    await jsm.streams.info(name);
  } catch (err) {
    if (
      (err as { code?: number; name?: string }).name !== 'StreamNotFoundError' &&
      !/not found/i.test(String(err))
    ) {
      throw err;
    }
    await jsm.streams.add(config);
    return 'created';
  }
  await jsm.streams.update(name, config);
  return 'updated';
}

export async function ensureTopology(
  jsm: JetStreamManager,
  opts: TopologyOptions = DEFAULT_TOPOLOGY,
): Promise<Record<string, 'created' | 'updated'>> {
  const result: Record<string, 'created' | 'updated'> = {};
  for (const config of streamConfigs(opts)) result[config.name] = await ensureStream(jsm, config);
  return result;
}
