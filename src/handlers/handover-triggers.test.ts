import { describe, expect, it } from 'vitest';
import type { RecordedObject } from '../bus/messages.ts';
import type { KeyedSubject } from './assign-world.ts';
import { handoverTriggers } from './handover-triggers.ts';

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

  it('a status write or a heartbeat (same generation) wakes nothing; a deletion wakes nothing', () => {
    const crd = object('widgets.example.com', 3);
    expect(handoverTriggers(upsert('crd', crd), object('widgets.example.com', 3), world)).toEqual([]);
    expect(handoverTriggers(upsert('crdconfig', object('widgets', 3)), object('widgets', 3), world)).toEqual(
      [],
    );
    expect(handoverTriggers({ kind: 'crd', op: 'delete', object: crd }, crd, world)).toEqual([]);
  });
});
