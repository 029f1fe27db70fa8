// The issuer against the facts reader and Node's own TLS stack: what it makes must parse,
// chain to its CA, match its key, carry the service name, and be accepted by a TLS client
// that trusts only the bundle (what the apiserver does with a target's caBundle).
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { connect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { describe, expect, it } from 'vitest';
import { issuedBy, readCa, readCertificates, readLeaf } from '../core/instances/certificate-facts.ts';
import {
  caValidity,
  decideCertificates,
  leafValidity,
  servingDnsNames,
} from '../core/instances/serving-cert.ts';
import { x509Issuer } from './x509-issuer.ts';

const NOW = Date.now();
const HOST = servingDnsNames('blue-webhook-server', 'switchyard-system')[0] ?? '';
const issuer = x509Issuer();

async function issue() {
  const ca = await issuer.createCa({ commonName: 'switchyard blue CA', ...caValidity(NOW) });
  const caFacts = readCa(ca.certPem, ca.keyPem);
  if (caFacts === undefined) throw new Error('the CA does not parse');
  const leaf = await issuer.issueServing({ ca, dnsNames: [HOST], ...leafValidity(caFacts.cert, NOW) });
  return { ca, caFacts, leaf };
}

describe('x509Issuer', () => {
  it('makes a CA and a serving certificate the decisions accept as healthy', async () => {
    const { ca, caFacts, leaf } = await issue();
    expect(caFacts).toMatchObject({ keyMatches: true, cert: { isCa: true } });
    const leafFacts = readLeaf(leaf.certPem, leaf.keyPem, [caFacts.cert]);
    expect(leafFacts).toMatchObject({
      keyMatches: true,
      issuerFingerprint: caFacts.cert.fingerprint,
      cert: { dnsNames: [HOST], isCa: false },
    });
    expect(issuedBy(leaf.certPem, ca.certPem)).toBe(true);
    const d = decideCertificates({
      purpose: { dnsNames: [HOST], extendedKeyUsages: ['serverAuth'] },
      ca: caFacts,
      bundle: [caFacts.cert],
      leaf: leafFacts,
      publishedBundles: [[caFacts.cert.fingerprint]],
      nowMs: NOW,
    });
    expect(d).toMatchObject({ ca: { action: 'keep' }, leaf: { action: 'keep' } });
  });

  it('a leaf from another CA is not issued by this one, and a foreign key does not match', async () => {
    const a = await issue();
    const b = await issue();
    expect(issuedBy(a.leaf.certPem, b.ca.certPem)).toBe(false);
    expect(readLeaf(a.leaf.certPem, b.leaf.keyPem, [a.caFacts.cert])?.keyMatches).toBe(false);
  });

  it('reads a two-CA bundle in order', async () => {
    const a = await issue();
    const b = await issue();
    const bundle = readCertificates(`${b.ca.certPem}\n${a.ca.certPem}\n`);
    expect(bundle?.map((c) => c.fingerprint)).toEqual([
      b.caFacts.cert.fingerprint,
      a.caFacts.cert.fingerprint,
    ]);
  });

  it('reads a damaged certificate as unreadable, never as a partial bundle', async () => {
    const { ca } = await issue();
    // A line of the body lost: the DER no longer parses (damage to the signature alone would).
    const lines = ca.certPem.trim().split('\n');
    const damaged = `${[...lines.slice(0, 2), ...lines.slice(3)].join('\n')}\n`;
    expect(readCertificates(`${ca.certPem}${damaged}`)).toBeUndefined();
    expect(readCa(damaged, ca.keyPem)).toBeUndefined();
  });

  it('serves TLS that a client trusting only the bundle verifies for <service>.<namespace>.svc', async () => {
    const { ca, leaf } = await issue();
    const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => res.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      const socket = connect({ host: '127.0.0.1', port, servername: HOST, ca: ca.certPem });
      await once(socket, 'secureConnect');
      expect(socket.authorized).toBe(true);
      socket.destroy();
    } finally {
      server.close();
    }
  });

  it('an IP address in the request is served as an IP SAN, which a client dialling that address verifies', async () => {
    const ca = await issuer.createCa({ commonName: 'switchyard nats CA', ...caValidity(NOW) });
    const caFacts = readCa(ca.certPem, ca.keyPem);
    if (caFacts === undefined) throw new Error('the CA does not parse');
    const leaf = await issuer.issueServing({
      ca,
      dnsNames: ['localhost'],
      ipAddresses: ['127.0.0.1'],
      ...leafValidity(caFacts.cert, NOW),
    });
    const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (_req, res) => res.end('ok'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      // No servername: Node checks the address dialled against the certificate's IP SANs.
      const socket = connect({ host: '127.0.0.1', port, ca: ca.certPem });
      await once(socket, 'secureConnect');
      expect(socket.authorized).toBe(true);
      socket.destroy();
    } finally {
      server.close();
    }
  });

  it('serves TLS only by default: serverAuth is its one ExtendedKeyUsage', async () => {
    const { caFacts, leaf } = await issue();
    expect(readLeaf(leaf.certPem, leaf.keyPem, [caFacts.cert])?.cert.extendedKeyUsages).toEqual([
      'serverAuth',
    ]);
  });

  it('with clientAuth asked for, carries both usages and every name asked for, wildcards included', async () => {
    const { ca, caFacts } = await issue();
    const dnsNames = ['nats.switchyard-system.svc', '*.nats-headless.switchyard-system.svc'];
    const leaf = await issuer.issueServing({
      ca,
      dnsNames,
      extendedKeyUsages: ['serverAuth', 'clientAuth'],
      ...leafValidity(caFacts.cert, NOW),
    });
    expect(readLeaf(leaf.certPem, leaf.keyPem, [caFacts.cert])?.cert).toMatchObject({
      dnsNames,
      extendedKeyUsages: ['serverAuth', 'clientAuth'],
    });
  });

  // What a NATS route's TLS does at the accepting end: the dialler's certificate is a client
  // certificate, verified against the CA, and refused when it may not be used as one.
  it('a clientAuth leaf is accepted as a client certificate; a serverAuth-only one is refused', async () => {
    const { ca, caFacts, leaf: serverOnly } = await issue();
    const both = await issuer.issueServing({
      ca,
      dnsNames: [HOST],
      extendedKeyUsages: ['serverAuth', 'clientAuth'],
      ...leafValidity(caFacts.cert, NOW),
    });
    const server = createTlsServer({
      cert: both.certPem,
      key: both.keyPem,
      ca: ca.certPem,
      requestCert: true,
      rejectUnauthorized: false,
    });
    const verdicts: { authorized: boolean; error: string | undefined }[] = [];
    server.on('secureConnection', (socket: TLSSocket) => {
      verdicts.push({ authorized: socket.authorized, error: socket.authorizationError?.toString() });
      socket.end();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    try {
      const { port } = server.address() as AddressInfo;
      for (const client of [both, serverOnly]) {
        const socket = connect({
          host: '127.0.0.1',
          port,
          servername: HOST,
          ca: ca.certPem,
          cert: client.certPem,
          key: client.keyPem,
        });
        await once(socket, 'secureConnect');
        await once(socket, 'close');
      }
      expect(verdicts).toEqual([
        { authorized: true, error: undefined },
        { authorized: false, error: 'INVALID_PURPOSE' },
      ]);
    } finally {
      server.close();
    }
  });
});
