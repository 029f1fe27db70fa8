// The router's reading of a change's previous record, and what a delete-and-recreate with the
// same name then wakes. The re-created object's first record names the tombstone as its previous
// record (the watcher's expected-last-sequence header), so the tombstone must count as "absent
// before": compared with the deleted incarnation, an identical new one changed nothing.
import { describe, expect, it } from 'vitest';
import { encodeMessage, type ObjectEvent, objectEventSchema, type RecordedObject } from '../bus/messages.ts';
import { assignTriggers } from './assign/triggers.ts';
import { type AssignWorld, configSubjectOf, instanceOf } from './assign/world.ts';
import { handoverTriggers } from './handover/triggers.ts';
import { instancesTriggers } from './instances/triggers.ts';
import { leaseAggregateTriggers } from './lease-aggregate/triggers.ts';
import { previousObjectOf } from './router.ts';
import { formatWorkKey } from './work-keys.ts';

const at = '2025-01-01T00:00:00Z';
const object = (name: string, uid: string, rv: string, spec: Record<string, unknown>): RecordedObject => ({
  metadata: { name, uid, resourceVersion: rv, generation: 1 },
  spec,
});
const tombstone = (o: RecordedObject): Uint8Array =>
  encodeMessage(objectEventSchema, { op: 'delete', object: o, observedBy: 'watch', observedAt: at });
const upsertRecord = (o: RecordedObject): Uint8Array =>
  encodeMessage(objectEventSchema, { op: 'upsert', object: o, observedBy: 'watch', observedAt: at });
const upsert = (kind: string, o: RecordedObject): ObjectEvent & { kind: string } => ({
  kind,
  op: 'upsert',
  object: o,
  observedBy: 'watch',
  observedAt: at,
});

const CONFIG_SPEC = { targetCRD: { name: 'widgets.example.com' } };
const oldConfig = object('widgets', 'uid-old', '10', CONFIG_SPEC);
const newConfig = object('widgets', 'uid-new', '20', CONFIG_SPEC);
const instance = object('a', 'uid-a', '5', { default: true });

describe('previousObjectOf', () => {
  it('an upsert record of the same object is what it was before', () => {
    expect(previousObjectOf(upsertRecord(oldConfig), 'uid-old')).toEqual(oldConfig);
  });

  it('a tombstone means absent before, though it carries the deleted object', () => {
    expect(previousObjectOf(tombstone(oldConfig), 'uid-new')).toBeUndefined();
  });

  it('an upsert of an earlier incarnation (another uid) means absent before', () => {
    expect(previousObjectOf(upsertRecord(oldConfig), 'uid-new')).toBeUndefined();
  });

  it('an unreadable record means absent before', () => {
    expect(previousObjectOf(new TextEncoder().encode('{"op":"nonsense"}'), 'uid-old')).toBeUndefined();
  });
});

describe('a delete and re-create with the same name and spec', () => {
  const world: AssignWorld = {
    instances: [instanceOf(instance)],
    configs: [configSubjectOf('crdconfig', newConfig)].filter((c) => c !== undefined),
  };
  const previous = previousObjectOf(tombstone(oldConfig), 'uid-new');

  it('wakes assign for the config and the instance it resolves to', () => {
    const t = assignTriggers(upsert('crdconfig', newConfig), previous, world);
    expect(t.now.map(formatWorkKey).sort()).toEqual(['crdconfig/widgets', 'webhookserver/a']);
  });

  it('wakes the handover of its target (the target is applied again)', () => {
    expect(handoverTriggers(upsert('crdconfig', newConfig), previous, world)).toEqual([
      'widgets.example.com',
    ]);
  });

  it('a re-created target wakes its handover', () => {
    const crd = (uid: string, rv: string) => object('widgets.example.com', uid, rv, { group: 'example.com' });
    const before = previousObjectOf(tombstone(crd('uid-1', '30')), 'uid-2');
    expect(handoverTriggers(upsert('crd', crd('uid-2', '40')), before, world)).toEqual([
      'widgets.example.com',
    ]);
  });

  it('a re-created instance wakes its aggregate, its reconcile and the configs it wins', () => {
    const again = object('a', 'uid-a2', '50', { default: true });
    const before = previousObjectOf(tombstone(instance), 'uid-a2');
    expect(leaseAggregateTriggers(upsert('webhookserver', again), before)).toEqual(['a']);
    expect(instancesTriggers(upsert('webhookserver', again), before, [])).toEqual(['a']);
    const t = assignTriggers(upsert('webhookserver', again), before, world);
    expect(t.paced.map(formatWorkKey)).toEqual(['crdconfig/widgets']);
  });
});
