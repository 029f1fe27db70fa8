import { describe, expect, it } from 'vitest';
import { checkServerVersion, compareVersions, streamConfigs } from './topology.ts';

describe('topology', () => {
  it('gives every stream its own subjects, none overlapping', () => {
    const subjects = streamConfigs().flatMap((s) => s.subjects ?? []);
    expect(new Set(subjects).size).toBe(subjects.length);
    expect(subjects.every((s) => s.endsWith('.>'))).toBe(true);
  });

  it('keeps the record stream for the configured retention', () => {
    const k8s = streamConfigs({ recordRetentionHours: 48, duplicateWindowSeconds: 60 }).find(
      (s) => s.name === 'K8S',
    );
    expect(k8s?.max_age).toBe(48 * 3_600_000 * 1_000_000);
    expect(k8s?.duplicate_window).toBe(60_000 * 1_000_000);
  });

  it('refuses a server below 2.9.0 or without JetStream, accepts the tested 2.9.10', () => {
    expect(() => checkServerVersion('2.8.4', true)).toThrow(/too old.*2\.9\.0/);
    expect(() => checkServerVersion('2.9.10', false)).toThrow(/JetStream disabled/);
    expect(() => checkServerVersion('2.9.10', true)).not.toThrow();
    expect(compareVersions('2.10.0', '2.9.22')).toBeGreaterThan(0);
  });
});
