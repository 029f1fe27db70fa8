import { describe, expect, it } from 'vitest';
import type { RecordedObject } from '../../bus/messages.ts';
import type { KeyedSubject } from '../assign/world.ts';
import { configStatusTriggers } from './triggers.ts';

const object = (name: string): RecordedObject => ({
  metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
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

describe('configStatusTriggers', () => {
  it.each([
    ['a config wakes itself', 'crdconfig', 'widgets', [{ kind: 'crdconfig', name: 'widgets' }]],
    ['an XRD config wakes itself', 'xrdconfig', 'other', [{ kind: 'xrdconfig', name: 'other' }]],
    [
      'a target wakes the config that converts it',
      'crd',
      'widgets.example.com',
      [{ kind: 'crdconfig', name: 'widgets' }],
    ],
    [
      'an XRD target wakes its config',
      'xrd',
      'xbuckets.example.com',
      [{ kind: 'xrdconfig', name: 'buckets' }],
    ],
    ['a CRD nobody converts wakes nothing', 'crd', 'gadgets.example.com', []],
    ['an instance wakes nothing here', 'webhookserver', 'a', []],
  ])('%s', (_name, kind, name, expected) => {
    expect(configStatusTriggers({ kind, object: object(name) }, world)).toEqual(expected);
  });
});

describe('configStatusTriggers for a CRD Crossplane generated from an XRD target', () => {
  it('wakes the config of the XRD that owns it, besides any config of its own name', () => {
    const claim = {
      metadata: {
        ...object('buckets.example.com').metadata,
        ownerReferences: [
          {
            apiVersion: 'apiextensions.crossplane.io/v1',
            kind: 'CompositeResourceDefinition',
            name: 'xbuckets.example.com',
            controller: true,
          },
        ],
      },
    } as RecordedObject;
    expect(configStatusTriggers({ kind: 'crd', object: claim }, world)).toEqual([
      { kind: 'xrdconfig', name: 'buckets' },
    ]);
  });
});
