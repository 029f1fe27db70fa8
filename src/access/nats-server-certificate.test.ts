// deploy's NATS certificate serves the client Service and both ends of every route: it names each
// Pod on the headless Service (as nats.conf's routes dial them) and may be used as a client
// certificate. One issued before routes were TLS is renewed by the next run of the Job.
import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { readCa, readLeaf } from '../core/instances/certificate-facts.ts';
import {
  caValidity,
  decideCertificates,
  type LeafPurpose,
  leafValidity,
  servingPurpose,
} from '../core/instances/serving-cert.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { natsServerPurpose } from './nats-server-certificate.ts';

const NOW = Date.now();
const NAMESPACE = 'switchyard-system';
const issuer = x509Issuer();

async function issued(purpose: LeafPurpose) {
  const ca = await issuer.createCa({ commonName: 'switchyard NATS CA', ...caValidity(NOW) });
  const caFacts = readCa(ca.certPem, ca.keyPem);
  if (caFacts === undefined) throw new Error('the CA does not parse');
  const leaf = await issuer.issueServing({ ca, ...purpose, ...leafValidity(caFacts.cert, NOW) });
  return { caFacts, leaf };
}

describe('natsServerPurpose', () => {
  it('names the client Service and every Pod the routes dial, in both DNS forms, and no deeper name', async () => {
    const { leaf } = await issued(natsServerPurpose(NAMESPACE));
    const cert = new X509Certificate(leaf.certPem);
    const named = (host: string) => cert.checkHost(host) !== undefined;
    for (const host of [
      `nats.${NAMESPACE}.svc`,
      `nats-0.nats-headless.${NAMESPACE}.svc`,
      `nats-2.nats-headless.${NAMESPACE}.svc`,
      `nats-1.nats-headless.${NAMESPACE}.svc.cluster.local`,
    ])
      expect(named(host), host).toBe(true);
    // A wildcard covers one label: neither the Service itself nor a name below a Pod's.
    for (const host of [
      `nats-headless.${NAMESPACE}.svc`,
      `a.nats-0.nats-headless.${NAMESPACE}.svc`,
      `nats-0.nats-headless.other.svc`,
    ])
      expect(named(host), host).toBe(false);
  });

  it('is a server and a client certificate, as both ends of a route use it', () => {
    expect(natsServerPurpose(NAMESPACE).extendedKeyUsages).toEqual(['serverAuth', 'clientAuth']);
  });

  it('renews a certificate issued before routes were TLS (the client Service alone, serverAuth), and then keeps it', async () => {
    const decide = async (leafPurpose: LeafPurpose) => {
      const { caFacts, leaf } = await issued(leafPurpose);
      return decideCertificates({
        purpose: natsServerPurpose(NAMESPACE),
        ca: caFacts,
        bundle: [caFacts.cert],
        leaf: readLeaf(leaf.certPem, leaf.keyPem, [caFacts.cert]),
        publishedBundles: [],
        nowMs: NOW,
      }).leaf;
    };
    expect(await decide(servingPurpose('nats', NAMESPACE))).toEqual({
      action: 'issue',
      reason: 'NamesChanged',
    });
    expect(await decide({ ...natsServerPurpose(NAMESPACE), extendedKeyUsages: ['serverAuth'] })).toEqual({
      action: 'issue',
      reason: 'UsagesChanged',
    });
    expect(await decide(natsServerPurpose(NAMESPACE))).toEqual({ action: 'keep' });
  });
});
