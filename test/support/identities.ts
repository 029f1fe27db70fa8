import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../src/api/constants.ts';
import { webhookServerSchema } from '../../src/api/webhook-server.ts';
import { renderInstance } from '../../src/core/instances/render.ts';
import { HANDOVER_SERVICE_ACCOUNT } from '../../src/handlers/operator-namespace.ts';
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

function ignoreExists(err: unknown): void {
  if (!isConflict(err)) throw err;
}

/** The handover's ServiceAccount as deploy/rbac/handover.yaml creates it. */
export const HANDOVER_ACCOUNT = { name: HANDOVER_SERVICE_ACCOUNT, namespace: RBAC_NAMESPACE } as const;

/**
 * What the instances handler renders for the handover to read an instance's trust bundle (a
 * Role with `get` on its serving Secret, bound to the handover's ServiceAccount), for tests that
 * play the data plane without that handler: rendered by the same pure function, so the grant
 * these tests run under is the product's.
 */
export async function grantTrustBundleRead(admin: KubeConfig, instance: string): Promise<void> {
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
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const o of [rendered.value.trustBundleRole, rendered.value.trustBundleRoleBinding])
    await objects.create(o as KubernetesObject).catch(ignoreExists);
}
