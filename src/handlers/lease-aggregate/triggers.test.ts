import { describe, expect, it } from 'vitest';
import { WEBHOOK_SERVER_LABEL } from '../../api/constants.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { leaseAggregateTriggers, type RecordedChange } from './triggers.ts';

const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  uid: `uid-${name}`,
  resourceVersion: '1',
  ...extra,
});
const lease = (instance: string): RecordedObject => ({
  metadata: meta('switchyard-served-pod-1', {
    namespace: 'ns',
    labels: { [WEBHOOK_SERVER_LABEL]: instance },
  }),
});
const slice = (service: string): RecordedObject => ({
  metadata: meta('s1', { namespace: 'ns', labels: { 'kubernetes.io/service-name': service } }),
});
const instance = (name: string, spec: object, status: object = {}): RecordedObject =>
  ({ metadata: meta(name), spec, status }) as RecordedObject;
const config = (assigned: string | undefined, pin?: string): RecordedObject =>
  ({
    metadata: meta('cfg'),
    spec: { targetCRD: { name: 't.example.com' }, ...(pin ? { webhookServerRef: { name: pin } } : {}) },
    status: assigned ? { assignedWebhookServer: assigned } : {},
  }) as RecordedObject;
const withStatus = (o: RecordedObject, status: object): RecordedObject =>
  ({ ...o, status: { ...(o as { status?: object }).status, ...status } }) as RecordedObject;
const crdNaming = (service: string): RecordedObject =>
  ({
    metadata: meta('t.example.com'),
    spec: { conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { name: service } } } } },
  }) as RecordedObject;
const change = (
  kind: string,
  object: RecordedObject,
  op: 'upsert' | 'delete' = 'upsert',
): RecordedChange => ({
  kind,
  op,
  object,
});

describe('leaseAggregateTriggers', () => {
  it.each([
    ['a Lease change wakes its instance', change('lease', lease('a')), undefined, ['a']],
    ['a Lease moved to another instance wakes both', change('lease', lease('b')), lease('a'), ['a', 'b']],
    ['a deleted Lease wakes its instance', change('lease', lease('a'), 'delete'), lease('a'), ['a']],
    [
      'an instance Service’s slice wakes the instance',
      change('endpointslice', slice('a-webhook-server')),
      undefined,
      ['a'],
    ],
    ['a slice of another Service wakes nothing', change('endpointslice', slice('kube-dns')), undefined, []],
    [
      'a new instance wakes itself',
      change('webhookserver', instance('a', { replicas: 2 })),
      undefined,
      ['a'],
    ],
    [
      'an instance’s spec change wakes it',
      change('webhookserver', instance('a', { replicas: 3 })),
      instance('a', { replicas: 2 }),
      ['a'],
    ],
    [
      'an instance’s status write (by a handler) wakes nothing',
      change('webhookserver', instance('a', { replicas: 2 }, { readyReplicas: 2 })),
      instance('a', { replicas: 2 }, { readyReplicas: 1 }),
      [],
    ],
    ['a config reassigned wakes both instances', change('crdconfig', config('b')), config('a'), ['a', 'b']],
    ['a pinned config wakes its pin', change('crdconfig', config(undefined, 'p')), undefined, ['p']],
    [
      'a config whose handover or phase was written wakes nothing',
      change(
        'crdconfig',
        withStatus(config('a'), { phase: 'Applied', conditions: [{ type: 'HandoverReady' }] }),
      ),
      withStatus(config('a'), { phase: 'Validated' }),
      [],
    ],
    [
      'a config turning Invalid wakes its instance (it is expected nowhere then)',
      change('crdconfig', withStatus(config('a'), { phase: 'Invalid' })),
      withStatus(config('a'), { phase: 'Applied' }),
      ['a'],
    ],
    [
      'a config repinned wakes both pins',
      change('crdconfig', config('a', 'q')),
      config('a', 'p'),
      ['a', 'p', 'q'],
    ],
    [
      'a target repointed wakes the instance it named and the one it names',
      change('crd', crdNaming('b-webhook-server')),
      crdNaming('a-webhook-server'),
      ['a', 'b'],
    ],
    [
      'a target naming a foreign Service wakes nothing',
      change('crd', crdNaming('legacy-converter')),
      undefined,
      [],
    ],
  ])('%s', (_name, c, previous, expected) => {
    expect(leaseAggregateTriggers(c, previous)).toEqual(expected);
  });
});
