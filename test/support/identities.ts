import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { instanceNamespaceBinding, OPTED_IN_LABELS } from '../../src/access/instance-namespace.ts';
import { GROUP, HANDOVER_SERVICE_ACCOUNT, VERSION } from '../../src/api/constants.ts';
import { webhookServerSchema } from '../../src/api/webhook-server.ts';
import {
  type RenderedInstance,
  renderInstance,
  type ServiceAccountRef,
} from '../../src/core/instances/render.ts';
import { isConflict } from '../../src/kube/errors.ts';
import type { LocalClusterInfo } from '../../src/local-cluster/cluster.ts';
import { PROJECT_ROOT } from '../../src/local-cluster/cluster.ts';
import { kubeConfigFromToken, writeKubeConfig } from '../../src/local-cluster/kubeconfig.ts';

export const RBAC_NAMESPACE = 'switchyard-system';

/** The user name the apiserver gives a component's ServiceAccount (audit log, RBAC). */
export function componentUser(component: string): string {
  return `system:serviceaccount:${RBAC_NAMESPACE}:switchyard-${component}`;
}

/**
 * deploy/rbac/<component>.yaml applied as a user would apply it, and a kubeconfig holding a
 * token of its ServiceAccount: a test that acts as the component proves its manifest is enough.
 */
export async function componentIdentity(
  cluster: LocalClusterInfo,
  admin: KubeConfig,
  component: string,
): Promise<KubeConfig> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch(ignoreExists);
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const text = await readFile(join(PROJECT_ROOT, 'deploy', 'rbac', `${component}.yaml`), 'utf8');
  for (const o of loadAllYaml(text) as KubernetesObject[]) await objects.create(o).catch(ignoreExists);
  const token = await core.createNamespacedServiceAccountToken({
    name: `switchyard-${component}`,
    namespace: RBAC_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return kubeConfigFromToken(cluster.endpoint, componentUser(component), token.status?.token ?? '');
}

/**
 * As {@link componentIdentity}, for a component run as its own process: the kubeconfig is
 * written to `path`. What applying the manifest created is deleted by the pushed cleanups (a
 * later file may create it unconditionally); the namespace stays, other files share it.
 */
export async function componentIdentityFile(
  cluster: LocalClusterInfo,
  admin: KubeConfig,
  component: string,
  path: string,
  cleanups: Array<() => Promise<unknown>>,
): Promise<string> {
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch(ignoreExists);
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const text = await readFile(join(PROJECT_ROOT, 'deploy', 'rbac', `${component}.yaml`), 'utf8');
  for (const o of loadAllYaml(text) as KubernetesObject[]) {
    const created = await objects.create(o).then(
      () => true,
      (err: unknown) => {
        ignoreExists(err);
        return false;
      },
    );
    if (created) cleanups.push(() => objects.delete(o).catch(() => undefined));
  }
  const token = await core.createNamespacedServiceAccountToken({
    name: `switchyard-${component}`,
    namespace: RBAC_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  await writeKubeConfig(path, cluster.endpoint, componentUser(component), token.status?.token ?? '');
  return path;
}

/**
 * `namespace` opted in to instances as a platform team does it (docs/security.md): labelled, and
 * the instances handler's namespace role bound there.
 */
export async function optInInstanceNamespace(admin: KubeConfig, namespace: string): Promise<void> {
  await admin
    .makeApiClient(CoreV1Api)
    .patchNamespace(
      { name: namespace, body: { metadata: { labels: OPTED_IN_LABELS } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  await admin
    .makeApiClient(KubernetesObjectApi)
    .create(instanceNamespaceBinding(namespace, RBAC_NAMESPACE) as KubernetesObject)
    .catch(ignoreExists);
}

function ignoreExists(err: unknown): void {
  if (!isConflict(err)) throw err;
}

/** The handover's ServiceAccount as deploy/rbac/handover.yaml creates it. */
export const HANDOVER_ACCOUNT = { name: HANDOVER_SERVICE_ACCOUNT, namespace: RBAC_NAMESPACE } as const;

/** An instance as stored, rendered by the instances handler's pure function (with this file's settings). */
async function renderStoredInstance(admin: KubeConfig, instance: string): Promise<RenderedInstance> {
  const read = await admin.makeApiClient(CustomObjectsApi).getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    name: instance,
  });
  const rendered = renderInstance(webhookServerSchema.parse(read), {
    defaultNamespace: RBAC_NAMESPACE,
    image: { repository: 'unused' },
    handoverServiceAccount: HANDOVER_ACCOUNT,
  });
  if (!rendered.ok) throw new Error(rendered.error);
  return rendered.value;
}

/**
 * What the instances handler renders for the handover to read an instance's trust bundle (a
 * Role with `get` on its serving Secret, bound to the handover's ServiceAccount), for tests that
 * play the data plane without that handler: rendered by the same pure function, so the grant
 * these tests run under is the product's.
 */
export async function grantTrustBundleRead(admin: KubeConfig, instance: string): Promise<void> {
  const rendered = await renderStoredInstance(admin, instance);
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const o of [rendered.trustBundleRole, rendered.trustBundleRoleBinding])
    await objects.create(o as KubernetesObject).catch(ignoreExists);
}

/**
 * What the instances handler renders for an instance's replicas to publish their served-set
 * Leases: the ServiceAccount, and the Role with get/create/update/patch on leases in the
 * instance's namespace bound to it. Rendered by the same pure function, so a test that writes as
 * a replica runs under exactly the product's grant. The objects are owned by the instance and
 * live in its namespace: deleting either removes them.
 */
export async function grantLeaseWriter(admin: KubeConfig, instance: string): Promise<ServiceAccountRef> {
  const rendered = await renderStoredInstance(admin, instance);
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const o of [rendered.serviceAccount, rendered.role, rendered.roleBinding])
    if (o) await objects.create(o as KubernetesObject).catch(ignoreExists);
  return { name: rendered.names.serviceAccount, namespace: rendered.names.namespace };
}

/** The user name the apiserver gives a ServiceAccount (audit log, RBAC). */
export function serviceAccountUser(account: ServiceAccountRef): string {
  return `system:serviceaccount:${account.namespace}:${account.name}`;
}

/**
 * A kubeconfig with a token of `account` bound to `pod`, as a kubelet projects into a replica
 * (the Pod must run as that account); the apiserver stops accepting it once the Pod is gone.
 */
export async function podIdentity(
  cluster: LocalClusterInfo,
  admin: KubeConfig,
  account: ServiceAccountRef,
  pod: { name: string; uid: string },
): Promise<KubeConfig> {
  const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name: account.name,
    namespace: account.namespace,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 3600,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid },
      },
    },
  });
  return kubeConfigFromToken(cluster.endpoint, serviceAccountUser(account), token.status?.token ?? '');
}
