// A webhook-server replica as a process, the way a Pod runs it: `switchyard webhook-server
// --instance --port --tls-dir`, POD_NAME / POD_NAMESPACE / POD_UID from the downward API, a
// ServiceAccount token bound to its Pod under the Role the instances handler renders. It learns
// configs, instances and targets from the bus (a `switchyard watch` process records them), so
// nothing here hands it a plan. Asserted: /readyz only after the sync; a ConversionReview for
// the target it holds comes back converted, one for a target it does not hold fails closed
// with the reason; its Lease reports exactly what it serves and follows configs that come and
// go; a rotated certificate is served without a restart; when a target's schema drifts so its
// config no longer compiles, a FailClosed config's plan is dropped (reviews refused, naming the
// config and the policy; the Lease no longer reports it) while a KeepServingStale one keeps
// serving its last good plan; on SIGTERM the Lease is withdrawn (an empty set) before the
// process exits.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { ApiextensionsV1Api, CoordinationV1Api, CoreV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Agent, fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVED_SET_ANNOTATION, servedLeaseName } from '../src/api/constants.ts';
import { decodeServedSet, expectedSetOf } from '../src/core/served-set-codec.ts';
import { freePort } from '../src/local-cluster/free-port.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
} from '../src/local-cluster/pki.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd, gizmoCrd, renameConfigSpec } from './support/crds.ts';
import { grantLeaseWriter, podIdentity } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';
import {
  createConversionConfig,
  createWebhookServer,
  deleteConversionConfig,
  deleteWebhookServer,
} from './support/records.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const leases = admin.makeApiClient(CoordinationV1Api);
const log = pino({ level: 'warn' });
const suffix = Math.random().toString(36).slice(2, 7);
const INSTANCE = `ws-${suffix}`;
const TARGET = `gizmos.ws${suffix}.bench.switchyard.dev`;
const OTHER = `gizmos.wso${suffix}.bench.switchyard.dev`;
const FAIL_CLOSED = `gizmos.wsf${suffix}.bench.switchyard.dev`;
const GROUP_OF_TARGET = TARGET.split('.').slice(1).join('.');
const DRAIN_SECONDS = 3;
/** No Node of this name exists: the local node agent leaves the Pod object alone. */
const NO_KUBELET_NODE = 'webhook-server-itest-no-kubelet';

let bus: OwnBus;
let dir: string;
let namespace = '';
let ca: CertificateAuthority;
let port = 0;
let pod = { name: '', uid: '' };
const processes: ManagedProcess[] = [];
let server: ManagedProcess;

const pinnedConfig = (target: string) => renameConfigSpec(target, { pin: INSTANCE });

async function issueServing(name: string): Promise<void> {
  const issued = await issueCertificate(ca, dir, name, { commonName: 'webhook', ipAddresses: ['127.0.0.1'] });
  await writeFile(join(dir, 'tls', 'tls.crt'), issued.certPem);
  await writeFile(join(dir, 'tls', 'tls.key'), issued.keyPem);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webhook-server-itest-'));
  await mkdir(join(dir, 'tls'));
  ca = await createCertificateAuthority(dir, 'ca');
  await issueServing('serving-1');
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'webhook-server');
  for (const t of [TARGET, OTHER]) await crdApi.createCustomResourceDefinition({ body: gizmoCrd(t) });
  await createWebhookServer(admin, INSTANCE, { namespace });
  await createConversionConfig(admin, `ws-${suffix}`, pinnedConfig(TARGET));
  const account = await grantLeaseWriter(admin, INSTANCE);
  const created = await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: `${INSTANCE}-0` },
      spec: {
        nodeName: NO_KUBELET_NODE,
        serviceAccountName: account.name,
        automountServiceAccountToken: false,
        containers: [{ name: 'webhook-server', image: 'switchyard:dev' }],
      },
    },
  });
  pod = { name: created.metadata?.name ?? '', uid: created.metadata?.uid ?? '' };
  const identity = join(dir, 'replica.kubeconfig');
  await writeFile(identity, (await podIdentity(cluster.info, admin, account, pod)).exportConfig());
  bus = await startOwnBus();
  processes.push(
    switchyardProcess({
      name: 'watch',
      args: ['watch'],
      natsUrl: bus.server.url,
      natsCredentialsDir: bus.natsCredentialsDir,
      kubeconfig: cluster.info.kubeConfigs.admin,
      logFile: join(cluster.info.dir, 'logs', 'webhook-server-watch.log'),
      log,
    }),
  );
  port = await freePort();
  server = switchyardProcess({
    name: 'webhook-server',
    args: [
      'webhook-server',
      `--instance=${INSTANCE}`,
      `--port=${port}`,
      `--tls-dir=${join(dir, 'tls')}`,
      // Short, so the test sees a drain end; the view's checks quick, so it sees a restart soon.
      `--webhook.drainSeconds=${DRAIN_SECONDS}`,
      '--view.checkEveryMilliseconds=250',
      '--view.maxLagSeconds=1',
    ],
    natsUrl: bus.server.url,
    natsCredentialsDir: bus.natsCredentialsDir,
    kubeconfig: identity,
    logFile: join(cluster.info.dir, 'logs', 'webhook-server-replica.log'),
    log,
    env: { POD_NAME: pod.name, POD_NAMESPACE: namespace, POD_UID: pod.uid },
  });
  processes.push(server);
}, 120_000);

afterAll(async () => {
  await Promise.all(processes.map((p) => p.stop(5_000)));
  await bus?.stop();
  for (const name of [`ws-${suffix}`, `wso-${suffix}`, `wsf-${suffix}`])
    await deleteConversionConfig(admin, name);
  await deleteWebhookServer(admin, INSTANCE);
  for (const t of [TARGET, OTHER, FAIL_CLOSED])
    await crdApi.deleteCustomResourceDefinition({ name: t }).catch(() => undefined);
  if (namespace) {
    await core
      .deleteNamespacedPod({ namespace, name: pod.name, gracePeriodSeconds: 0 })
      .catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
  await rm(dir, { recursive: true, force: true });
});

const base = () => `https://127.0.0.1:${port}`;
const trusting = () => new Agent({ connect: { ca: ca.certPem }, pipelining: 0 });

async function call(path: string, body?: unknown) {
  const res = await fetch(`${base()}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    ...(body !== undefined && { body: JSON.stringify(body) }),
    headers: { 'content-type': 'application/json' },
    dispatcher: trusting(),
  });
  return { status: res.status, text: await res.text() };
}

const review = (target: string, uid: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'ConversionReview',
  request: {
    uid,
    desiredAPIVersion: `${target.split('.').slice(1).join('.')}/v2`,
    objects: [
      {
        apiVersion: `${target.split('.').slice(1).join('.')}/v1`,
        kind: 'Gizmo',
        metadata: { name: 'g1', namespace: 'default' },
        spec: { replicas: 4 },
      },
    ],
  },
});

async function leaseReport() {
  const lease = await leases
    .readNamespacedLease({ namespace, name: servedLeaseName(pod.name) })
    .catch(() => undefined);
  const value = lease?.metadata?.annotations?.[SERVED_SET_ANNOTATION];
  return value === undefined ? undefined : decodeServedSet(value, expectedSetOf([]));
}

async function servedByLease(): Promise<string[] | undefined> {
  const decoded = await leaseReport();
  return decoded?.kind === 'set' ? [...decoded.served].sort() : undefined;
}

describe('a webhook-server replica as a process', () => {
  it('becomes ready once synced, and converts the target it holds with the plan it compiled', {
    timeout: 90_000,
  }, async () => {
    await waitFor(
      'the replica ready',
      async () => ((await call('/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined),
      { timeoutMs: 60_000 },
    );
    // Ready means synced with the bus; the watch process, started with it, may record the config
    // a moment later. The replica's own account of what it holds says when it has it.
    await waitFor(
      'the plan held',
      async () =>
        (JSON.parse((await call('/debug/plans')).text) as { servable: string[] }).servable.includes(TARGET)
          ? true
          : undefined,
      { timeoutMs: 30_000 },
    );
    const answer = JSON.parse((await call(`/convert/${TARGET}`, review(TARGET, 'u-1'))).text);
    expect(answer.response).toMatchObject({
      uid: 'u-1',
      result: { status: 'Success' },
      convertedObjects: [{ apiVersion: `${GROUP_OF_TARGET}/v2`, spec: { size: 4 } }],
    });
    expect(answer.response.convertedObjects[0].spec.replicas).toBeUndefined();
  });

  it('fails closed, with the reason, for a target it holds no plan for', async () => {
    const answer = JSON.parse((await call(`/convert/${OTHER}`, review(OTHER, 'u-2'))).text);
    expect(answer.response).toMatchObject({ uid: 'u-2', result: { status: 'Failure' } });
    expect(answer.response.result.message).toContain(OTHER);
    expect(answer.response.convertedObjects).toBeUndefined();
  });

  it('publishes what it serves in its own Lease, owned by its Pod, and follows configs that come and go', {
    timeout: 60_000,
  }, async () => {
    expect(await waitFor('the Lease', servedByLease, { timeoutMs: 20_000 })).toEqual([TARGET]);
    const lease = await leases.readNamespacedLease({ namespace, name: servedLeaseName(pod.name) });
    expect(lease.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'Pod', name: pod.name, uid: pod.uid });
    expect(lease.spec?.holderIdentity).toBe(pod.name);
    // The config goes, another comes for the other CRD: the replica lets go of the first plan
    // and holds the second, and its Lease says so.
    await deleteConversionConfig(admin, `ws-${suffix}`);
    await createConversionConfig(admin, `wso-${suffix}`, pinnedConfig(OTHER));
    expect(
      await waitFor('the Lease to follow', async () => {
        const served = await servedByLease();
        return served?.length === 1 && served[0] === OTHER ? served : undefined;
      }),
    ).toEqual([OTHER]);
    // Left out of the report at once, the plan itself stays for the drain: a review the apiserver
    // sent before the config went is still served.
    const during = JSON.parse((await call(`/convert/${TARGET}`, review(TARGET, 'u-3'))).text);
    expect(during.response.result.status, 'served during the drain').toBe('Success');
    // A review keeps a draining plan for a drain after it: watch the replica's own account instead.
    await waitFor(
      'the drain to end',
      async () =>
        (JSON.parse((await call('/debug/plans')).text) as { draining: string[] }).draining.length === 0
          ? true
          : undefined,
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    const after = JSON.parse((await call(`/convert/${TARGET}`, review(TARGET, 'u-4'))).text);
    expect(after.response.result.message, 'the plan went with its config').toContain('no config converts it');
  });

  it('after a NATS restart, says "cannot tell" in its Lease until its view is current, and serves throughout', {
    timeout: 90_000,
  }, async () => {
    expect(await waitFor('the Lease', servedByLease, { timeoutMs: 20_000 })).toEqual([OTHER]);
    await bus.server.stop({ kill: true });
    const behind = await waitFor(
      'the Lease to say the view is behind',
      async () => {
        const report = await leaseReport();
        return report?.kind === 'viewBehind' ? report : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    expect(behind, 'the count of plans it holds, no set').toEqual({ kind: 'viewBehind', servedCount: 1 });
    const ready = await call('/readyz');
    expect(ready.status, 'still ready: every replica is behind after a NATS restart').toBe(200);
    expect(ready.text).toMatch(/^ok: serving the \d+ plans held; view unknown: /);
    const duringOutage = JSON.parse((await call(`/convert/${OTHER}`, review(OTHER, 'u-5'))).text);
    expect(duringOutage.response.result.status, 'serves what it holds while NATS is down').toBe('Success');
    const restartedAt = performance.now();
    await bus.server.launch();
    expect(await waitFor('the Lease to report the set again', servedByLease, { timeoutMs: 30_000 })).toEqual([
      OTHER,
    ]);
    const seconds = (performance.now() - restartedAt) / 1000;
    process.stdout.write(
      `[webhook-server] view current again ${seconds.toFixed(1)} s after NATS came back\n`,
    );
  });

  it('serves a rotated certificate without a restart', { timeout: 60_000 }, async () => {
    const before = await peerSerial();
    await issueServing('serving-2');
    const after = await waitFor(
      'the new certificate served',
      async () => {
        const serial = await peerSerial();
        return serial !== before ? serial : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    expect(after).not.toBe(before);
    expect(server.pid).toBeDefined();
  });

  it('drops a FailClosed config’s plan when its target’s schema drifts, refusing its reviews by name, and keeps a KeepServingStale one serving', {
    timeout: 90_000,
  }, async () => {
    await crdApi.createCustomResourceDefinition({ body: gizmoCrd(FAIL_CLOSED) });
    await createConversionConfig(admin, `wsf-${suffix}`, {
      ...pinnedConfig(FAIL_CLOSED),
      driftPolicy: 'FailClosed',
    });
    expect(
      await waitFor('both plans reported', async () => {
        const served = await servedByLease();
        return served?.length === 2 ? served : undefined;
      }),
    ).toEqual([OTHER, FAIL_CLOSED].sort());
    const before = JSON.parse((await call(`/convert/${FAIL_CLOSED}`, review(FAIL_CLOSED, 'u-6'))).text);
    expect(before.response.result.status).toBe('Success');
    // Both targets' v1 field is renamed: the configs' FieldRename of spec.replicas no longer resolves.
    for (const name of [FAIL_CLOSED, OTHER]) {
      const crd = await crdApi.readCustomResourceDefinition({ name });
      const drifted = gizmoCrd(name, { v1Field: 'count' });
      await crdApi.replaceCustomResourceDefinition({
        name,
        body: { ...crd, spec: { ...crd.spec, versions: drifted.spec.versions } },
      });
    }
    expect(
      await waitFor('the FailClosed plan dropped from the Lease', async () => {
        const served = await servedByLease();
        return served?.length === 1 ? served : undefined;
      }),
    ).toEqual([OTHER]);
    const refused = JSON.parse((await call(`/convert/${FAIL_CLOSED}`, review(FAIL_CLOSED, 'u-7'))).text);
    expect(refused.response.result.status).toBe('Failure');
    expect(refused.response.result.message).toContain(`CRDConversionConfig wsf-${suffix}`);
    expect(refused.response.result.message).toContain('driftPolicy is FailClosed');
    expect(refused.response.result.message).toContain('spec.replicas');
    const stale = JSON.parse((await call(`/convert/${OTHER}`, review(OTHER, 'u-8'))).text);
    expect(stale.response, 'KeepServingStale: the last good plan serves').toMatchObject({
      result: { status: 'Success' },
      convertedObjects: [{ spec: { size: 4 } }],
    });
    const debug = JSON.parse((await call('/debug/plans')).text) as { failures: Record<string, string[]> };
    expect(Object.keys(debug.failures).sort()).toEqual([OTHER, FAIL_CLOSED].sort());
  });

  it('withdraws its report on SIGTERM before it exits', { timeout: 60_000 }, async () => {
    await server.stop(20_000);
    expect(await servedByLease()).toEqual([]);
  });
});

/** The serial number of the certificate the replica presents now. */
function peerSerial(): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, ca: ca.certPem }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.end();
      resolve(serial);
    });
    socket.once('error', reject);
  });
}
