import { describe, expect, it } from 'vitest';
import { isLeaseRenewalOnly } from './resources.ts';

const lease = (renewTime: string, holderIdentity = 'pod-a', resourceVersion = '1') => ({
  metadata: { name: 'l', resourceVersion, managedFields: [{ time: renewTime }] },
  spec: { holderIdentity, leaseDurationSeconds: 30, renewTime },
});

describe('isLeaseRenewalOnly', () => {
  it('is true when only renewTime and bookkeeping changed', () => {
    expect(isLeaseRenewalOnly(lease('t1'), lease('t2', 'pod-a', '2'))).toBe(true);
  });

  it('is false for any other change, or with nothing to compare with', () => {
    expect(isLeaseRenewalOnly(lease('t1'), lease('t2', 'pod-b', '2'))).toBe(false);
    const annotated = { ...lease('t2'), metadata: { ...lease('t2').metadata, annotations: { a: 'b' } } };
    expect(isLeaseRenewalOnly(lease('t1'), annotated)).toBe(false);
    expect(isLeaseRenewalOnly(undefined, lease('t1'))).toBe(false);
  });
});
