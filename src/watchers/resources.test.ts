import { describe, expect, it } from 'vitest';
import { RENEWED_KINDS } from '../bus/subjects.ts';
import {
  leaseContentDigest,
  leaseRenewal,
  RECORDED_RESOURCES,
  revivesAfterGap,
  XRD_RESOURCE,
} from './resources.ts';

const lease = (renewTime: string, holderIdentity = 'pod-a', resourceVersion = '1') => ({
  metadata: { name: 'l', resourceVersion, managedFields: [{ time: renewTime }] },
  spec: { holderIdentity, leaseDurationSeconds: 30, renewTime },
});

describe('leaseContentDigest', () => {
  it('is the same when only renewTime and bookkeeping changed', () => {
    expect(leaseContentDigest(lease('t2', 'pod-a', '2'))).toBe(leaseContentDigest(lease('t1')));
  });

  it('is the same whatever the order of keys', () => {
    const reordered = {
      spec: { renewTime: 't1', leaseDurationSeconds: 30, holderIdentity: 'pod-a' },
      metadata: { name: 'l' },
    };
    expect(leaseContentDigest(reordered)).toBe(leaseContentDigest(lease('t1')));
  });

  it('differs for any other change', () => {
    expect(leaseContentDigest(lease('t2', 'pod-b', '2'))).not.toBe(leaseContentDigest(lease('t1')));
    const annotated = { ...lease('t1'), metadata: { ...lease('t1').metadata, annotations: { a: 'b' } } };
    expect(leaseContentDigest(annotated)).not.toBe(leaseContentDigest(lease('t1')));
  });
});

describe('a renewal that revives a stale Lease', () => {
  const at = (iso: string) => leaseRenewal({ spec: { renewTime: iso, leaseDurationSeconds: 30 } });
  const t0 = Date.parse('2030-01-01T00:00:00Z');

  it('is recorded when it comes more than a duration after the previous one: readers must count the replica again', () => {
    expect(revivesAfterGap(t0, at('2030-01-01T00:00:30.001000Z'))).toBe(true);
  });

  it('is a heartbeat when the Lease stayed live in between', () => {
    expect(revivesAfterGap(t0, at('2030-01-01T00:00:30.000000Z'))).toBe(false);
    expect(revivesAfterGap(t0, at('2030-01-01T00:00:10.000000Z'))).toBe(false);
  });

  it('is recorded when it is the first renewal ever, and never for a Lease without renewTime', () => {
    expect(revivesAfterGap(undefined, at('2030-01-01T00:00:10.000000Z'))).toBe(true);
    expect(revivesAfterGap(t0, leaseRenewal({ spec: { leaseDurationSeconds: 30 } }))).toBe(false);
  });
});

describe('heartbeats', () => {
  it('are recorded for exactly the kinds a view follows on HEARTBEATS', () => {
    const renewed = [...RECORDED_RESOURCES, XRD_RESOURCE].filter((r) => r.contentDigest).map((r) => r.kind);
    expect(renewed).toEqual(RENEWED_KINDS);
  });
});
