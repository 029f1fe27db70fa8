import { writeFile } from 'node:fs/promises';
import { KubeConfig } from '@kubernetes/client-node';

export interface ClusterEndpoint {
  server: string;
  caFile: string;
}

/** A kubeconfig document (JSON is valid YAML, so kubectl reads it as is). */
export function kubeConfigDocument(endpoint: ClusterEndpoint, user: string, token: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'switchyard-local',
        cluster: { server: endpoint.server, 'certificate-authority': endpoint.caFile },
      },
    ],
    users: [{ name: user, user: { token } }],
    contexts: [{ name: user, context: { cluster: 'switchyard-local', user } }],
    'current-context': user,
  };
}

export async function writeKubeConfig(path: string, endpoint: ClusterEndpoint, user: string, token: string) {
  await writeFile(path, `${JSON.stringify(kubeConfigDocument(endpoint, user, token), null, 2)}\n`, {
    mode: 0o600,
  });
}

export function kubeConfigFromToken(endpoint: ClusterEndpoint, user: string, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [
      { name: 'switchyard-local', server: endpoint.server, caFile: endpoint.caFile, skipTLSVerify: false },
    ],
    users: [{ name: user, token }],
    contexts: [{ name: user, cluster: 'switchyard-local', user }],
    currentContext: user,
  });
  return kc;
}
