import { describe, expect, it } from 'vitest';
import type { RecordedObject } from '../bus/messages.ts';
import { statusEchoes } from './status-echo.ts';

const instance = (status: object, resourceVersion = '1'): RecordedObject =>
  ({
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'ConversionWebhookServer',
    metadata: { name: 'a', uid: 'u-a', resourceVersion },
    spec: {},
    status,
  }) as RecordedObject;

const upsert = (object: RecordedObject) => ({ kind: 'webhookserver', op: 'upsert' as const, object });

describe('what a handler’s own status write wakes', () => {
  it('wakes assign once more when the assigned targets it writes moved', () => {
    const before = instance({ assignedTargets: [], assignedTargetCount: 0 });
    const after = instance({ assignedTargets: ['w.x.io'], assignedTargetCount: 1 }, '2');
    expect(statusEchoes(upsert(after), before)).toEqual({
      assign: [{ kind: 'webhookserver', name: 'a' }],
      leaseAggregate: [],
    });
  });

  it('wakes lease-aggregate once more when the served targets or its condition moved', () => {
    const known = { type: 'ServedTargetsKnown', status: 'True', reason: 'AllReported' };
    const before = instance({ reportingReplicas: 2, servedTargets: ['w.x.io'], conditions: [known] });
    const fewer = instance({ reportingReplicas: 1, servedTargets: ['w.x.io'], conditions: [known] }, '2');
    expect(statusEchoes(upsert(fewer), before).leaseAggregate).toEqual(['a']);
    const unknown = { ...known, status: 'False', reason: 'AwaitingReports' };
    const awaiting = instance(
      { reportingReplicas: 2, servedTargets: ['w.x.io'], conditions: [unknown] },
      '3',
    );
    expect(statusEchoes(upsert(awaiting), before).leaseAggregate).toEqual(['a']);
  });

  it('wakes nothing for a write of other fields, a creation, a deletion or another kind', () => {
    const before = instance({ assignedTargetCount: 1, readyReplicas: 1 });
    const ready = instance({ assignedTargetCount: 1, readyReplicas: 2 }, '2');
    expect(statusEchoes(upsert(ready), before)).toEqual({ assign: [], leaseAggregate: [] });
    expect(statusEchoes(upsert(ready), undefined)).toEqual({ assign: [], leaseAggregate: [] });
    expect(statusEchoes({ ...upsert(ready), op: 'delete' }, before)).toEqual({
      assign: [],
      leaseAggregate: [],
    });
    expect(statusEchoes({ ...upsert(ready), kind: 'crd' }, before)).toEqual({
      assign: [],
      leaseAggregate: [],
    });
  });

  it('wakes assign once more for a config whose assignment it wrote, not for another manager’s write', () => {
    const config = (status: object, resourceVersion: string) =>
      ({ ...instance(status, resourceVersion), kind: 'CRDConversionConfig' }) as RecordedObject;
    const change = (object: RecordedObject) => ({ kind: 'crdconfig', op: 'upsert' as const, object });
    const before = config({ assignedWebhookServer: 'a', phase: 'Applied' }, '1');
    const moved = config({ assignedWebhookServer: 'b', phase: 'Applied' }, '2');
    expect(statusEchoes(change(moved), before).assign).toEqual([{ kind: 'crdconfig', name: 'a' }]);
    const phase = config({ assignedWebhookServer: 'a', phase: 'Invalid' }, '2');
    expect(statusEchoes(change(phase), before).assign, 'config-status’s phase').toEqual([]);
  });
});
