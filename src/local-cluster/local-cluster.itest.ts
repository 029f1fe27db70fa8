// Smoke tests proving each part of the local cluster is real: the apiserver
// stores and serves CRDs, the controller manager turns Deployments into Pods and
// collects garbage, the node agent runs Pods as processes and publishes their
// endpoints, the apiserver reaches a webhook through a `service:` reference,
// JetStream stores and delivers, and RBAC denies.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
  type V1Deployment,
} from '@kubernetes/client-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCrd } from '../../test/support/crds.ts';
import { createNamespace, useLocalCluster } from '../../test/support/local-cluster.ts';
import { isNotFound } from '../kube/errors.ts';
import { isProcessAlive } from './managed-process.ts';
import { natsConnectOptions } from './nats-client.ts';
import { createCertificateAuthority, issueCertificate } from './pki.ts';
import { waitFor } from './wait.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const apps = admin.makeApiClient(AppsV1Api);
const custom = admin.makeApiClient(CustomObjectsApi);
let namespace = '';

beforeAll(async () => {
  namespace = await createNamespace(admin, 'smoke');
  await waitFor('the default ServiceAccount', () =>
    core.readNamespacedServiceAccount({ name: 'default', namespace }).then(() => true),
  );
});

afterAll(async () => {
  await core.deleteNamespace({ name: namespace });
});

async function podPids(selector: string): Promise<number[]> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: selector });
  const pids: number[] = [];
  for (const pod of pods.items) {
    const dir = join(
      cluster.info.dir,
      'pods',
      `${namespace}_${pod.metadata?.name}_${pod.metadata?.uid?.slice(0, 8)}`,
    );
    const pidFile = await readFile(join(dir, 'main.pid'), 'utf8').catch(() => '');
    if (pidFile) pids.push(Number(pidFile));
  }
  return pids;
}

function crd(
  group: string,
  conversion: V1CustomResourceDefinition['spec']['conversion'],
): V1CustomResourceDefinition {
  const schema = {
    openAPIV3Schema: {
      type: 'object',
      properties: { spec: { type: 'object', x_kubernetes_preserve_unknown_fields: true } },
    },
  };
  return {
    metadata: { name: `widgets.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [
        { name: 'v1', served: true, storage: true, schema },
        { name: 'v2', served: true, storage: false, schema },
      ],
      conversion,
    },
  };
}

function sleeperDeployment(name: string, replicas: number): V1Deployment {
  return {
    metadata: { name, namespace },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          terminationGracePeriodSeconds: 5,
          containers: [{ name: 'main', image: 'switchyard:dev', command: ['test/fixtures/idle.ts'] }],
        },
      },
    },
  };
}

async function deployEchoWebhook(
  name: string,
  replicas: number,
  preStopSleepSeconds = 0,
): Promise<{ caPem: string }> {
  const ca = await createCertificateAuthority(cluster.info.dir, `${name}-ca-${namespace}`);
  const cert = await issueCertificate(ca, cluster.info.dir, `${name}-${namespace}`, {
    commonName: name,
    dnsNames: [`${name}.${namespace}.svc`],
  });
  await core.createNamespacedService({
    namespace,
    body: {
      metadata: { name },
      spec: { selector: { app: name }, ports: [{ name: 'https', port: 443, targetPort: 9443 }] },
    },
  });
  await apps.createNamespacedDeployment({
    namespace,
    body: {
      metadata: { name, namespace },
      spec: {
        replicas,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            terminationGracePeriodSeconds: 10,
            containers: [
              {
                name: 'webhook',
                image: 'switchyard:dev',
                command: ['test/fixtures/echo-conversion-webhook.ts'],
                ports: [{ name: 'https', containerPort: 9443 }],
                env: [
                  { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'TLS_CERT', value: cert.certPem },
                  { name: 'TLS_KEY', value: cert.keyPem },
                ],
                readinessProbe: {
                  httpGet: { path: '/healthz', port: 'https', scheme: 'HTTPS' },
                  periodSeconds: 1,
                },
                ...(preStopSleepSeconds > 0 && {
                  lifecycle: { preStop: { sleep: { seconds: preStopSleepSeconds } } },
                }),
              },
            ],
          },
        },
      },
    },
  });
  await waitFor(`${replicas} ready ${name} replicas`, async () => {
    const d = await apps.readNamespacedDeployment({ name, namespace });
    return d.status?.readyReplicas === replicas ? true : undefined;
  });
  return { caPem: ca.certPem };
}

/** A two-version CRD converted by the webhook behind `service`, and one widget stored at v1. */
async function createWebhookCrdWithWidget(group: string, service: string, caPem: string): Promise<string> {
  await ensureCrd(
    admin,
    crd(group, {
      strategy: 'Webhook',
      webhook: {
        conversionReviewVersions: ['v1'],
        clientConfig: {
          service: { namespace, name: service, path: '/convert', port: 443 },
          caBundle: Buffer.from(caPem).toString('base64'),
        },
      },
    }),
  );
  await custom.createNamespacedCustomObject({
    group,
    version: 'v1',
    namespace,
    plural: 'widgets',
    body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w' }, spec: { size: 1 } },
  });
  return group;
}

/** Reads the widget at v2 (a conversion) and returns the pod that converted it. */
async function readConverted(group: string): Promise<string> {
  const w = (await custom.getNamespacedCustomObject({
    group,
    version: 'v2',
    namespace,
    plural: 'widgets',
    name: 'w',
  })) as {
    apiVersion: string;
    metadata: { annotations?: Record<string, string> };
  };
  if (w.apiVersion !== `${group}/v2`) throw new Error(`read ${w.apiVersion}, not ${group}/v2`);
  return w.metadata.annotations?.['smoke.switchyard.dev/converted-by'] ?? 'unknown';
}

describe('local cluster', () => {
  it('establishes a CRD with two versions and round-trips a custom resource', async () => {
    await ensureCrd(admin, crd('rt.smoke.switchyard.dev', { strategy: 'None' }));
    const group = 'rt.smoke.switchyard.dev';
    await custom.createNamespacedCustomObject({
      group,
      version: 'v1',
      namespace,
      plural: 'widgets',
      body: { apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } },
    });
    const read = await custom.getNamespacedCustomObject({
      group,
      version: 'v2',
      namespace,
      plural: 'widgets',
      name: 'w1',
    });
    expect(read.apiVersion).toBe(`${group}/v2`);
    expect(read.spec).toEqual({ size: 3 });
  });

  it('runs a Deployment scaled 0→3→1 as real local processes', async () => {
    const name = 'sleeper';
    await apps.createNamespacedDeployment({ namespace, body: sleeperDeployment(name, 0) });
    const scale = (replicas: number) =>
      apps.patchNamespacedDeploymentScale(
        { name, namespace, body: { spec: { replicas } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    const readyReplicas = async (n: number) =>
      waitFor(`${n} ready replicas`, async () => {
        const d = await apps.readNamespacedDeployment({ name, namespace });
        const pods = await core.listNamespacedPod({ namespace, labelSelector: `app=${name}` });
        return (d.status?.readyReplicas ?? 0) === n && pods.items.length === n ? true : undefined;
      });

    await scale(3);
    await readyReplicas(3);
    const pids = await podPids(`app=${name}`);
    expect(pids).toHaveLength(3);
    expect(pids.every(isProcessAlive)).toBe(true);

    await scale(1);
    await readyReplicas(1);
    const remaining = await podPids(`app=${name}`);
    expect(remaining).toHaveLength(1);
    const stopped = pids.filter((p) => !remaining.includes(p));
    expect(stopped).toHaveLength(2);
    await waitFor('stopped pods’ processes to exit', () => (stopped.some(isProcessAlive) ? undefined : true));
    expect(remaining.every(isProcessAlive)).toBe(true);
  });

  it('garbage-collects an object owned by a deleted Pod', async () => {
    const pod = await core.createNamespacedPod({
      namespace,
      body: {
        metadata: { name: 'owner' },
        spec: {
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'main', image: 'switchyard:dev', command: ['test/fixtures/idle.ts'] }],
        },
      },
    });
    await core.createNamespacedConfigMap({
      namespace,
      body: {
        metadata: {
          name: 'owned',
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'owner', uid: pod.metadata?.uid ?? '' }],
        },
        data: { a: 'b' },
      },
    });
    await core.deleteNamespacedPod({ name: 'owner', namespace });
    await waitFor('the owned ConfigMap to be collected', async () => {
      try {
        await core.readNamespacedConfigMap({ name: 'owned', namespace });
        return undefined;
      } catch (err) {
        return isNotFound(err) ? true : undefined;
      }
    });
  });

  it('reaches a conversion webhook through a service reference, spread over both replicas', async () => {
    const hook = await deployEchoWebhook('echo', 2);
    const group = await createWebhookCrdWithWidget('hook.smoke.switchyard.dev', 'echo', hook.caPem);
    const convertedBy = new Set<string>();
    await waitFor(
      'conversions from both replicas',
      async () => {
        convertedBy.add(await readConverted(group));
        return convertedBy.size === 2 ? true : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20 },
    );
    const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app=echo' });
    expect([...convertedBy].sort()).toEqual(pods.items.map((p) => p.metadata?.name).sort());
  });

  it('keeps every conversion succeeding while a webhook Deployment scales 3→1 under load', async () => {
    // Endpoints are unpublished before a pod is stopped, and a preStop sleep
    // gives the apiserver's EndpointSlice informer time to notice: the local
    // network must not fail a call that a cluster network would not fail.
    const hook = await deployEchoWebhook('drain', 3, 2);
    const group = await createWebhookCrdWithWidget('drain.smoke.switchyard.dev', 'drain', hook.caPem);
    const servedBy = new Map<string, number>();
    const failures: string[] = [];
    let running = true;
    const load = Array.from({ length: 4 }, async () => {
      while (running) {
        try {
          const by = await readConverted(group);
          servedBy.set(by, (servedBy.get(by) ?? 0) + 1);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    });
    await waitFor('all three replicas serving', () => (servedBy.size === 3 ? true : undefined));
    await apps.patchNamespacedDeploymentScale(
      { name: 'drain', namespace, body: { spec: { replicas: 1 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor('one pod left', async () => {
      const pods = await core.listNamespacedPod({ namespace, labelSelector: 'app=drain' });
      return pods.items.length === 1 ? true : undefined;
    });
    const servedBefore = [...servedBy.values()].reduce((a, b) => a + b, 0);
    await new Promise((r) => setTimeout(r, 1_000));
    running = false;
    await Promise.all(load);
    const served = [...servedBy.values()].reduce((a, b) => a + b, 0);
    expect(served - servedBefore, 'the survivor kept serving after the scale-down').toBeGreaterThan(0);
    expect(failures, 'a conversion failed while replicas were removed').toEqual([]);
  });

  it('stores, delivers and acknowledges through JetStream', async () => {
    const nc = await connect(natsConnectOptions(cluster.info));
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'SMOKE', subjects: ['smoke.>'] });
      const js = jetstream(nc);
      for (let i = 0; i < 3; i++) await js.publish('smoke.test', JSON.stringify({ i }));
      await jsm.consumers.add('SMOKE', { durable_name: 'reader', ack_policy: 'explicit' });
      const consumer = await js.consumers.get('SMOKE', 'reader');
      const seen: number[] = [];
      const messages = await consumer.fetch({ max_messages: 3, expires: 5_000 });
      for await (const m of messages) {
        seen.push(m.json<{ i: number }>().i);
        await m.ackAck();
      }
      expect(seen).toEqual([0, 1, 2]);
      const info = await jsm.consumers.info('SMOKE', 'reader');
      expect(info.num_ack_pending).toBe(0);
      expect(info.delivered.stream_seq).toBe(3);
      await jsm.streams.delete('SMOKE');
    } finally {
      await nc.close();
    }
  });

  it('requires TLS of NATS clients, verified against the stack’s own CA', async () => {
    const { natsCaFile } = cluster.info;
    expect(natsCaFile, 'the local stack started NATS without TLS').toBeDefined();
    // Upgraded because the server asks for it, then verified against the system's CAs: refused.
    const untrusting = await connect({ servers: cluster.info.natsUrl, reconnect: false }).then(
      async (nc) => {
        await nc.close();
        return 'connected';
      },
      (err: unknown) => String(err),
    );
    expect(untrusting, 'a client that does not trust the stack’s CA was let in').not.toBe('connected');
    const nc = await connect(natsConnectOptions(cluster.info));
    try {
      expect(nc.info?.tls_required, 'the server does not require TLS').toBe(true);
    } finally {
      await nc.close();
    }
  });

  it('denies an identity without permissions (403)', async () => {
    const nobody = cluster.kubeConfig('nobody').makeApiClient(CoreV1Api);
    await expect(nobody.listNamespacedPod({ namespace })).rejects.toMatchObject({ code: 403 });
    await expect(core.listNamespacedPod({ namespace })).resolves.toBeDefined();
  });
});
