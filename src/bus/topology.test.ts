import { describe, expect, it } from 'vitest';
import { checkServerVersion, compareVersions, STREAMS, streamConfigs, streamDrift } from './topology.ts';

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
    const configs = streamConfigs({ recordRetentionHours: 48, duplicateWindowSeconds: 60 });
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
});
