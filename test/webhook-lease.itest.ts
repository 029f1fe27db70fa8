// A webhook-server replica's served-set Lease (src/webhook/lease-publisher.ts) against the real
// apiserver, written as the replica: a ServiceAccount token bound to a real Pod object, under the
// Role the instances handler renders for the instance's replicas and nothing else. The local
// cluster runs kube-controller-manager's garbage collector, so owner references are real; it has
// no kubelet for these Pods (they are bound to a node that does not exist, so the local node
// agent leaves them alone), which is all a Lease owner needs.
import { CoordinationV1Api, CoreV1Api, type KubeConfig, type V1ObjectMeta } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVED_SET_ANNOTATION,
  servedLeaseName,
  WEBHOOK_SERVER_LABEL,
} from '../src/api/constants.ts';
import { KINDS } from '../src/api/resources.ts';
import { defaultConfig } from '../src/config/schema.ts';
import type { ServiceAccountRef } from '../src/core/instances/render.ts';
import { decodeServedSet, type ExpectedSet, expectedSetOf } from '../src/core/served-set-codec.ts';
import { createKubeClients, type KubeClients } from '../src/kube/clients.ts';
import { isNotFound, statusOf } from '../src/kube/errors.ts';
import { apiUrl, HttpMethod, send, sendForJson } from '../src/kube/request.ts';
import { objectPath } from '../src/kube/writer.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { systemClock } from '../src/runtime/clock.ts';
import { leaseContentDigest } from '../src/watchers/resources.ts';
import {
  LeasePublisher,
  leaseWriterFor,
  type PodRef,
  type ServedLease,
  WEBHOOK_SERVER_FIELD_MANAGER,
} from '../src/webhook/lease-publisher.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { grantLeaseWriter, podIdentity, serviceAccountUser } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { createWebhookServer, deleteWebhookServer } from './support/records.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'webhook-lease-itest' });
const suffix = Math.random().toString(36).slice(2, 7);
const instance = `wl-${suffix}`;
/** No Node of this name exists: the local node agent runs only Pods bound to its own node. */
const NO_KUBELET_NODE = 'webhook-lease-itest-no-kubelet';
const RENEW_EVERY_MS = 1_000;

let namespace = '';
let otherNamespace = '';
let account: ServiceAccountRef;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const replicas: Replica[] = [];

interface Replica {
  pod: PodRef;
  kubeConfig: KubeConfig;
  clients: KubeClients;
  publisher: LeasePublisher;
}

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'webhook-lease');
  otherNamespace = await createNamespace(admin, 'webhook-lease-other');
  await createWebhookServer(admin, instance, { namespace });
  account = await grantLeaseWriter(admin, instance);
  audit = await auditLogFromNow(cluster.info.auditLog);
});

afterAll(async () => {
  for (const r of replicas) {
    await r.publisher.stop();
    await r.clients.close();
  }
  // Bound to a node without a kubelet, a Pod would never finish a graceful deletion and would
  // hold its namespace in Terminating.
  if (namespace) {
    const pods = await core.listNamespacedPod({ namespace });
    for (const p of pods.items)
      await core
        .deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '', gracePeriodSeconds: 0 })
        .catch(() => undefined);
  }
  await deleteWebhookServer(admin, instance);
  for (const ns of [namespace, otherNamespace])
    if (ns) await core.deleteNamespace({ name: ns }).catch(() => undefined);
});

/** A Pod object running as the instance's ServiceAccount, and a publisher writing with a token bound to it. */
async function replica(name: string): Promise<Replica> {
  const created = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: `${instance}-${name}` },
      spec: {
        nodeName: NO_KUBELET_NODE,
        serviceAccountName: account.name,
        automountServiceAccountToken: false,
        containers: [{ name: 'webhook-server', image: 'switchyard:dev' }],
      },
    },
  });
  const pod = { name: created.metadata?.name ?? '', uid: created.metadata?.uid ?? '' };
  const kubeConfig = await podIdentity(cluster.info, admin, account, pod);
  const clients = createKubeClients({
    kubeConfig,
    component: 'webhook-server',
    kubernetes: defaultConfig().kubernetes,
  });
  const publisher = new LeasePublisher({
    writer: leaseWriterFor(clients.writes),
    namespace,
    instance,
    pod,
    log,
    renewEveryMs: RENEW_EVERY_MS,
    leaseDurationSeconds: 5,
  });
  const r = { pod, kubeConfig, clients, publisher };
  replicas.push(r);
  return r;
}

/** The Lease as stored, as plain JSON (renewTime exactly as the apiserver returns it). */
type StoredLease = ServedLease & { metadata: V1ObjectMeta };
function readLease(name: string, ns = namespace): Promise<StoredLease> {
  return sendForJson<StoredLease>(
    admin,
    HttpMethod.GET,
    apiUrl(admin, objectPath(KINDS.lease, { namespace: ns, name })),
  );
}

function servedOf(lease: StoredLease, expected: ExpectedSet): string[] | string {
  const d = decodeServedSet(lease.metadata.annotations?.[SERVED_SET_ANNOTATION] ?? '', expected);
  if (d.kind !== 'set') return `${d.kind}`;
  if (d.unsettled.size > 0) return `unsettled: ${[...d.unsettled].join(',')}`;
  return [...d.served].sort();
}

async function published(r: Replica): Promise<void> {
  expect(await r.publisher.whenPublished(AbortSignal.timeout(30_000)), 'the set reached the Lease').toBe(
    true,
  );
}

/** Every request of one replica's identity on its own Lease, as the apiserver's audit log saw it. */
const leaseWritesOf = (r: Replica) => (events: AuditEvent[]) =>
  events.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.user.username === serviceAccountUser(account) &&
      e.objectRef?.resource === 'leases' &&
      e.objectRef.name === servedLeaseName(r.pod.name) &&
      e.verb !== 'get',
  );

/** An audit timestamp (six fractional digits) in microseconds. */
function micros(t: string): number {
  const fraction = /\.(\d{6})Z$/.exec(t)?.[1] ?? '000000';
  return Date.parse(`${t.slice(0, t.indexOf('.'))}Z`) * 1000 + Number(fraction);
}

/**
 * No two writes of the Lease were in the apiserver at the same time: each was received after the
 * previous one's response. The apiserver stamps ResponseComplete just after sending, so a client
 * that answers at once may be seen a few microseconds early; two writes really in flight together
 * overlap by a whole write (milliseconds).
 */
function expectSerialWrites(events: AuditEvent[]): void {
  const spans = events
    .map((e) => [micros(e.requestReceivedTimestamp), micros(e.stageTimestamp)] as const)
    .sort((a, b) => a[0] - b[0]);
  expect(spans.length, 'the checker needs writes to check').toBeGreaterThanOrEqual(2);
  for (let i = 1; i < spans.length; i++) {
    const [start] = spans[i] as readonly [number, number];
    const [, previousEnd] = spans[i - 1] as readonly [number, number];
    expect(
      start,
      `write ${i} began before write ${i - 1} was answered: two writes of one Lease in flight`,
    ).toBeGreaterThanOrEqual(previousEnd - 500);
  }
}

/** Server-side applies (the publish) carry `force`; the renewal's merge patch does not. */
const isApply = (e: AuditEvent) => e.requestURI.includes('force=');
const succeeded = (e: AuditEvent) => (e.responseStatus?.code ?? 0) < 300;

const sleep = (ms: number) => systemClock.sleep(ms);

describe('a webhook-server replica’s served-set Lease', () => {
  it('is created by the replica with its name, labels, Pod owner, holder, duration, a MicroTime renewTime, and a set that decodes back exactly', async () => {
    const r = await replica('a');
    const expected = expectedSetOf(['a.x.io', 'b.x.io', 'c.x.io']);
    const before = Date.now();
    r.publisher.publish(['a.x.io', 'b.x.io'], expected);
    await published(r);

    expect(r.publisher.name).toBe(`switchyard-served-${r.pod.name}`);
    const lease = await readLease(servedLeaseName(r.pod.name));
    expect(lease.metadata.labels).toMatchObject({
      [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
      [WEBHOOK_SERVER_LABEL]: instance,
    });
    expect(lease.metadata.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: r.pod.name, uid: r.pod.uid },
    ]);
    expect(lease.spec.holderIdentity).toBe(r.pod.name);
    expect(lease.spec.leaseDurationSeconds).toBe(5);
    expect(lease.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(Date.parse(lease.spec.renewTime)).toBeGreaterThanOrEqual(before - 1_000);
    expect(Date.parse(lease.spec.renewTime)).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(servedOf(lease, expected)).toEqual(['a.x.io', 'b.x.io']);
    expect(
      lease.metadata.managedFields?.map((f) => f.manager),
      'written under the webhook-server’s field manager',
    ).toContain(WEBHOOK_SERVER_FIELD_MANAGER);

    // Thousands of targets: the digest form, decoded against the reader's own expected set.
    const names = Array.from({ length: 3_000 }, (_, i) => `t${i}.many.x.io`);
    const big = expectedSetOf(names);
    const served = [...names.slice(2), 'extra.many.x.io'];
    r.publisher.publish(served, big);
    await published(r);
    const bigLease = await readLease(servedLeaseName(r.pod.name));
    const value = bigLease.metadata.annotations?.[SERVED_SET_ANNOTATION] ?? '';
    expect(value.startsWith('v2.e.'), 'digest form, not 3,000 names').toBe(true);
    expect(servedOf(bigLease, big)).toEqual([...served].sort());
    expect(r.publisher.stats()).toMatchObject({
      lastEncodedBytes: Buffer.byteLength(value),
      servedCount: served.length,
      truncated: false,
    });

    // Everything the replica sent went to its own Lease, as itself, on the writes client.
    const writes = await audit.waitFor('the replica’s Lease writes', leaseWritesOf(r), 2);
    for (const e of writes) {
      expect(e.objectRef?.namespace).toBe(namespace);
      expect(['create', 'update', 'patch']).toContain(e.verb);
      expect(e.userAgent).toBe('switchyard/webhook-server/writes');
    }
  });

  it('republishes a change at once; a heartbeat moves renewTime and changes nothing else; nothing else is written', async () => {
    const r = await replica('b');
    const expected = expectedSetOf(['a.x.io', 'b.x.io', 'c.x.io']);
    r.publisher.publish(['a.x.io'], expected);
    await published(r);

    const changedAt = Date.now();
    r.publisher.publish(['a.x.io', 'c.x.io'], expected);
    await waitFor(
      'the change on the Lease',
      async () => {
        const lease = await readLease(servedLeaseName(r.pod.name));
        return servedOf(lease, expected).toString() === 'a.x.io,c.x.io' ? true : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 25 },
    );
    const latencyMs = Date.now() - changedAt;
    expect(latencyMs, 'a change must not wait for the next heartbeat').toBeLessThan(RENEW_EVERY_MS);

    const first = await readLease(servedLeaseName(r.pod.name));
    const stats = r.publisher.stats();
    await sleep(3.5 * RENEW_EVERY_MS);
    const later = await readLease(servedLeaseName(r.pod.name));
    const window = r.publisher.stats();

    expect(
      window.renewals - stats.renewals,
      'the checker must see heartbeats to prove anything',
    ).toBeGreaterThanOrEqual(2);
    expect(window.publishes, 'an unchanged set is never republished').toBe(stats.publishes);
    expect(Date.parse(later.spec.renewTime)).toBeGreaterThan(Date.parse(first.spec.renewTime));
    expect(later.metadata.annotations?.[SERVED_SET_ANNOTATION]).toBe(
      first.metadata.annotations?.[SERVED_SET_ANNOTATION],
    );
    expect(
      leaseContentDigest(later),
      'the watchers must see a pure liveness refresh (HEARTBEATS, no work)',
    ).toBe(leaseContentDigest(first));

    // Withdrawn (no write left in flight), the apiserver saw exactly the writes the publisher
    // counted: an apply per publish, a renewTime patch per heartbeat, nothing else.
    expect(await r.publisher.withdraw()).toBe(true);
    const done = r.publisher.stats();
    const writes = await audit.waitFor(
      'every write of the replica',
      leaseWritesOf(r),
      done.publishes + done.renewals + done.failures,
    );
    await sleep(500);
    const all = leaseWritesOf(r)(await audit.all());
    expect(all.length).toBe(writes.length);
    expect(all.filter((e) => succeeded(e) && isApply(e)).length).toBe(done.publishes);
    expect(all.filter((e) => succeeded(e) && !isApply(e)).length).toBe(done.renewals);
    expect(all.filter((e) => !succeeded(e)).length).toBe(done.failures);
    expect(all.every((e) => e.verb === 'patch')).toBe(true);
    expectSerialWrites(all);
  });

  it('coalesces a burst of changes into few writes of the latest set, never two writes of the Lease at once', async () => {
    const r = await replica('c');
    const names = Array.from({ length: 40 }, (_, i) => `n${i}.x.io`);
    const expected = expectedSetOf(names);
    r.publisher.publish(names, expected);
    await published(r);

    // Given at once: one write.
    const before = r.publisher.stats().publishes;
    for (let i = 1; i <= 10; i++) r.publisher.publish(names.slice(i), expected);
    await published(r);
    expect(r.publisher.stats().publishes - before).toBe(1);
    expect(servedOf(await readLease(servedLeaseName(r.pod.name)), expected)).toEqual(names.slice(10).sort());

    // Given while writes are in flight: the latest lands, the rest are coalesced.
    const spread = r.publisher.stats().publishes;
    for (let i = 11; i <= 30; i++) {
      r.publisher.publish(names.slice(i), expected);
      await sleep(3);
    }
    await published(r);
    expect(servedOf(await readLease(servedLeaseName(r.pod.name)), expected)).toEqual(names.slice(30).sort());
    expect(r.publisher.stats().publishes - spread).toBeLessThanOrEqual(20);
    expectSerialWrites(
      await audit.waitFor('the burst’s writes', leaseWritesOf(r), r.publisher.stats().publishes),
    );
  });

  it('re-creates its Lease when someone deletes it, and restores it when someone overwrites it', async () => {
    const r = await replica('d');
    const expected = expectedSetOf(['a.x.io', 'b.x.io']);
    r.publisher.publish(['b.x.io'], expected);
    await published(r);
    const name = servedLeaseName(r.pod.name);
    const original = await readLease(name);

    await admin.makeApiClient(CoordinationV1Api).deleteNamespacedLease({ name, namespace });
    const recreated = await waitFor(
      'the Lease re-created by the replica',
      () => readLease(name).catch((err) => (isNotFound(err) ? undefined : Promise.reject(err))),
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(recreated.metadata.uid, 'a new object').not.toBe(original.metadata.uid);
    expect(servedOf(recreated, expected)).toEqual(['b.x.io']);
    expect(recreated.metadata.ownerReferences?.[0]?.uid).toBe(r.pod.uid);

    await sendForJson(admin, HttpMethod.PATCH, apiUrl(admin, objectPath(KINDS.lease, { namespace, name })), {
      body: {
        metadata: { annotations: { [SERVED_SET_ANNOTATION]: 'v2.n.forged' } },
        spec: { holderIdentity: 'intruder' },
      },
      contentType: 'application/merge-patch+json',
    });
    const restored = await waitFor(
      'the overwritten Lease restored',
      async () => {
        const lease = await readLease(name);
        return lease.spec.holderIdentity === r.pod.name ? lease : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(servedOf(restored, expected)).toEqual(['b.x.io']);
    expect(
      r.publisher.stats().failures,
      'a 404 and a 409 on renewal, each cured by an apply',
    ).toBeGreaterThanOrEqual(2);
  });

  it('withdraw publishes the empty set and stops renewing (no delete needed); deleting the Pod garbage-collects the Lease', async () => {
    const r = await replica('e');
    const expected = expectedSetOf(['a.x.io', 'b.x.io']);
    r.publisher.publish(['a.x.io', 'b.x.io'], expected);
    await published(r);
    const name = servedLeaseName(r.pod.name);

    expect(await r.publisher.withdraw()).toBe(true);
    const withdrawn = await readLease(name);
    expect(servedOf(withdrawn, expected)).toEqual([]);
    await sleep(2.5 * RENEW_EVERY_MS);
    const later = await readLease(name);
    expect(later.spec.renewTime, 'no renewal after withdrawal').toBe(withdrawn.spec.renewTime);
    expect(later.metadata.resourceVersion, 'no write at all after withdrawal').toBe(
      withdrawn.metadata.resourceVersion,
    );
    expect(leaseWritesOf(r)(await audit.all()).some((e) => e.verb === 'delete')).toBe(false);

    await core.deleteNamespacedPod({ namespace, name: r.pod.name, gracePeriodSeconds: 0 });
    await waitFor(
      'the garbage collector to delete the Lease with its Pod',
      () =>
        readLease(name).then(
          () => undefined,
          (err) => (isNotFound(err) ? true : Promise.reject(err)),
        ),
      { timeoutMs: 60_000, intervalMs: 200 },
    );
  });

  it('runs with least privilege: the replica may not list or watch Leases, write one elsewhere, delete its own, or create a ConfigMap', async () => {
    const r = await replica('f');
    r.publisher.publish(['a.x.io'], expectedSetOf(['a.x.io']));
    await published(r);
    const kc = r.kubeConfig;
    const own = servedLeaseName(r.pod.name);
    const foreign = 'someone-elses-lease';
    await admin.makeApiClient(CoordinationV1Api).createNamespacedLease({
      namespace: otherNamespace,
      body: { metadata: { name: foreign }, spec: { holderIdentity: 'someone' } },
    });
    const leaseUrl = (ns: string, name?: string) =>
      apiUrl(kc, `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases${name ? `/${name}` : ''}`);
    const statusOfRequest = async (method: HttpMethod, url: URL, body?: unknown, contentType?: string) => {
      const res = await send(kc, method, url, {
        ...(body !== undefined && { body, contentType: contentType ?? 'application/json' }),
      });
      await res.body?.cancel();
      return res.status;
    };
    const leaseBody = (ns: string, name: string) => ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace: ns },
      spec: { holderIdentity: r.pod.name },
    });

    // The control: the same token reads and writes its own Lease (a broken token would be 401).
    expect(await statusOfRequest(HttpMethod.GET, leaseUrl(namespace, own))).toBe(200);

    const denied: Record<string, number> = {
      'list leases in its namespace': await statusOfRequest(HttpMethod.GET, leaseUrl(namespace)),
      'list leases cluster-wide': await statusOfRequest(
        HttpMethod.GET,
        apiUrl(kc, '/apis/coordination.k8s.io/v1/leases'),
      ),
      'watch leases in its namespace': await statusOfRequest(
        HttpMethod.GET,
        new URL(`${leaseUrl(namespace).toString()}?watch=true`),
      ),
      'delete its own Lease': await statusOfRequest(HttpMethod.DELETE, leaseUrl(namespace, own)),
      'create a Lease in another namespace': await statusOfRequest(
        HttpMethod.POST,
        leaseUrl(otherNamespace),
        leaseBody(otherNamespace, 'planted'),
      ),
      'apply a Lease in another namespace': await statusOfRequest(
        HttpMethod.PATCH,
        new URL(`${leaseUrl(otherNamespace, 'planted').toString()}?fieldManager=x`),
        leaseBody(otherNamespace, 'planted'),
        'application/apply-patch+yaml',
      ),
      'update a Lease in another namespace': await statusOfRequest(
        HttpMethod.PUT,
        leaseUrl(otherNamespace, foreign),
        leaseBody(otherNamespace, foreign),
      ),
      'patch a Lease in another namespace': await statusOfRequest(
        HttpMethod.PATCH,
        leaseUrl(otherNamespace, foreign),
        { spec: { holderIdentity: r.pod.name } },
        'application/merge-patch+json',
      ),
      'delete a Lease in another namespace': await statusOfRequest(
        HttpMethod.DELETE,
        leaseUrl(otherNamespace, foreign),
      ),
      'create a ConfigMap in its namespace': await statusOfRequest(
        HttpMethod.POST,
        apiUrl(kc, `/api/v1/namespaces/${namespace}/configmaps`),
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'planted' }, data: { a: 'b' } },
      ),
    };
    expect(denied).toEqual(Object.fromEntries(Object.keys(denied).map((k) => [k, 403])));

    // The typed client says the same (the error every caller classifies).
    const typed = kc.makeApiClient(CoordinationV1Api);
    const failure = await typed.listNamespacedLease({ namespace }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(statusOf(failure)).toBe(403);

    // Nothing was planted, and its own Lease is still there.
    const foreignAfter = await readLease(foreign, otherNamespace);
    expect(foreignAfter.spec.holderIdentity).toBe('someone');
    await expect(readLease('planted', otherNamespace)).rejects.toMatchObject({ statusCode: 404 });
    expect((await readLease(own)).metadata.name).toBe(own);
  });
});
