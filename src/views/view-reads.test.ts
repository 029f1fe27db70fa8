import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { renameConfigSpec } from '../../test/support/crds.ts';
import { API_VERSION } from '../api/constants.ts';
import { conversionConfigSchema } from '../api/conversion-config.ts';
import type { RecordedObject } from '../bus/messages.ts';
import { parseRecorded } from './parse-cache.ts';
import {
  derivedFromView,
  readExpectationView,
  readExpectedSets,
  readReplicasStableSinceMs,
} from './view-reads.ts';

const object = (name: string): RecordedObject => ({ metadata: { name, uid: 'u', resourceVersion: '1' } });

describe('parseRecorded', () => {
  it('parses each recorded object once per schema, and a new record afresh', () => {
    let parses = 0;
    const schema = z.object({ metadata: z.object({ name: z.string() }) }).transform((o) => {
      parses++;
      return o.metadata.name;
    });
    const first = object('a');
    expect(parseRecorded(schema, first)).toMatchObject({ success: true, data: 'a' });
    expect(parseRecorded(schema, first)).toBe(parseRecorded(schema, first));
    expect(parses).toBe(1);
    expect(parseRecorded(schema, object('b'))).toMatchObject({ data: 'b' });
    expect(parses, 'a new record of the object is a new object').toBe(2);
    const other = z.object({ metadata: z.object({ name: z.literal('x') }) });
    expect(parseRecorded(other, first).success, 'another schema is its own cache').toBe(false);
  });
});

describe('parseRecorded with the schema compiled ahead of time', () => {
  const config = (name: string, spec: unknown) =>
    ({
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name, uid: `uid-${name}`, resourceVersion: '1' },
      spec,
    }) as RecordedObject;
  const valid = renameConfigSpec('widgets.example.org');
  const rule = valid.spokes[0]?.rules[0];

  const invalid: [string, unknown][] = [
    [
      'a rule value that is not JSON',
      {
        ...valid,
        spokes: [{ version: 'v1', rules: [{ ...rule, when: { path: 'spec.a', equals: Number.NaN } }] }],
      },
    ],
    ['a rule without its params', { ...valid, spokes: [{ version: 'v1', rules: [{ strategy: 'Delete' }] }] }],
    ['Warn without a reason', { ...valid, unmappedFieldPolicy: 'Warn' }],
    ['a field the API does not have', { ...valid, extra: true }],
  ];

  it('reads a valid config as the schema does', () => {
    const object = config('valid', valid);
    const parsed = parseRecorded(conversionConfigSchema, object);
    expect(parsed.success).toBe(true);
    expect(parsed.data).toStrictEqual(conversionConfigSchema.parse(object));
  });

  it.each(invalid)('refuses %s with the message the schema gives', (name, spec) => {
    const object = config(name.replaceAll(' ', '-'), spec);
    const expected = conversionConfigSchema.safeParse(object);
    const parsed = parseRecorded(conversionConfigSchema, object);
    expect(parsed.success).toBe(false);
    expect(z.prettifyError(parsed.error as z.ZodError)).toBe(z.prettifyError(expected.error as z.ZodError));
  });
});

describe('derivedFromView', () => {
  it('derives again only when an object of its kinds was recorded anew, added or removed', () => {
    const lists: Record<string, RecordedObject[]> = {
      crdconfig: [object('a'), object('b')],
      lease: [object('l')],
    };
    const view = { list: (kind: string) => [...(lists[kind] ?? [])] };
    const slot = {};
    let computed = 0;
    const names = () =>
      derivedFromView(view, ['crdconfig'], slot, ([configs]) => {
        computed++;
        return (configs ?? []).map((o) => o.metadata.name);
      });
    expect(names()).toEqual(['a', 'b']);
    expect(names()).toBe(names());
    expect(computed).toBe(1);
    lists.lease = [object('l')];
    names();
    expect(computed, 'a record of another kind changes nothing it reads').toBe(1);
    lists.crdconfig = [object('a'), object('b')];
    names();
    expect(computed, 'the same names in new records are new records').toBe(2);
    lists.crdconfig = [object('a')];
    expect(names()).toEqual(['a']);
    expect(computed).toBe(3);
  });
});

describe('derivedFromView with sameness', () => {
  it('keeps the previous value when a change left what was derived equal', () => {
    const lists: Record<string, RecordedObject[]> = { crdconfig: [object('a')] };
    const view = { list: (kind: string) => lists[kind] ?? [] };
    const slot = {};
    const names = () =>
      derivedFromView(
        view,
        ['crdconfig'],
        slot,
        ([configs]) => (configs ?? []).map((o) => o.metadata.name),
        (x, y) => x.join() === y.join(),
      );
    const first = names();
    lists.crdconfig = [object('a')];
    expect(names(), 'a new record, the same names').toBe(first);
    lists.crdconfig = [object('a'), object('b')];
    expect(names()).toEqual(['a', 'b']);
  });
});

describe('the expectation read off a view', () => {
  const config = (name: string, target: string, status: object = {}): RecordedObject => ({
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name, uid: `u-${name}`, resourceVersion: '1' },
    spec: renameConfigSpec(target),
    status,
  });
  const instance = (name: string, status: object = {}): RecordedObject => ({
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name, uid: `u-${name}`, resourceVersion: '1' },
    spec: { default: true },
    status,
  });
  const crd = (name: string, service?: string): RecordedObject => ({
    metadata: { name, uid: `u-${name}`, resourceVersion: '1' },
    spec: service
      ? { conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { name: service } } } } }
      : { conversion: { strategy: 'None' } },
  });
  function viewOf(lists: Record<string, RecordedObject[]>) {
    return { list: (kind: string) => lists[kind] ?? [], record: () => undefined, renewTime: () => undefined };
  }

  it('is the same object, with the same expected sets, after writes that change none of its facts', () => {
    const lists: Record<string, RecordedObject[]> = {
      crdconfig: [config('w', 'widgets.x.io')],
      webhookserver: [instance('a')],
      crd: [crd('widgets.x.io')],
    };
    const view = viewOf(lists);
    const expectation = readExpectationView(view);
    const setOfA = readExpectedSets(view)('a');
    expect([...setOfA.names]).toEqual(['widgets.x.io']);
    lists.crdconfig = [config('w', 'widgets.x.io', { phase: 'Applied', assignedWebhookServer: 'a' })];
    lists.webhookserver = [instance('a', { reportingReplicas: 2 })];
    expect(readExpectationView(view), 'status writes').toBe(expectation);
    expect(readExpectedSets(view)('a')).toBe(setOfA);
  });

  it('is derived anew when a fact changes, and keeps the sets of instances it does not concern', () => {
    const lists: Record<string, RecordedObject[]> = {
      crdconfig: [config('w', 'widgets.x.io'), config('g', 'gadgets.x.io')],
      webhookserver: [instance('a')],
      crd: [crd('widgets.x.io'), crd('gadgets.x.io')],
    };
    const view = viewOf(lists);
    const expectation = readExpectationView(view);
    const setOfA = readExpectedSets(view)('a');
    lists.crd = [crd('widgets.x.io', 'a-webhook-server'), crd('gadgets.x.io')];
    const after = readExpectationView(view);
    expect(after).not.toBe(expectation);
    expect(after.targets.get('widgets.x.io')).toEqual(['a-webhook-server']);
    expect(readExpectedSets(view)('a'), 'a holds the same two targets').toBe(setOfA);
    lists.crdconfig = [config('w', 'widgets.x.io', { phase: 'Invalid' }), config('g', 'gadgets.x.io')];
    expect([...readExpectedSets(view)('a').names]).toEqual(['gadgets.x.io']);
  });
});

describe('readReplicasStableSinceMs', () => {
  const at = (s: number) => new Date(Date.UTC(2026, 2, 1, 12, 0, s)).toISOString();
  const slice = (name: string, service: string, namespace = 'ns'): RecordedObject => ({
    metadata: {
      name,
      namespace,
      uid: name,
      resourceVersion: '1',
      labels: { 'kubernetes.io/service-name': service },
    },
  });
  const lease = (pod: string, instance: string, namespace = 'ns'): RecordedObject =>
    ({
      metadata: {
        name: `${pod}-served`,
        namespace,
        uid: pod,
        resourceVersion: '1',
        labels: { 'switchyard.dev/webhook-server': instance },
      },
      spec: { holderIdentity: pod },
    }) as RecordedObject;
  /** A view holding these objects, each recorded (observed) at the given second. */
  const viewOf = (records: [string, RecordedObject, number][]) => ({
    list: (kind: string) => records.filter(([k]) => k === kind).map(([, o]) => o),
    record: (key: { kind: string; namespace?: string; name: string }) => {
      const found = records.find(
        ([k, o]) =>
          k === key.kind && o.metadata.name === key.name && (o.metadata.namespace ?? '') === key.namespace,
      );
      return (
        found && {
          op: 'upsert' as const,
          object: found[1],
          observedBy: 'watch' as const,
          observedAt: at(found[2]),
        }
      );
    },
    renewTime: () => undefined,
  });

  it("is the latest recorded change of the instance's slices and of its ready Pods' Leases", () => {
    const view = viewOf([
      ['endpointslice', slice('b-webhook-server-x', 'b-webhook-server'), 10],
      ['lease', lease('b-1', 'b'), 20],
      ['lease', lease('b-2', 'b'), 30],
      // Not b's, not ready, or in another namespace: none of them moves it.
      ['lease', lease('b-3', 'b'), 50],
      ['lease', lease('c-1', 'c'), 50],
      ['endpointslice', slice('c-webhook-server-x', 'c-webhook-server'), 50],
      ['endpointslice', slice('b-webhook-server-y', 'b-webhook-server', 'other'), 50],
    ]);
    expect(readReplicasStableSinceMs(view, 'b', 'ns', ['b-1', 'b-2'])).toBe(Date.parse(at(30)));
    expect(readReplicasStableSinceMs(view, 'b', 'ns', ['b-1'])).toBe(Date.parse(at(20)));
    expect(readReplicasStableSinceMs(view, 'b', 'ns', [])).toBe(Date.parse(at(10)));
    expect(readReplicasStableSinceMs(view, 'd', 'ns', [])).toBeUndefined();
  });
});
