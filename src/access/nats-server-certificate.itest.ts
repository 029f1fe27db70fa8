// The bundled NATS server's certificate against the real apiserver: the Job's first run makes the
// CA and the serving Secret, whose certificate a client trusting only its ca.crt accepts for the
// client Service's name and a route peer for each Pod's name; a second run with nothing due
// changes neither Secret; a certificate from before routes were TLS is renewed under the same CA.
import { X509Certificate } from 'node:crypto';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { defaultConfig } from '../config/schema.ts';
import { readCa } from '../core/instances/certificate-facts.ts';
import { leafValidity, servingDnsNames } from '../core/instances/serving-cert.ts';
import { createKubeClients, type KubeClients } from '../kube/clients.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
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
    for (const pod of ['nats-0', 'nats-2'])
      expect(
        leaf.checkHost(`${pod}.nats-headless.${namespace}.svc`),
        'the certificate does not name the Pods the routes dial',
      ).toBeDefined();
    // serverAuth and clientAuth: each end of a route presents it.
    expect(leaf.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1', '1.3.6.1.5.5.7.3.2']);
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

  it('renews a certificate issued before routes were TLS (the client Service alone, serverAuth), under the same CA', async () => {
    const caSecret = await secret(NATS_CA_KEY_SECRET);
    const ca = { certPem: caSecret.data['tls.crt'] ?? '', keyPem: caSecret.data['tls.key'] ?? '' };
    const caFacts = readCa(ca.certPem, ca.keyPem);
    if (caFacts === undefined) throw new Error('the CA Secret does not parse');
    const old = await x509Issuer().issueServing({
      ca,
      dnsNames: servingDnsNames('nats', namespace),
      ...leafValidity(caFacts.cert, Date.now()),
    });
    const serving = await secret(NATS_TLS_SECRET);
    const current = await core().readNamespacedSecret({ name: NATS_TLS_SECRET, namespace });
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    await core().replaceNamespacedSecret({
      name: NATS_TLS_SECRET,
      namespace,
      body: {
        ...current,
        data: { ...current.data, 'tls.crt': b64(old.certPem), 'tls.key': b64(old.keyPem) },
      },
    });
    await ensureNatsServerCertificate(clients.writes, namespace, Date.now(), AbortSignal.timeout(30_000));
    const renewed = await secret(NATS_TLS_SECRET);
    expect(renewed.data['tls.crt'], 'the old certificate was kept').not.toBe(old.certPem);
    const leaf = new X509Certificate(renewed.data['tls.crt'] ?? '');
    expect(leaf.checkHost(`nats-1.nats-headless.${namespace}.svc`)).toBeDefined();
    expect(leaf.keyUsage).toContain('1.3.6.1.5.5.7.3.2');
    // The same CA: clients trusting ca.crt need nothing new.
    expect(renewed.data['ca.crt']).toBe(serving.data['ca.crt']);
    expect((await secret(NATS_CA_KEY_SECRET)).resourceVersion).toBe(caSecret.resourceVersion);
  });
});
