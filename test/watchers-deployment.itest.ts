// The watchers as a user deploys them: deploy/rbac/watchers.yaml and
// deploy/workers/watchers.yaml applied to the local cluster, two replicas
// running as pods under their own ServiceAccount. Proves the product process
// works with exactly the permissions its manifest grants (no request denied),
// that two replicas store each change once, and that the identity can do
// nothing else.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  type V1Deployment,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../src/api/constants.ts';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';
import { forThisCluster, natsCaSecret, natsCredentialsSecret } from '../src/local-cluster/install.ts';
import { kubeConfigFromToken } from '../src/local-cluster/kubeconfig.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { auditLogFromNow } from './support/audit-log.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { useLocalCluster } from './support/local-cluster.ts';
import { awaitRecord, createWebhookServer, deleteWebhookServer } from './support/records.ts';

const NAMESPACE = 'switchyard-system';
const SERVICE_ACCOUNT = 'switchyard-watchers';
const USER = `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT}`;
const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const apps = admin.makeApiClient(AppsV1Api);
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;

async function manifests(file: string): Promise<KubernetesObject[]> {
  return loadAllYaml(await readFile(join(PROJECT_ROOT, 'deploy', file), 'utf8')) as KubernetesObject[];
}

/** The Deployment as an overlay would render it for this cluster: its NATS URL, and CA with TLS. */
function forLocalNats(deployment: V1Deployment): V1Deployment {
  const { natsUrl, natsCaFile } = cluster.info;
  return forThisCluster(deployment, natsUrl, undefined, natsCaFile !== undefined) as V1Deployment;
}

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const o of await manifests('rbac/watchers.yaml')) await objects.create(o);
  // The NATS passwords of the local stack's users, as the credentials Job leaves them.
  await objects
    .create(await natsCredentialsSecret(cluster.info.natsCredentialsDir))
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  if (cluster.info.natsCaFile !== undefined)
    await objects.create(await natsCaSecret(cluster.info.natsCaFile)).catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  const [deployment] = (await manifests('workers/watchers.yaml')) as V1Deployment[];
  await apps.createNamespacedDeployment({
    namespace: NAMESPACE,
    body: forLocalNats(deployment as V1Deployment),
  });
  await waitFor(
    'two ready watcher replicas',
    async () => {
      const d = await apps.readNamespacedDeployment({ name: 'switchyard-watchers', namespace: NAMESPACE });
      return d.status?.readyReplicas === 2 ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
});

afterAll(async () => {
  await deleteWebhookServer(admin, 'deployed-e2e');
  await apps.deleteNamespacedDeployment({ name: 'switchyard-watchers', namespace: NAMESPACE });
  await waitFor('the watcher pods gone', async () => {
    const pods = await core.listNamespacedPod({
      namespace: NAMESPACE,
      labelSelector: 'app.kubernetes.io/component=watchers',
    });
    return pods.items.length === 0 ? true : undefined;
  });
});

describe('watchers deployed from deploy/', () => {
  it('record a change once, with two replicas running', async () => {
    await createWebhookServer(admin, 'deployed-e2e');
    // Both replicas have seen it within a second, well inside the dedup window: one record either way.
    const { stored } = await awaitRecord(cluster.info, 'k8s.webhookserver._.deployed-e2e', 1_000);
    expect(stored).toBe(1);
  });

  it('run on the manifest’s grants alone: every request of theirs is allowed', async () => {
    const theirs = await audit.waitFor(
      'list and watch by both replicas',
      (events) => events.filter((e) => e.user.username === USER && e.verb === 'watch'),
      2 * 6,
    );
    expect(new Set(theirs.map((e) => e.userAgent))).toEqual(new Set(['switchyard/watchers/informers']));
    const denied = (await audit.all()).filter(
      (e) => e.user.username === USER && e.responseStatus?.code === 403,
    );
    expect(denied.map((e) => e.requestURI)).toEqual([]);
  });

  it('cannot write anything, nor read what it does not record', async () => {
    const token = await core.createNamespacedServiceAccountToken({
      name: SERVICE_ACCOUNT,
      namespace: NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const kc = kubeConfigFromToken(cluster.info.endpoint, USER, token.status?.token ?? '');
    const asWatcher = { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
    await expect(
      asWatcher.core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: 'x' } } }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(asWatcher.core.listNamespacedSecret({ namespace: NAMESPACE })).rejects.toMatchObject({
      code: 403,
    });
    await expect(
      asWatcher.custom.deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'conversionwebhookservers',
        name: 'deployed-e2e',
      }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      asWatcher.custom.getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'conversionwebhookservers',
        name: 'deployed-e2e',
      }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      asWatcher.custom.listClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'conversionwebhookservers',
      }),
    ).resolves.toBeDefined();
  });
});
