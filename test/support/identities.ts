import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
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
