// Watchers against the real apiserver and JetStream: changes round-trip from
// a watch into the record stream and back into a view; a watch that fell
// behind a compaction (410 Gone) relists and records the deletion it missed;
// two watchers store each change once; a Lease renewal is a heartbeat only,
// and the view knows its latest renewTime.
import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createNamespace,
  UNCACHED_TEST_RESOURCE,
  useLocalCluster,
} from '../../test/support/local-cluster.ts';
import { InterruptibleWatches, startRecording } from '../../test/support/watchers.ts';
import { decodeMessage, encodeMessage, objectEventSchema } from '../bus/messages.ts';
import { objectSubject } from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { natsConnectOptions } from '../local-cluster/nats-client.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { leaseContentDigest, type WatchedResource } from './resources.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let namespace = '';
const running: { stop(): void }[] = [];

beforeAll(async () => {
  nc = await connect(natsConnectOptions(cluster.info));
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
  namespace = await createNamespace(admin, 'watch');
});

afterAll(async () => {
  for (const r of running) r.stop();
  await core.deleteNamespace({ name: namespace });
  await nc.close();
});

async function startView(kind: string): Promise<ObjectView> {
  const view = new ObjectView([kind], log);
  await view.start(js);
  running.push(view);
  return view;
}

async function startWatcher(resource: WatchedResource, newWatch?: InterruptibleWatches['newWatch']) {
  const watcher = await startRecording({ nc, js, jsm }, resource, {
    kubeConfig: admin,
    log,
    ...(newWatch ? { newWatch } : {}),
  });
  running.push(watcher);
  return watcher;
}

/** The last record of an object in the history (tombstones included). */
async function lastRecord(key: { kind: string; namespace: string; name: string }) {
  const m = await jsm.direct.getMessage(STREAMS.records, { last_by_subj: objectSubject(key) });
  const decoded = m ? decodeMessage(objectEventSchema, m.data) : undefined;
  return decoded?.ok ? decoded.value : undefined;
}

async function recordedCount(filter: string, stream: string = STREAMS.records): Promise<number> {
  const info = await jsm.streams.info(stream, { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
}

const configMaps = (kind: string, label: string): WatchedResource => ({
  kind,
  path: `/api/v1/namespaces/${namespace}/configmaps`,
  labelSelector: `test=${label}`,
});

describe('object watcher', () => {
  it('records create, update and delete, and a view rebuilt from the stream follows them', async () => {
    const resource = configMaps('testcm', 'roundtrip');
    const view = await startView('testcm');
    await startWatcher(resource);
    const key = { kind: 'testcm', namespace, name: 'rt' };

    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'rt', labels: { test: 'roundtrip' } }, data: { v: '1' } },
    });
    await waitFor('the create in the view', () =>
      (view.get(key) as { data?: { v?: string } })?.data?.v === '1' ? true : undefined,
    );

    await core.patchNamespacedConfigMap(
      { name: 'rt', namespace, body: { data: { v: '2' } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor('the update in the view', () =>
      (view.get(key) as { data?: { v?: string } })?.data?.v === '2' ? true : undefined,
    );

    // A second view, built from the stream alone, sees the same state.
    const rebuilt = await startView('testcm');
    expect((rebuilt.get(key) as { data?: { v?: string } })?.data?.v).toBe('2');

    await core.deleteNamespacedConfigMap({ name: 'rt', namespace });
    await waitFor('the delete in the view', () => (view.get(key) === undefined ? true : undefined));
    expect(await lastRecord(key)).toMatchObject({ op: 'delete', observedBy: 'watch' });
  });

  it('lets a handler wait until its view has caught up to the sequence of a trigger', async () => {
    const view = await startView('testcm3');
    const object = { metadata: { name: 'late', namespace, uid: 'uid-late', resourceVersion: '1' } };
    const ack = await js.publish(
      objectSubject({ kind: 'testcm3', namespace, name: 'late' }),
      encodeMessage(objectEventSchema, {
        op: 'upsert',
        object,
        observedBy: 'watch',
        observedAt: new Date().toISOString(),
      }),
    );
    await view.waitFor(ack.seq);
    expect(view.sequence).toBeGreaterThanOrEqual(ack.seq);
    expect(view.get({ kind: 'testcm3', namespace, name: 'late' })).toEqual(object);
    await expect(view.waitFor(ack.seq + 1_000, 200)).rejects.toThrow(/did not reach stream sequence/);
  });

  it('relists when its own resume meets 410 Gone, and records the deletion it missed', async () => {
    const crds = admin.makeApiClient(ApiextensionsV1Api);
    const [plural, ...groupParts] = UNCACHED_TEST_RESOURCE.split('.');
    const group = groupParts.join('.');
    await crds.createCustomResourceDefinition({
      body: {
        metadata: { name: UNCACHED_TEST_RESOURCE },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural: plural ?? '', singular: 'gadget', kind: 'Gadget' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: { openAPIV3Schema: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
            },
          ],
        },
      },
    });
    const gadget = (name: string) => ({ apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name } });
    const create = (name: string) =>
      waitFor(`gadget ${name} created`, () =>
        custom
          .createNamespacedCustomObject({
            group,
            version: 'v1',
            namespace,
            plural: plural ?? '',
            body: gadget(name),
          })
          .then(() => true),
      );
    const resource: WatchedResource = {
      kind: 'gadget',
      path: `/apis/${group}/v1/namespaces/${namespace}/gadgets`,
    };
    const view = await startView('gadget');
    await create('g1');
    await create('g2');
    const watches = new InterruptibleWatches(admin);
    const watcher = await startWatcher(resource, watches.newWatch);
    await waitFor('both gadgets recorded', () => (view.list('gadget').length === 2 ? true : undefined));
    const position = watcher.position;

    // The watch connection drops and cannot come back yet: g1 goes, g3 comes,
    // and etcd forgets the history the watcher would resume from.
    watches.cutAndHold();
    await custom.deleteNamespacedCustomObject({
      group,
      version: 'v1',
      namespace,
      plural: plural ?? '',
      name: 'g1',
    });
    await create('g3');
    const range = await fetch(`${cluster.info.etcdUrl}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
    });
    const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
    const compacted = await fetch(`${cluster.info.etcdUrl}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision, physical: true }),
    });
    expect(compacted.status).toBe(200);

    const requestsBefore = watches.requests.length;
    watches.release();
    await waitFor('the missed deletion and creation recorded', () =>
      view
        .list('gadget')
        .map((g) => g.metadata.name)
        .sort()
        .join() === 'g2,g3'
        ? true
        : undefined,
    );
    // It resumed from its own position (no help from the test), met 410, and relisted.
    expect(watches.requests[requestsBefore]).toBe(position);
    expect(watcher.stats.relists).toBe(2);
    expect(watcher.stats.tombstones).toBe(1);
    expect(await lastRecord({ kind: 'gadget', namespace, name: 'g1' })).toMatchObject({
      op: 'delete',
      observedBy: 'relist-gap',
    });
  });

  it('stores each change once when two watchers run at the same time', async () => {
    const resource = configMaps('testcm2', 'twins');
    const [a, b] = await Promise.all([startWatcher(resource), startWatcher(resource)]);
    const names = ['t1', 't2', 't3', 't4', 't5'];
    for (const name of names) {
      await core.createNamespacedConfigMap({
        namespace,
        body: { metadata: { name, labels: { test: 'twins' } } },
      });
      await core.patchNamespacedConfigMap(
        { name, namespace, body: { data: { updated: 'yes' } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
    for (const name of names.slice(0, 2)) await core.deleteNamespacedConfigMap({ name, namespace });
    const changes = names.length * 2 + 2;
    // A replica that is behind finds the change already stored (a duplicate) or a
    // newer one stored (stale): either way it stores nothing.
    const seen = (w: typeof a) => w.stats.published + w.stats.duplicates + w.stats.stale;
    await waitFor('every change seen by both watchers', () =>
      seen(a) === changes && seen(b) === changes ? true : undefined,
    );
    expect(await recordedCount('k8s.testcm2.>')).toBe(changes);
    expect(a.stats.published + b.stats.published).toBe(changes);
    expect(a.stats.duplicates + b.stats.duplicates + a.stats.stale + b.stats.stale).toBe(changes);
  });

  it('records a Lease renewal as a heartbeat only, and the view knows the latest renewTime', async () => {
    const leases = admin.makeApiClient(CoordinationV1Api);
    const resource: WatchedResource = {
      kind: 'lease',
      path: `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`,
      contentDigest: leaseContentDigest,
    };
    const view = await startView('lease');
    const watcher = await startWatcher(resource);
    const key = { kind: 'lease', namespace, name: 'served-a' };
    await leases.createNamespacedLease({
      namespace,
      body: { metadata: { name: 'served-a' }, spec: { holderIdentity: 'pod-a', leaseDurationSeconds: 30 } },
    });
    let renewals = 0;
    const renew = async (holderIdentity: string) => {
      // Distinct, increasing times a second apart, so each renewal is told from the last.
      const renewTime = new Date(Date.UTC(2030, 0, 1, 0, 0, ++renewals)).toISOString().replace('Z', '000Z');
      await leases.patchNamespacedLease(
        { name: 'served-a', namespace, body: { spec: { holderIdentity, renewTime } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
      return renewTime;
    };
    await waitFor('the lease recorded', () => (view.get(key) ? true : undefined));
    await renew('pod-a');
    const latest = await renew('pod-a');
    await waitFor('two heartbeats', () => (watcher.stats.heartbeats === 2 ? true : undefined));
    // The record stream did not move (no handler woke), yet the view knows the second renewal.
    expect(await recordedCount('k8s.lease.>')).toBe(1);
    await waitFor('the latest renewal in the view', () =>
      view.renewTime(key) === latest ? true : undefined,
    );
    expect(view.get(key)?.spec).not.toHaveProperty('renewTime', latest);

    await renew('pod-b');
    await waitFor('the holder change recorded', () =>
      (view.get(key) as { spec?: { holderIdentity?: string } })?.spec?.holderIdentity === 'pod-b'
        ? true
        : undefined,
    );
    expect(await recordedCount('k8s.lease.>')).toBe(2);
    expect(watcher.stats.heartbeats).toBe(2);
  });
});
