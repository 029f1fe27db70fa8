import { JetStreamApiError } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import {
  checkServerVersion,
  compareVersions,
  DEFAULT_TOPOLOGY,
  replicaDrift,
  replicasRefused,
  STREAMS,
  streamConfigs,
  streamDrift,
} from './topology.ts';

const declared = (name: string) => {
  const d = streamConfigs().find((s) => s.name === name);
  if (!d) throw new Error(`no stream ${name}`);
  return d;
};

describe('topology', () => {
  it('gives every stream its own subjects, none overlapping', () => {
    const subjects = streamConfigs().flatMap((s) => s.subjects ?? []);
    expect(new Set(subjects).size).toBe(subjects.length);
    expect(subjects.every((s) => s.endsWith('.>'))).toBe(true);
  });

  it('keeps the record history for the configured retention, and the latest state without age limit', () => {
    const configs = streamConfigs({
      ...DEFAULT_TOPOLOGY,
      recordRetentionHours: 48,
      duplicateWindowSeconds: 60,
    });
    const history = configs.find((s) => s.name === STREAMS.records);
    const latest = configs.find((s) => s.name === STREAMS.latest);
    expect(history?.max_age).toBe(48 * 3_600_000 * 1_000_000);
    expect(history?.duplicate_window).toBe(60_000 * 1_000_000);
    expect(latest).toMatchObject({
      mirror: { name: STREAMS.records },
      max_msgs_per_subject: 1,
      allow_msg_ttl: true,
    });
    expect(latest?.max_age ?? 0).toBe(0);
  });

  it('refuses a server below 2.12.9 or without JetStream, naming the feature it lacks', () => {
    expect(() => checkServerVersion('2.12.8', true)).toThrow(/too old.*2\.12\.9.*message schedules/);
    expect(() => checkServerVersion('2.11.0', true)).toThrow(/too old/);
    expect(() => checkServerVersion('2.15.2', false)).toThrow(/JetStream disabled/);
    expect(() => checkServerVersion('2.12.9', true)).not.toThrow();
    expect(() => checkServerVersion('2.14.0', true)).not.toThrow();
    expect(() => checkServerVersion('2.15.2', true)).not.toThrow();
    expect(compareVersions('2.10.0', '2.9.22')).toBeGreaterThan(0);
  });

  it('keeps the re-check schedules in the work queue they fire into, where no consumer acks them away', () => {
    expect(declared(STREAMS.work)).toMatchObject({
      subjects: ['work.>', 'recheck.>'],
      retention: 'workqueue',
      allow_msg_schedules: true,
    });
    const scheduleless = { ...declared(STREAMS.work), allow_msg_schedules: false } as never;
    expect(streamDrift(declared(STREAMS.work), scheduleless)).toEqual([
      'stream WORK: allow_msg_schedules is false, expected true',
    ]);
  });

  it('reports a missing stream and every drifted setting a component relies on', () => {
    const latest = declared(STREAMS.latest);
    expect(streamDrift(latest, undefined)).toEqual(['stream K8S_LATEST is missing']);
    const drifted = { ...latest, max_msgs_per_subject: -1, mirror: undefined } as never;
    expect(streamDrift(latest, drifted)).toEqual([
      'stream K8S_LATEST: max_msgs_per_subject is -1, expected 1',
      'stream K8S_LATEST: expected a mirror of K8S',
    ]);
    expect(streamDrift(latest, latest as never)).toEqual([]);
  });

  it('gives every stream, the latest-state mirror included, the configured replicas', () => {
    for (const replicas of [1, 3] as const) {
      const configs = streamConfigs({ ...DEFAULT_TOPOLOGY, streamReplicas: replicas });
      expect(configs.map((s) => s.name)).toEqual(Object.values(STREAMS));
      expect(
        configs.map((s) => [s.name, s.num_replicas]),
        'a stream left at another count loses its data with one server',
      ).toEqual(Object.values(STREAMS).map((name) => [name, replicas]));
    }
    expect(streamConfigs().every((s) => s.num_replicas === 1)).toBe(true);
  });

  it('verifies no replica count, but says when the bus differs from the configuration', () => {
    const three = streamConfigs({ ...DEFAULT_TOPOLOGY, streamReplicas: 3 }).find(
      (s) => s.name === STREAMS.latest,
    );
    const liveOne = { ...declared(STREAMS.latest), num_replicas: 1 } as never;
    expect(streamDrift(three as never, liveOne)).toEqual([]);
    expect(replicaDrift(three as never, liveOne)).toBe(
      'stream K8S_LATEST: num_replicas is 1, bus.streamReplicas is 3',
    );
    expect(replicaDrift(declared(STREAMS.latest), liveOne)).toBeUndefined();
    expect(replicaDrift(declared(STREAMS.latest), undefined)).toBeUndefined();
  });

  it('says what to do when the server cannot place the replicas asked', () => {
    const apiError = (code: number, description: string) =>
      new JetStreamApiError({ code: code < 10010 ? 400 : 500, err_code: code, description });
    const single = replicasRefused(
      apiError(10074, 'replicas > 1 not supported in non-clustered mode'),
      'K8S',
      3,
    );
    expect(single?.message).toBe(
      'bus.streamReplicas=3 needs a JetStream cluster of at least 3 servers; this server is not clustered ' +
        '(stream K8S): run a cluster, or set bus.streamReplicas=1',
    );
    const few = replicasRefused(apiError(10005, 'no suitable peers for placement'), 'WORK', 3);
    expect(few?.message).toMatch(
      /^bus\.streamReplicas=3 needs a JetStream cluster of at least 3 servers with JetStream; the cluster has no room for 3 replicas of stream WORK \(no suitable peers for placement\)/,
    );
    expect(replicasRefused(apiError(10059, 'stream not found'), 'K8S', 3)).toBeUndefined();
    expect(replicasRefused(apiError(10074, 'x'), 'K8S', 1)).toBeUndefined();
  });
});
