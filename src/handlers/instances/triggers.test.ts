import { describe, expect, it } from 'vitest';
import { WEBHOOK_SERVER_LABEL } from '../../api/constants.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { deletingInstances, instancesTriggers } from './triggers.ts';

const instance = (rv: string, spec: object, status: object = {}, extra: object = {}): RecordedObject =>
  ({ metadata: { name: 'a', uid: 'u', resourceVersion: rv, ...extra }, spec, status }) as RecordedObject;
const deployment = (labels: Record<string, string>): RecordedObject =>
  ({
    metadata: { name: 'a-webhook-server', uid: 'd', resourceVersion: '1', namespace: 'ns', labels },
    status: {},
  }) as RecordedObject;
const crd = (service?: string): RecordedObject =>
  ({
    metadata: { name: 't.example.com', uid: 't', resourceVersion: '1' },
    spec: service ? { conversion: { webhook: { clientConfig: { service: { name: service } } } } } : {},
  }) as RecordedObject;
const config: RecordedObject = {
  metadata: { name: 'cfg', uid: 'c', resourceVersion: '1' },
} as RecordedObject;
const upsert = (kind: string, object: RecordedObject) => ({ kind, op: 'upsert' as const, object });

describe('instancesTriggers', () => {
  it('wakes an instance for its own change, new or not only status', () => {
    expect(instancesTriggers(upsert('webhookserver', instance('1', { replicas: 1 })), undefined, [])).toEqual(
      ['a'],
    );
    const before = instance('1', { replicas: 1 });
    expect(instancesTriggers(upsert('webhookserver', instance('2', { replicas: 2 })), before, [])).toEqual([
      'a',
    ]);
    const annotated = instance('2', { replicas: 1 }, {}, { annotations: { x: 'true' } });
    expect(instancesTriggers(upsert('webhookserver', annotated), before, [])).toEqual(['a']);
  });

  it('does not wake an instance whose status alone moved', () => {
    const before = instance('1', { replicas: 1 });
    const after = instance('2', { replicas: 1 }, { readyReplicas: 1 });
    expect(instancesTriggers(upsert('webhookserver', after), before, [])).toEqual([]);
  });

  it('wakes the instance a recorded Deployment is labelled with, before and after', () => {
    const now = deployment({ [WEBHOOK_SERVER_LABEL]: 'b' });
    const before = deployment({ [WEBHOOK_SERVER_LABEL]: 'a' });
    expect(instancesTriggers(upsert('deployment', now), before, [])).toEqual(['a', 'b']);
    expect(instancesTriggers({ kind: 'deployment', op: 'delete', object: now }, undefined, [])).toEqual([
      'b',
    ]);
    expect(instancesTriggers(upsert('deployment', deployment({})), undefined, [])).toEqual([]);
  });

  it('wakes the instance whose Service a target names', () => {
    expect(instancesTriggers(upsert('crd', crd('a-webhook-server')), crd(), [])).toEqual(['a']);
    expect(instancesTriggers(upsert('crd', crd('other')), undefined, [])).toEqual([]);
  });

  it('wakes instances being deleted on any config or target change, nothing else', () => {
    expect(instancesTriggers(upsert('crdconfig', config), undefined, ['d'])).toEqual(['d']);
    expect(instancesTriggers(upsert('xrd', crd()), undefined, ['d'])).toEqual(['d']);
    expect(instancesTriggers(upsert('lease', config), undefined, ['d'])).toEqual([]);
  });
});

describe('deletingInstances', () => {
  it('names the instances with a deletionTimestamp', () => {
    const gone = instance('1', {}, {}, { deletionTimestamp: '2026-01-01T00:00:00Z' });
    expect(
      deletingInstances([gone, { ...instance('1', {}), metadata: { name: 'b' } } as RecordedObject]),
    ).toEqual(['a']);
  });
});
