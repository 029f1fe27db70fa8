// The data plane as the kube-apiserver uses it. The instances handler renders an instance of two
// replicas; the local node agent runs them as Pods (`switchyard webhook-server`, its serving
// Secret mounted, its ServiceAccount's token, the test's bus); the EndpointSlices it publishes
// are how the apiserver reaches them through the Service. The test points two targets' CRDs at
// that Service, as the handover would: one the instance holds a plan for (a pinned config), one
// it does not (no config).
//
// Asserted through the real apiserver: objects created at either version are read, listed,
// patched and watched at the other, converted; the unheld target fails with the replica's reason;
// deleting a replica's Pod garbage-collects its Lease; a rotated serving certificate is served by
// both replicas without a restart, and conversions go on.
import { X509Certificate } from 'node:crypto';
import { get as httpsGet } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import {
  ApiextensionsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
  Watch,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GROUP,
  servedLeaseName,
  servingCaSecretName,
  servingCertSecretName,
  VERSION,
  webhookServiceName,
} from '../src/api/constants.ts';
import { readCertificate } from '../src/core/instances/certificate-facts.ts';
import { leafValidity, servingDnsNames } from '../src/core/instances/serving-cert.ts';
import { desiredConversion } from '../src/core/target-conversion.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import {
  SHOWCASE_HUB_SPEC,
  SHOWCASE_KIND,
  SHOWCASE_PLURAL,
  SHOWCASE_SPOKE_SPEC,
  showcaseConfigSpec,
  showcaseCrd,
} from '../src/scenario/showcase.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd, gizmoCrd, renameConfigSpec } from './support/crds.ts';
import { optInInstanceNamespace } from './support/identities.ts';
import { startInstancesHandler } from './support/instances-handler.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import {
  createConversionConfig,
  createWebhookServer,
  deleteConversionConfig,
  deleteWebhookServer,
  releaseWebhookServer,
} from './support/records.ts';
import { startRecordingAndRouting } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const leases = admin.makeApiClient(CoordinationV1Api);
const discovery = admin.makeApiClient(DiscoveryV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'conversion-itest' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const PARTITIONS = 4;
const run = Date.now().toString(36);
const INSTANCE = `cv-${run}`;
const SERVICE = webhookServiceName(INSTANCE);
const TARGET = `gizmos.cv${run}.dataplane.switchyard.dev`;
const UNHELD = `gizmos.cvu${run}.dataplane.switchyard.dev`;
const CONFIG = `cv-${run}`;
const SHOWCASE = `${SHOWCASE_PLURAL}.cvs${run}.dataplane.switchyard.dev`;
const SHOWCASE_CONFIG = `cvs-${run}`;
const stoppers: Array<() => Promise<unknown>> = [];
let bus: OwnBus;
let namespace = '';

const instanceApi = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
const gizmos = (target: string, version: 'v1' | 'v2') => ({
  group: target.split('.').slice(1).join('.'),
  version,
  namespace,
  plural: 'gizmos',
});

interface Gizmo {
  apiVersion: string;
  metadata: { name: string; resourceVersion?: string };
  spec: { size?: number; replicas?: number };
}

function notFound(err: unknown): undefined {
  if ((err as { code?: number }).code === 404) return undefined;
  throw err;
}

/** The instance's replicas, as the Deployment's selector finds them. */
async function replicaPods() {
  const pods = await core.listNamespacedPod({
    namespace,
    labelSelector: `app.kubernetes.io/instance=${INSTANCE}`,
  });
  return pods.items.filter((p) => !p.metadata?.deletionTimestamp);
}

async function twoReadyReplicas() {
  return waitFor(
    'two ready replicas',
    async () => {
      const pods = await replicaPods();
      const ready = pods.filter((p) =>
        p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready.length === 2 ? ready : undefined;
    },
    { timeoutMs: 90_000 },
  );
}

/**
 * The loopback ports the apiserver dials for the Service once both replicas are behind it (the
 * node agent publishes a Pod's endpoint a moment after its Ready condition).
 */
function bothReplicaPorts(): Promise<number[]> {
  return waitFor('both replicas behind the Service', async () => {
    const ports = await servicePorts();
    return ports.length === 2 ? ports : undefined;
  });
}

/** The loopback ports the apiserver dials for the Service: one per ready replica. */
async function servicePorts(): Promise<number[]> {
  const slices = await discovery.listNamespacedEndpointSlice({
    namespace,
    labelSelector: `kubernetes.io/service-name=${SERVICE}`,
  });
  return slices.items.flatMap((s) =>
    (s.endpoints ?? []).some((e) => e.conditions?.ready) ? (s.ports ?? []).map((p) => p.port ?? 0) : [],
  );
}

/** The fingerprint of the certificate the replica behind `port` presents now. */
function presentedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      { host: '127.0.0.1', port, servername: `${SERVICE}.${namespace}.svc`, rejectUnauthorized: false },
      () => {
        const fingerprint = socket.getPeerCertificate().fingerprint256;
        socket.end();
        resolve(fingerprint);
      },
    );
    socket.once('error', reject);
  });
}

/** Successful ConversionReviews for TARGET, as the replica behind `port` counts them. */
async function successfulReviews(port: number): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = httpsGet({ host: '127.0.0.1', port, path: '/metrics', rejectUnauthorized: false }, (res) => {
      let body = '';
      res.on('data', (chunk) => {
        body += chunk;
      });
      res.on('end', () => resolve(body));
    });
    req.once('error', reject);
  });
  return text
    .split('\n')
    .filter(
      (l) => l.startsWith('switchyard_webhook_conversion_reviews_total{') && l.includes(`target="${TARGET}"`),
    )
    .filter((l) => l.includes('result="success"'))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

const secretText = (data: Record<string, string> | undefined, key: string) =>
  Buffer.from(data?.[key] ?? '', 'base64').toString('utf8');

/** What the handover would write: the target's conversions go to the instance's Service. */
async function pointAtInstance(target: string): Promise<void> {
  const serving = await core.readNamespacedSecret({ name: servingCertSecretName(INSTANCE), namespace });
  const conversion = desiredConversion({
    target,
    instance: INSTANCE,
    namespace,
    caBundle: serving.data?.['ca.crt'] ?? '',
    conversionReviewVersions: ['v1'],
  });
  await crdApi.patchCustomResourceDefinition({ name: target, body: { spec: { conversion } } }, mergePatch);
}

async function createGizmo(target: string, version: 'v1' | 'v2', name: string, spec: Gizmo['spec']) {
  const api = gizmos(target, version);
  await custom.createNamespacedCustomObject({
    ...api,
    body: { apiVersion: `${api.group}/${version}`, kind: 'Gizmo', metadata: { name }, spec },
  });
}

async function getGizmo(target: string, version: 'v1' | 'v2', name: string): Promise<Gizmo> {
  return (await custom.getNamespacedCustomObject({ ...gizmos(target, version), name })) as Gizmo;
}

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'conversion');
  await optInInstanceNamespace(admin, namespace);
  for (const target of [TARGET, UNHELD]) await ensureCrd(admin, gizmoCrd(target));
  await ensureCrd(admin, showcaseCrd(SHOWCASE) as V1CustomResourceDefinition);
  stoppers.push(await startRecordingAndRouting(bus, { kubeConfig: admin, log, partitions: PARTITIONS }));
  stoppers.push(
    await startInstancesHandler(cluster.info, admin, bus, {
      partitions: PARTITIONS,
      log,
      replicaEnv: { SWITCHYARD_NATS_URL: bus.server.url, SWITCHYARD_LOG_LEVEL: 'info' },
    }),
  );
  await createConversionConfig(admin, CONFIG, renameConfigSpec(TARGET, { pin: INSTANCE }));
  await createConversionConfig(admin, SHOWCASE_CONFIG, showcaseConfigSpec(SHOWCASE, INSTANCE));
  await createWebhookServer(admin, INSTANCE, { namespace, replicas: 2 });
}, 120_000);

afterAll(async () => {
  for (const target of [TARGET, UNHELD, SHOWCASE])
    await crdApi.deleteCustomResourceDefinition({ name: target }).catch(notFound);
  await deleteConversionConfig(admin, CONFIG);
  await deleteConversionConfig(admin, SHOWCASE_CONFIG);
  await deleteWebhookServer(admin, INSTANCE);
  await waitFor(
    'the instance to be gone',
    async () =>
      (await custom.getClusterCustomObject({ ...instanceApi, name: INSTANCE }).catch(notFound)) === undefined
        ? true
        : undefined,
    { timeoutMs: 30_000 },
  ).catch(() => undefined);
  for (const stop of stoppers.reverse()) await stop();
  await releaseWebhookServer(admin, INSTANCE);
  if (namespace) await core.deleteNamespace({ name: namespace }).catch(notFound);
  await bus?.stop();
}, 60_000);

describe('conversions through the kube-apiserver, served by an instance of two replicas', () => {
  it('starts both replicas from the rendered Deployment, each reporting what it serves in its Lease', {
    timeout: 120_000,
  }, async () => {
    const pods = await twoReadyReplicas();
    for (const pod of pods) {
      const name = pod.metadata?.name ?? '';
      const lease = await waitFor(`the Lease of ${name}`, () =>
        leases.readNamespacedLease({ name: servedLeaseName(name), namespace }).catch(notFound),
      );
      expect(lease.spec?.holderIdentity).toBe(name);
      expect(lease.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Pod', uid: pod.metadata?.uid });
    }
    expect(await bothReplicaPorts()).toHaveLength(2);
    await pointAtInstance(TARGET);
    await pointAtInstance(UNHELD);
  });

  it('converts objects created at either version when they are read at the other', {
    timeout: 60_000,
  }, async () => {
    // The CRD's conversion takes effect in the apiserver shortly after the patch.
    await waitFor(
      'a create at v1 to be converted to storage',
      async () =>
        createGizmo(TARGET, 'v1', 'b', { replicas: 4 })
          .then(() => true)
          .catch(() => undefined),
      { timeoutMs: 30_000 },
    );
    await createGizmo(TARGET, 'v2', 'a', { size: 3 });
    const a = await getGizmo(TARGET, 'v1', 'a');
    expect(a.apiVersion).toBe(`${gizmos(TARGET, 'v1').group}/v1`);
    expect(a.spec).toEqual({ replicas: 3 });
    const b = await getGizmo(TARGET, 'v2', 'b');
    expect(b.apiVersion).toBe(`${gizmos(TARGET, 'v2').group}/v2`);
    expect(b.spec).toEqual({ size: 4 });
  });

  it('converts a target whose versions differ in six ways, one reference strategy each', {
    timeout: 60_000,
  }, async () => {
    await pointAtInstance(SHOWCASE);
    const group = SHOWCASE.split('.').slice(1).join('.');
    const at = (version: string) => ({ group, version, namespace, plural: SHOWCASE_PLURAL });
    const body = {
      apiVersion: `${group}/v2`,
      kind: SHOWCASE_KIND,
      metadata: { name: 's' },
      spec: SHOWCASE_SPOKE_SPEC,
    };
    await waitFor(
      'a create at v2 to be converted to storage',
      async () =>
        custom
          .createNamespacedCustomObject({ ...at('v2'), body })
          .then(() => true)
          .catch(() => undefined),
      { timeoutMs: 30_000 },
    );
    const stored = (await custom.getNamespacedCustomObject({ ...at('v1'), name: 's' })) as { spec: unknown };
    expect(stored.spec).toEqual(SHOWCASE_HUB_SPEC);
    const served = (await custom.getNamespacedCustomObject({ ...at('v2'), name: 's' })) as { spec: unknown };
    expect(served.spec).toEqual(SHOWCASE_SPOKE_SPEC);
  });

  it('lists and patches at the non-storage version', { timeout: 30_000 }, async () => {
    const list = (await custom.listNamespacedCustomObject(gizmos(TARGET, 'v1'))) as { items: Gizmo[] };
    expect(list.items.map((g) => [g.metadata.name, g.spec])).toEqual([
      ['a', { replicas: 3 }],
      ['b', { replicas: 4 }],
    ]);
    await custom.patchNamespacedCustomObject(
      { ...gizmos(TARGET, 'v1'), name: 'a', body: { spec: { replicas: 7 } } },
      mergePatch,
    );
    expect((await getGizmo(TARGET, 'v2', 'a')).spec).toEqual({ size: 7 });
    expect((await getGizmo(TARGET, 'v1', 'a')).spec).toEqual({ replicas: 7 });
  });

  it('spreads the reviews over both replicas behind the Service', { timeout: 30_000 }, async () => {
    for (let i = 0; i < 20; i++) await getGizmo(TARGET, 'v1', 'a');
    const ports = await bothReplicaPorts();
    for (const port of ports) expect(await successfulReviews(port)).toBeGreaterThan(0);
  });

  it('delivers watch events at the version watched', { timeout: 30_000 }, async () => {
    const { group } = gizmos(TARGET, 'v1');
    const seen: Gizmo[] = [];
    const request = await new Watch(admin).watch(
      `/apis/${group}/v1/namespaces/${namespace}/gizmos`,
      { fieldSelector: 'metadata.name=b' },
      (type, object: Gizmo) => {
        if (type === 'MODIFIED') seen.push(object);
      },
      () => undefined,
    );
    try {
      // The watch is open once its initial ADDED arrived; a patch before that could be missed.
      await new Promise((done) => setTimeout(done, 500));
      await custom.patchNamespacedCustomObject(
        { ...gizmos(TARGET, 'v2'), name: 'b', body: { spec: { size: 9 } } },
        mergePatch,
      );
      const event = await waitFor('the MODIFIED event at v1', async () => seen[0]);
      expect(event.apiVersion).toBe(`${group}/v1`);
      expect(event.spec).toEqual({ replicas: 9 });
    } finally {
      request.abort();
    }
  });

  it('fails a read of a target the replicas hold no plan for, with their reason', {
    timeout: 30_000,
  }, async () => {
    await createGizmo(UNHELD, 'v2', 'x', { size: 1 });
    const failure = await getGizmo(UNHELD, 'v1', 'x').then(
      () => undefined,
      (err: { code?: number; body?: string }) => err,
    );
    expect(failure?.code).toBe(500);
    expect(failure?.body).toContain(`this replica holds no conversion plan for ${UNHELD}`);
    // The object itself is intact at its stored version.
    expect((await getGizmo(UNHELD, 'v2', 'x')).spec).toEqual({ size: 1 });
  });

  it('serves a rotated certificate from both replicas without a restart', { timeout: 90_000 }, async () => {
    const before = await twoReadyReplicas();
    const ports = await bothReplicaPorts();
    const caSecret = await core.readNamespacedSecret({ name: servingCaSecretName(INSTANCE), namespace });
    const ca = {
      certPem: secretText(caSecret.data, 'tls.crt'),
      keyPem: secretText(caSecret.data, 'tls.key'),
    };
    const caFacts = readCertificate(ca.certPem);
    if (caFacts === undefined) throw new Error('the instance CA Secret holds no certificate');
    // A new leaf from the instance's own CA, as the instances handler issues one at renewal.
    const rotated = await x509Issuer().issueServing({
      ca,
      dnsNames: servingDnsNames(SERVICE, namespace),
      ...leafValidity(caFacts, Date.now()),
    });
    await core.patchNamespacedSecret(
      {
        name: servingCertSecretName(INSTANCE),
        namespace,
        body: {
          data: {
            'tls.crt': Buffer.from(rotated.certPem).toString('base64'),
            'tls.key': Buffer.from(rotated.keyPem).toString('base64'),
          },
        },
      },
      mergePatch,
    );
    const expected = new X509Certificate(rotated.certPem).fingerprint256;
    for (const port of ports)
      await waitFor(
        `the replica on ${port} to present the rotated certificate`,
        async () => ((await presentedFingerprint(port)) === expected ? true : undefined),
        { timeoutMs: 60_000 },
      );
    expect((await getGizmo(TARGET, 'v1', 'a')).spec).toEqual({ replicas: 7 });
    const after = await replicaPods();
    expect(after.map((p) => p.metadata?.uid).sort()).toEqual(before.map((p) => p.metadata?.uid).sort());
    for (const pod of after) expect(pod.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  });

  it('garbage-collects the Lease of a deleted replica Pod', { timeout: 90_000 }, async () => {
    const [victim] = await twoReadyReplicas();
    const name = victim?.metadata?.name ?? '';
    await leases.readNamespacedLease({ name: servedLeaseName(name), namespace });
    await core.deleteNamespacedPod({ name, namespace });
    await waitFor(
      `the Lease of ${name} to be collected`,
      async () =>
        (await leases.readNamespacedLease({ name: servedLeaseName(name), namespace }).catch(notFound)) ===
        undefined
          ? true
          : undefined,
      { timeoutMs: 60_000 },
    );
    // The Deployment's replacement serves, and reads at v1 go on.
    await twoReadyReplicas();
    expect((await getGizmo(TARGET, 'v1', 'b')).spec).toEqual({ replicas: 9 });
  });
});
