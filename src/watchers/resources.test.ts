import { describe, expect, it } from 'vitest';
import { leaseContentDigest } from './resources.ts';

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
