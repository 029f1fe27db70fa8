// Tests of client behaviour without a cluster: a plain HTTP server on loopback and a kubeconfig
// that points at it.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';

/** Starts `server` on a free loopback port; a kubeconfig for it (any token, TLS off). */
export async function listenForKubeClients(server: Server): Promise<KubeConfig> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromClusterAndUser(
    // client-node refuses plain HTTP unless TLS verification is explicitly off.
    { name: 'loopback', server: `http://127.0.0.1:${port}`, skipTLSVerify: true },
    { name: 'tester', token: 'not-checked' },
  );
  return kubeConfig;
}

export async function closeLoopbackServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}
