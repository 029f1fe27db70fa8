// The bundled NATS server's certificate against the real apiserver: the Job's first run makes the
// CA and the serving Secret, whose certificate a client trusting only its ca.crt accepts for the
// client Service's name; a second run with nothing due changes neither Secret.
import { X509Certificate } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { defaultConfig } from '../config/schema.ts';
import { createKubeClients, type KubeClients } from '../kube/clients.ts';
import {
  ensureNatsServerCertificate,
  NATS_CA_KEY_SECRET,
  NATS_TLS_SECRET,
} from './nats-server-certificate.ts';

const cluster = useLocalCluster();
const namespace = `nats-certificate-${process.pid}`;
let clients: KubeClients;
const core = () => cluster.kubeConfig().makeApiClient(CoreV1Api);

async function secret(name: string) {
  const s = await core().readNamespacedSecret({ name, namespace });
  const data = Object.fromEntries(
    Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
  return { data, resourceVersion: s.metadata?.resourceVersion, type: s.type };
}

beforeAll(async () => {
  await core().createNamespace({ body: { metadata: { name: namespace } } });
  clients = createKubeClients({
    kubeConfig: cluster.kubeConfig(),
    component: 'nats-credentials',
    kubernetes: defaultConfig().kubernetes,
  });
});

afterAll(async () => {
  await clients?.close();
  await core().deleteNamespace({ name: namespace });
});

describe('ensureNatsServerCertificate', () => {
  it('issues a certificate for the client Service that chains to the ca.crt clients mount', async () => {
    await ensureNatsServerCertificate(clients.writes, namespace, Date.now(), AbortSignal.timeout(30_000));
    const serving = await secret(NATS_TLS_SECRET);
    expect(serving.type).toBe('kubernetes.io/tls');
    const leaf = new X509Certificate(serving.data['tls.crt'] ?? '');
    const ca = new X509Certificate(serving.data['ca.crt'] ?? '');
    expect(
      leaf.checkHost(`nats.${namespace}.svc`),
      'the certificate does not name the Service',
    ).toBeDefined();
    expect(leaf.verify(ca.publicKey), 'the certificate does not chain to ca.crt').toBe(true);
    expect(serving.data['tls.key']).toMatch(/PRIVATE KEY/);
    // The CA's key is in its own Secret, never in the one clients mount.
    const caSecret = await secret(NATS_CA_KEY_SECRET);
    expect(caSecret.data['tls.crt']?.trim()).toBe(serving.data['ca.crt']?.trim());
    expect(serving.data['ca.crt']).not.toContain('PRIVATE KEY');
  });

  it('changes nothing when it runs again with nothing due', async () => {
    const before = [await secret(NATS_TLS_SECRET), await secret(NATS_CA_KEY_SECRET)];
    await ensureNatsServerCertificate(clients.writes, namespace, Date.now(), AbortSignal.timeout(30_000));
    const after = [await secret(NATS_TLS_SECRET), await secret(NATS_CA_KEY_SECRET)];
    expect(after.map((s) => s.resourceVersion)).toEqual(before.map((s) => s.resourceVersion));
  });
});
