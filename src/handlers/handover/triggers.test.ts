import { describe, expect, it } from 'vitest';
import type { RecordedObject } from '../../bus/messages.ts';
import type { KeyedSubject } from '../assign/world.ts';
import { handoverTriggers } from './triggers.ts';

const object = (name: string, generation?: number): RecordedObject => ({
  metadata: {
    name,
    uid: `uid-${name}`,
    resourceVersion: '1',
    ...(generation !== undefined && { generation }),
  },
});
const subject = (kind: string, name: string, target: string): KeyedSubject => ({
  key: { kind, name },
  config: `${kind}/${name}`,
  target,
  pinnedTo: undefined,
});
const world = {
  configs: [
    subject('crdconfig', 'widgets', 'widgets.example.com'),
    subject('xrdconfig', 'buckets', 'xbuckets.example.com'),
  ],
};
const upsert = (kind: string, o: RecordedObject) => ({ kind, op: 'upsert' as const, object: o });

describe('handoverTriggers', () => {
  it.each([
    ['a target created after its config', 'crd', 'widgets.example.com', undefined, ['widgets.example.com']],
    ['an XRD target whose spec changed', 'xrd', 'xbuckets.example.com', 1, ['xbuckets.example.com']],
    ['a config whose spec changed wakes its target', 'crdconfig', 'widgets', 1, ['widgets.example.com']],
    ['a new config wakes its target', 'xrdconfig', 'buckets', undefined, ['xbuckets.example.com']],
    ['a CRD nobody converts wakes nothing', 'crd', 'gadgets.example.com', undefined, []],
    ['a config of the other kind with the same name wakes nothing', 'xrdconfig', 'widgets', undefined, []],
    ['an instance wakes nothing here', 'webhookserver', 'a', undefined, []],
    ['a Lease wakes nothing here', 'lease', 'switchyard-served-a-1', undefined, []],
  ])('%s', (_name, kind, name, previousGeneration, expected) => {
    const previous = previousGeneration === undefined ? undefined : object(name, previousGeneration);
    expect(handoverTriggers(upsert(kind, object(name, 2)), previous, world)).toEqual(expected);
  });

  it('a status write or a heartbeat (same generation) wakes nothing; a deleted config wakes nothing', () => {
    const crd = object('widgets.example.com', 3);
    expect(handoverTriggers(upsert('crd', crd), object('widgets.example.com', 3), world)).toEqual([]);
    expect(handoverTriggers(upsert('crdconfig', object('widgets', 3)), object('widgets', 3), world)).toEqual(
      [],
    );
    const config = object('widgets', 3);
    expect(handoverTriggers({ kind: 'crdconfig', op: 'delete', object: config }, config, world)).toEqual([]);
  });

  it('a deleted target wakes its handover: no verdict may stand about an object that is gone', () => {
    const crd = object('widgets.example.com', 3);
    expect(handoverTriggers({ kind: 'crd', op: 'delete', object: crd }, crd, world)).toEqual([
      'widgets.example.com',
    ]);
    const other = object('gadgets.example.com', 3);
    expect(handoverTriggers({ kind: 'crd', op: 'delete', object: other }, other, world)).toEqual([]);
  });

  it('a status write that records a new instance wakes the target: the gate waits for exactly that write', () => {
    const assigned = (instance: string | undefined) => ({
      ...object('widgets', 3),
      ...(instance && { status: { assignedWebhookServer: instance } }),
    });
    expect(handoverTriggers(upsert('crdconfig', assigned('b')), assigned('a'), world)).toEqual([
      'widgets.example.com',
    ]);
    expect(handoverTriggers(upsert('crdconfig', assigned('a')), assigned(undefined), world)).toEqual([
      'widgets.example.com',
    ]);
    expect(handoverTriggers(upsert('crdconfig', assigned('b')), assigned('b'), world)).toEqual([]);
  });
});

describe('handoverTriggers for the CRDs Crossplane generates from an XRD target', () => {
  const ownedBy = (o: RecordedObject, xrd: string): RecordedObject => ({
    ...o,
    metadata: {
      ...o.metadata,
      ownerReferences: [
        {
          apiVersion: 'apiextensions.crossplane.io/v1',
          kind: 'CompositeResourceDefinition',
          name: xrd,
          uid: 'u',
          controller: true,
        },
      ],
    } as RecordedObject['metadata'],
  });
  const established = (o: RecordedObject, status: 'True' | 'False'): RecordedObject =>
    ({ ...o, status: { conditions: [{ type: 'Established', status }] } }) as RecordedObject;

  it('a claim CRD, named otherwise, wakes the XRD it was generated from', () => {
    const claim = ownedBy(object('buckets.example.com', 2), 'xbuckets.example.com');
    expect(handoverTriggers(upsert('crd', claim), object('buckets.example.com', 1), world)).toEqual([
      'xbuckets.example.com',
    ]);
  });

  it('a CRD owned by something other than an XRD wakes nothing', () => {
    const claim = object('buckets.example.com', 2);
    expect(handoverTriggers(upsert('crd', claim), object('buckets.example.com', 1), world)).toEqual([]);
  });

  it('a target becoming Established wakes it, its spec unchanged: a first apply waits for it', () => {
    const before = established(object('widgets.example.com', 1), 'False');
    const after = established(object('widgets.example.com', 1), 'True');
    expect(handoverTriggers(upsert('crd', after), before, world)).toEqual(['widgets.example.com']);
    expect(handoverTriggers(upsert('crd', after), after, world), 'a status write alone').toEqual([]);
  });
});
