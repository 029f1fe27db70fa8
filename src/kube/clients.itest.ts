// The three Kubernetes clients as the apiserver sees them: each request's
// User-Agent (watches included) read back from the audit log, the writes
// client's opt-in limit measured from the apiserver's receive timestamps, and
// the events client shedding and counting beyond its bucket and queue.
import { randomBytes } from 'node:crypto';
import {
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AuditEvent, auditLogFromNow } from '../../test/support/audit-log.ts';
import { createNamespace, useLocalCluster } from '../../test/support/local-cluster.ts';
import { defaultConfig, type KubernetesConfig } from '../config/schema.ts';
import { createKubeClients, type KubeClients } from './clients.ts';
import type { EventInput } from './event-recorder.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const adminCore = admin.makeApiClient(CoreV1Api);
let namespace = '';
const open: KubeClients[] = [];

beforeAll(async () => {
  namespace = await createNamespace(admin, 'kube-clients');
});

afterAll(async () => {
  await Promise.all(open.map((c) => c.close({ timeoutMs: 1000 })));
  await adminCore.deleteNamespace({ name: namespace });
});

function clients(
  component: string,
  kubernetes: Partial<KubernetesConfig> = {},
  identity: 'admin' | 'nobody' = 'admin',
) {
  const c = createKubeClients({
    kubeConfig: cluster.kubeConfig(identity),
    component,
    instance: `${component}-0`,
    kubernetes: { ...defaultConfig().kubernetes, ...kubernetes },
  });
  open.push(c);
  return c;
}

/** A component name no other test or run shares, so audit entries are ours. */
function uniqueComponent(prefix: string): string {
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

function event(name: string): EventInput {
  return {
    regarding: { apiVersion: 'v1', kind: 'ConfigMap', name, namespace },
    type: 'Normal',
    reason: 'Tested',
    action: 'Test',
    note: 'recorded by clients.itest.ts',
  };
}

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('Kubernetes clients split by concern', () => {
  it('the apiserver sees switchyard/<component>/<client> on every request of each client, watches included', async () => {
    const component = uniqueComponent('ua');
    const audit = await auditLogFromNow(cluster.info.auditLog);
    const c = clients(component);
    const writes = c.writes.kubeConfig.makeApiClient(CoreV1Api);
    const informers = c.informers.kubeConfig.makeApiClient(CoreV1Api);

    await writes.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'ua' }, data: { a: '1' } },
    });
    await writes.patchNamespacedConfigMap({ name: 'ua', namespace, body: { data: { a: '2' } } }, mergePatch);
    const list = await informers.listNamespacedConfigMap({ namespace });
    // The watch path the lead's watchers use: client-node's Watch on the informers kubeConfig.
    const { Watch } = await import('@kubernetes/client-node');
    const watched = new Promise<void>((resolve) => {
      void new Watch(c.informers.kubeConfig)
        .watch(
          `/api/v1/namespaces/${namespace}/configmaps`,
          { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true },
          (type) => type === 'MODIFIED' && resolve(),
          () => {},
        )
        .then((abort) => watched.finally(() => abort.abort()));
    });
    // Also the informers client's own factory (raised inactivity timeout).
    const watch2 = await c.informers.newWatch().watch(
      `/api/v1/namespaces/${namespace}/configmaps`,
      { resourceVersion: list.metadata?.resourceVersion },
      () => {},
      () => {},
    );
    await writes.patchNamespacedConfigMap({ name: 'ua', namespace, body: { data: { a: '3' } } }, mergePatch);
    await watched;
    watch2.abort();
    expect(c.events.recorder.record(event('ua'))).toBe(true);
    await c.events.recorder.idle();
    expect(c.events.recorder.counters()).toMatchObject({ emitted: 1, rejected: 0, failed: 0 });

    // By user and namespace only, not by User-Agent: a request sent with the
    // wrong agent must show up in the assertions below, not be filtered out.
    const ours = (events: AuditEvent[]) =>
      events.filter((e) => e.user.username === 'switchyard:admin' && e.objectRef?.namespace === namespace);
    const entries = await audit.waitFor('one entry per request kind of each client', (all) => {
      const found = ours(all);
      const kinds = new Set(found.map((e) => `${e.verb} ${e.objectRef?.resource}`));
      return kinds.size >= 5 && found.filter((e) => e.verb === 'watch').length >= 2 ? found : [];
    });
    const agentsOf = (verb: string, resource: string) =>
      new Set(
        entries.filter((e) => e.verb === verb && e.objectRef?.resource === resource).map((e) => e.userAgent),
      );
    expect(agentsOf('create', 'configmaps')).toEqual(new Set([`switchyard/${component}/writes`]));
    expect(agentsOf('patch', 'configmaps')).toEqual(new Set([`switchyard/${component}/writes`]));
    expect(agentsOf('list', 'configmaps')).toEqual(new Set([`switchyard/${component}/informers`]));
    expect(agentsOf('watch', 'configmaps'), 'a WATCH through new Watch(informers.kubeConfig)').toEqual(
      new Set([`switchyard/${component}/informers`]),
    );
    expect(agentsOf('create', 'events')).toEqual(new Set([`switchyard/${component}/events`]));
  });

  it('an Event lands as events.k8s.io/v1 with a microsecond eventTime and the reporting fields', async () => {
    const component = uniqueComponent('ev');
    const c = clients(component);
    c.events.recorder.record(event('fields'));
    await c.events.recorder.idle();
    const raw = (await admin.makeApiClient(CustomObjectsApi).listNamespacedCustomObject({
      group: 'events.k8s.io',
      version: 'v1',
      namespace,
      plural: 'events',
    })) as { items: Record<string, unknown>[] };
    const mine = raw.items.filter((e) => e.reportingController === `switchyard.dev/${component}`);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      reportingInstance: `${component}-0`,
      regarding: { kind: 'ConfigMap', name: 'fields', namespace },
      reason: 'Tested',
      action: 'Test',
      type: 'Normal',
      note: 'recorded by clients.itest.ts',
    });
    expect(mine[0]?.eventTime).toMatch(/\.\d{6}Z$/);
  });

  it('the writes client with kubernetes.qps > 0 is paced at that rate, as measured by the apiserver', async () => {
    const component = uniqueComponent('qps');
    const audit = await auditLogFromNow(cluster.info.auditLog);
    const qps = 20;
    const burst = 5;
    const n = 45;
    const c = clients(component, { qps, burst });
    const writes = c.writes.kubeConfig.makeApiClient(CoreV1Api);
    await adminCore.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'paced' } } });
    const started = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        writes.patchNamespacedConfigMap(
          { name: 'paced', namespace, body: { data: { [`k${i}`]: String(i) } } },
          mergePatch,
        ),
      ),
    );
    const clientSeconds = (performance.now() - started) / 1000;
    const patches = await audit.waitFor(
      `${n} paced patches`,
      (all) =>
        all.filter(
          (e) =>
            e.verb === 'patch' &&
            e.userAgent === `switchyard/${component}/writes` &&
            e.stage === 'ResponseComplete',
        ),
      n,
    );
    const received = patches.map((e) => Date.parse(e.requestReceivedTimestamp) / 1000).sort((a, b) => a - b);
    const serverSeconds = (received.at(-1) as number) - (received[0] as number);
    // The burst leaves at once, then one request per 1/qps: (n − burst) / qps.
    const expected = (n - burst) / qps;
    expect(clientSeconds).toBeGreaterThanOrEqual(expected * 0.95);
    const rate = (n - burst) / serverSeconds;
    expect(rate, `server-observed rate ${rate.toFixed(1)}/s for a ${qps}/s limit`).toBeGreaterThan(qps * 0.9);
    expect(rate).toBeLessThan(qps * 1.1);
  });

  it('the events client drops and counts beyond its bucket, then beyond its queue, without waiting', async () => {
    const component = uniqueComponent('storm');
    const audit = await auditLogFromNow(cluster.info.auditLog);
    // A bucket that does not refill during the test: exactly `eventBurst` admitted.
    const c = clients(component, { eventQPS: 0.001, eventBurst: 20, eventQueueSize: 5 });
    const recorder = c.events.recorder;
    const started = performance.now();
    const accepted = Array.from({ length: 200 }, (_, i) => recorder.record(event(`storm-${i}`))).filter(
      Boolean,
    );
    expect(performance.now() - started, 'recording 200 Events must not wait').toBeLessThan(200);
    // 20 admitted: 1 goes straight to the sender, 5 fill the queue, 14 find it full.
    expect(accepted).toHaveLength(6);
    expect(recorder.counters()).toMatchObject({
      droppedRateLimited: 180,
      droppedQueueFull: 14,
      dropped: 194,
    });
    await recorder.idle();
    expect(recorder.counters()).toMatchObject({ emitted: 6, rejected: 0, failed: 0 });
    const creates = await audit.waitFor(
      '6 event creates',
      (all) => all.filter((e) => e.verb === 'create' && e.userAgent === `switchyard/${component}/events`),
      6,
    );
    expect(creates).toHaveLength(6);
  });

  it('an Event the apiserver rejects is counted and not retried', async () => {
    const component = uniqueComponent('denied');
    const audit = await auditLogFromNow(cluster.info.auditLog);
    const c = clients(component, {}, 'nobody'); // no RBAC: 403
    c.events.recorder.record(event('denied'));
    // idle() resolves once the sender returned, retries and their backoff included: nothing is sent after it.
    await c.events.recorder.idle();
    expect(c.events.recorder.counters()).toMatchObject({ rejected: 1, retried: 0, emitted: 0 });
    // A marker request on the same client, sent after every attempt ended: once the audit log shows it,
    // it shows every create before it, so counting them needs no sleep (a retry backs off 375–625 ms).
    await c.events.kubeConfig
      .makeApiClient(EventsV1Api)
      .listNamespacedEvent({ namespace })
      .catch(() => undefined);
    const seen = await audit.waitFor('the marker list after the denied create', (all) => {
      const mine = all.filter((e) => e.userAgent === `switchyard/${component}/events`);
      return mine.some((e) => e.verb === 'list') ? mine : [];
    });
    expect(seen.filter((e) => e.verb === 'create').map((e) => e.responseStatus?.code)).toEqual([403]);
  });
});
