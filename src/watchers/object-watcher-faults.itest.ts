import { randomBytes } from 'node:crypto';
// Watchers and views under faults, each on a NATS server of the test's own:
// NATS unreachable while changes happen, every record aged out of the
// history, a lagging replica writing past the duplicate window, and objects
// too large for NATS' max_payload.
import {
  ApiextensionsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnBus, startOwnBus } from '../../test/support/bus.ts';
import { crdWithSpec } from '../../test/support/crds.ts';
import { createNamespace, useLocalCluster } from '../../test/support/local-cluster.ts';
import { startRecording } from '../../test/support/watchers.ts';
import { encodeMessage, type ObjectEvent, objectEventSchema } from '../bus/messages.ts';
import { RecordWriter } from '../bus/records/record-writer.ts';
import { objectSubject } from '../bus/subjects.ts';
import { DEFAULT_TOPOLOGY, STREAMS, type TopologyOptions, tombstoneTtl } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { waitFor } from '../local-cluster/wait.ts';
import type { ObjectWatcher } from './object-watcher.ts';
import type { WatchedResource } from './resources.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
let namespace = '';
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  namespace = await createNamespace(admin, 'watch-faults');
});

afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
  await core.deleteNamespace({ name: namespace });
});

async function ownBus(topology?: TopologyOptions): Promise<OwnBus> {
  const bus = await startOwnBus(topology);
  cleanups.push(() => bus.stop());
  return bus;
}

/** A RecordWriter on the test's own bus, with the server's max_payload. */
function writerOn(bus: OwnBus, topology: TopologyOptions = DEFAULT_TOPOLOGY): RecordWriter {
  return new RecordWriter({
    js: bus.js,
    jsm: bus.jsm,
    maxPayload: bus.nc.info?.max_payload ?? 0,
    tombstoneTtl: tombstoneTtl(topology),
  });
}

async function view(bus: OwnBus, kind: string): Promise<ObjectView> {
  const v = new ObjectView([kind], log);
  await v.start(bus.js);
  cleanups.push(() => v.stop());
  return v;
}

async function record(
  bus: OwnBus,
  resource: WatchedResource,
  topology?: TopologyOptions,
): Promise<ObjectWatcher> {
  const w = await startRecording(bus, resource, {
    kubeConfig: admin,
    log,
    ...(topology ? { topology } : {}),
  });
  cleanups.push(() => w.stop());
  return w;
}

const configMaps = (kind: string, label: string): WatchedResource => ({
  kind,
  path: `/api/v1/namespaces/${namespace}/configmaps`,
  labelSelector: `test=${label}`,
});

const dataOf = (o: unknown) => (o as { data?: Record<string, string> } | undefined)?.data;

function namesIn(v: ObjectView, kind: string): string {
  return v
    .list(kind)
    .map((o) => `${o.metadata.name}=${dataOf(o)?.v ?? ''}`)
    .sort()
    .join(',');
}

describe('watcher faults', () => {
  it('records every change made while NATS was unreachable, the deletion included, once NATS is back', async () => {
    const bus = await ownBus();
    const resource = configMaps('cm', 'outage');
    const watcher = await record(bus, resource);
    const make = (name: string, v: string) =>
      core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, labels: { test: 'outage' } }, data: { v } },
      });
    await make('keep', '1');
    await make('doomed', '1');
    await waitFor('both recorded', () => (watcher.stats.published === 2 ? true : undefined));

    await bus.server.stop({ kill: true });
    await make('born', '1');
    await core.patchNamespacedConfigMap(
      { name: 'keep', namespace, body: { data: { v: '2' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedConfigMap({ name: 'doomed', namespace });
    // Long enough for the watch to see the changes and fail to record them.
    await waitFor('a change the bus did not store', () =>
      watcher.stats.recordFailures > 0 ? true : undefined,
    );
    await bus.server.launch();
    await waitFor('JetStream answering the reconnected client', () =>
      bus.jsm.streams.info(STREAMS.latest).then(() => true),
    );

    const v = await view(bus, 'cm');
    await waitFor(
      'the bus caught up with the cluster',
      () => (namesIn(v, 'cm') === 'born=1,keep=2' ? true : undefined),
      {
        timeoutMs: 60_000,
      },
    );
    expect(watcher.stats.relists).toBeGreaterThanOrEqual(2);
    expect(watcher.stats.tombstones).toBe(1);
  });

  it('keeps every live object on the bus after the history has aged out, and a view starts from it', async () => {
    const topology = { ...DEFAULT_TOPOLOGY, recordRetentionHours: 2 / 3600, duplicateWindowSeconds: 1 };
    const bus = await ownBus(topology);
    // An empty bus: a view is ready at once.
    const empty = await view(bus, 'cm2');
    expect(empty.list('cm2')).toEqual([]);

    const resource = configMaps('cm2', 'aged');
    const first = await record(bus, resource, topology);
    for (const name of ['a', 'b', 'c'])
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, labels: { test: 'aged' } }, data: { v: '1' } },
      });
    await core.deleteNamespacedConfigMap({ name: 'c', namespace });
    await waitFor('all recorded', () => (first.stats.published === 4 ? true : undefined));
    first.stop();

    await waitFor(
      'the history empty',
      async () => ((await bus.jsm.streams.info(STREAMS.records)).state.messages === 0 ? true : undefined),
      { timeoutMs: 15_000 },
    );
    await waitFor(
      'the tombstone gone from the latest state',
      async () => ((await bus.jsm.streams.info(STREAMS.latest)).state.messages === 2 ? true : undefined),
      { timeoutMs: 15_000 },
    );
    const late = await view(bus, 'cm2');
    expect(namesIn(late, 'cm2')).toBe('a=1,b=1');

    // A watcher started now records nothing it already has, and writes over aged-out records.
    const second = await record(bus, resource, topology);
    expect(second.stats.published).toBe(0);
    await core.patchNamespacedConfigMap(
      { name: 'a', namespace, body: { data: { v: '2' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor('the update in the view', () => (namesIn(late, 'cm2') === 'a=2,b=1' ? true : undefined));
  });

  it('never lets a replica lagging past the duplicate window resurrect a deleted object', async () => {
    const topology = { ...DEFAULT_TOPOLOGY, recordRetentionHours: 1, duplicateWindowSeconds: 1 };
    const bus = await ownBus(topology);
    const writer = writerOn(bus, topology);
    const subject = objectSubject({ kind: 'cm3', namespace, name: 'x' });
    const object = { metadata: { name: 'x', namespace, uid: 'uid-x', resourceVersion: '5' } };
    const at = new Date().toISOString();
    const upsert: ObjectEvent = { op: 'upsert', object, observedBy: 'watch', observedAt: at };
    const older: ObjectEvent = {
      ...upsert,
      object: { metadata: { ...object.metadata, resourceVersion: '4' } },
    };
    const tombstone: ObjectEvent = { op: 'delete', object, observedBy: 'watch', observedAt: at };
    const v = await view(bus, 'cm3');

    expect((await writer.write(subject, upsert)).outcome).toBe('stored');
    expect((await writer.write(subject, tombstone)).outcome).toBe('stored');
    await new Promise((r) => setTimeout(r, 1_500));
    // The lagging replica knows nothing of what was stored (a fresh writer's guess is empty).
    expect((await writer.write(subject, upsert)).outcome).toBe('stale');
    expect((await writer.write(subject, older)).outcome).toBe('stale');
    await v.waitFor((await bus.jsm.streams.info(STREAMS.records)).state.last_seq);
    expect(v.get({ kind: 'cm3', namespace, name: 'x' })).toBeUndefined();

    // Negative control: the duplicate window alone (a plain publish with the same id) lets it through.
    const plain = await bus.js.publish(subject, encodeMessage(objectEventSchema, upsert), {
      msgID: 'uid-x:5',
    });
    expect(plain.duplicate).toBe(false);
    await v.waitFor(plain.seq);
    expect(v.get({ kind: 'cm3', namespace, name: 'x' })).toBeDefined();
  });

  // kube-apiserver's etcd client sends at most 2 MiB per request, managedFields
  // included, so no CRD in a cluster is much larger than these.
  it('records a CRD over 1 MiB compressed, and goes on with the next', async () => {
    const bus = await ownBus();
    const crds = admin.makeApiClient(ApiextensionsV1Api);
    const label = `big-${Date.now()}`;
    const resource: WatchedResource = {
      kind: 'crd',
      path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      labelSelector: `test=${label}`,
    };
    const crd = (plural: string, properties: Record<string, V1JSONSchemaProps>) =>
      crdWithSpec(plural, 'big.switchyard.dev', properties, { test: label });
    // A schema over 1 MiB (its managedFields about as much again: near the 2 MiB the
    // apiserver sends to etcd), compressible as schemas are: names and descriptions repeat their shape.
    const compressible = Object.fromEntries(
      Array.from({ length: 18_000 }, (_, i) => [
        `field${i}`,
        { type: 'string', description: `The field number ${i}.` },
      ]),
    );
    const size = JSON.stringify(crd('widgets', compressible)).length;
    expect(size).toBeGreaterThan(1024 * 1024);
    await crds.createCustomResourceDefinition({ body: crd('widgets', compressible) });
    await crds.createCustomResourceDefinition({ body: crd('smalls', { a: { type: 'string' } }) });
    cleanups.push(async () => {
      for (const p of ['widgets', 'smalls'])
        await crds.deleteCustomResourceDefinition({ name: `${p}.big.switchyard.dev` }).catch(() => undefined);
    });

    const watcher = await record(bus, resource);
    const v = await view(bus, 'crd');
    await waitFor('both recorded', () => (v.list('crd').length === 2 ? true : undefined));
    const widgets = v.record({ kind: 'crd', namespace: '', name: 'widgets.big.switchyard.dev' });
    const schema = (
      widgets?.object as {
        spec?: {
          versions?: { schema?: { openAPIV3Schema?: { properties?: { spec?: { properties?: object } } } } }[];
        };
      }
    )?.spec?.versions?.[0]?.schema?.openAPIV3Schema?.properties?.spec?.properties;
    expect(Object.keys(schema ?? {})).toHaveLength(18_000);
    expect(widgets?.omitted).toBeUndefined();
    expect(v.get({ kind: 'crd', namespace: '', name: 'smalls.big.switchyard.dev' })).toHaveProperty('spec');
    expect(watcher.stats.oversized).toBe(0);
  });

  it('records a 3 MiB object under the default 1 MiB max_payload, compressed, and reads it back whole', async () => {
    const bus = await ownBus();
    const writer = writerOn(bus);
    expect(bus.nc.info?.max_payload).toBe(1024 * 1024);
    const properties = Object.fromEntries(
      Array.from({ length: 45_000 }, (_, i) => [
        `field${i}`,
        { type: 'string', description: `The field number ${i}.` },
      ]),
    );
    const object = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'huge.example.com', uid: 'uid-huge', resourceVersion: '9' },
      spec: { properties },
    };
    expect(JSON.stringify(object).length).toBeGreaterThan(3 * 1024 * 1024);
    const v = await view(bus, 'crd');
    const result = await writer.write(
      objectSubject({ kind: 'crd', namespace: '', name: 'huge.example.com' }),
      {
        op: 'upsert',
        object,
        observedBy: 'list',
        observedAt: new Date().toISOString(),
      },
    );
    expect(result).toMatchObject({ outcome: 'stored' });
    expect(result.omittedBytes).toBeUndefined();
    await v.waitFor(result.stored.seq);
    expect(v.get({ kind: 'crd', namespace: '', name: 'huge.example.com' })).toEqual(object);
  });

  it('records an object that cannot fit even compressed without its content, never dropping it', async () => {
    const bus = await ownBus();
    const writer = writerOn(bus);
    // 2 MiB of random text: gzip cannot bring it under 1 MiB.
    const noise = randomBytes(1_536 * 1024).toString('base64');
    const object = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'noise.example.com', uid: 'uid-noise', resourceVersion: '3', labels: { team: 'a' } },
      spec: { noise },
    };
    const key = { kind: 'crd', namespace: '', name: 'noise.example.com' };
    const v = await view(bus, 'crd');
    const result = await writer.write(objectSubject(key), {
      op: 'upsert',
      object,
      observedBy: 'watch',
      observedAt: new Date().toISOString(),
    });
    expect(result.outcome).toBe('stored');
    expect(result.omittedBytes).toBeGreaterThan(1024 * 1024);
    await v.waitFor(result.stored.seq);
    expect(v.record(key)?.omitted).toEqual({ reason: 'too-large', bytes: result.omittedBytes });
    expect(v.get(key)).toEqual({
      apiVersion: object.apiVersion,
      kind: object.kind,
      metadata: object.metadata,
    });
  });
});
