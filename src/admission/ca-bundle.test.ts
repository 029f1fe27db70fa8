// The webhook configuration's trust as the certificate decision reads it, and the caBundle
// patch: written only where a webhook holds another bundle, always at the version read.
import { describe, expect, it } from 'vitest';
import { readCa, readCertificates, readLeaf } from '../core/instances/certificate-facts.ts';
import {
  bundlePem,
  caValidity,
  decideCertificates,
  leafValidity,
  servingDnsNames,
} from '../core/instances/serving-cert.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { caBundlePatch, publishedBundles, type WebhookConfiguration } from './ca-bundle.ts';

const NOW = Date.parse('2026-12-01T00:00:00Z');
const HOST = servingDnsNames('switchyard-admission', 'switchyard-system')[0] ?? '';
const issuer = x509Issuer();
const b64 = (pem: string) => Buffer.from(pem).toString('base64');

async function ca(nowMs: number) {
  const pair = await issuer.createCa({ commonName: 'switchyard-admission CA', ...caValidity(nowMs) });
  const facts = readCa(pair.certPem, pair.keyPem);
  if (facts === undefined) throw new Error('the CA does not parse');
  return { pair, facts };
}

function configuration(...caBundles: (string | undefined)[]): WebhookConfiguration {
  return {
    metadata: { resourceVersion: '42' },
    webhooks: caBundles.map((caBundle) => ({ clientConfig: caBundle === undefined ? {} : { caBundle } })),
  };
}

describe('publishedBundles', () => {
  it('reads each webhook’s caBundle as the fingerprints it trusts; a missing or garbled one trusts none', async () => {
    const { facts } = await ca(NOW);
    expect(publishedBundles(configuration(b64(facts.cert.pem), undefined, b64('not a certificate')))).toEqual(
      [[facts.cert.fingerprint], [], []],
    );
    expect(publishedBundles(undefined)).toEqual([]);
  });
});

describe('caBundlePatch', () => {
  it('writes nothing when every webhook already holds the bundle (a steady state is one read)', async () => {
    const { facts } = await ca(NOW);
    const pem = bundlePem([facts.cert]);
    expect(caBundlePatch(configuration(b64(pem), b64(pem)), pem)).toBeUndefined();
  });

  it('patches only the webhooks that hold another bundle, at the version read', async () => {
    const { facts } = await ca(NOW);
    const pem = bundlePem([facts.cert]);
    expect(caBundlePatch(configuration(b64(pem), undefined, b64('old')), pem)).toEqual([
      { op: 'replace', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/webhooks/1/clientConfig/caBundle', value: b64(pem) },
      { op: 'add', path: '/webhooks/2/clientConfig/caBundle', value: b64(pem) },
    ]);
  });

  it('refuses to patch a configuration read without a version (the precondition would be lost)', () => {
    expect(() => caBundlePatch({ webhooks: [{ clientConfig: {} }] }, 'x')).toThrow(/resourceVersion/);
  });
});

describe('a CA rotation seen through the webhook configuration', () => {
  it('keeps serving from the old CA until every webhook’s caBundle holds the new one, then moves', async () => {
    const old = await ca(NOW - 9 * 365 * 24 * 3600_000);
    const leaf = await issuer.issueServing({
      ca: old.pair,
      dnsNames: [HOST],
      ...leafValidity(old.facts.cert, NOW - 3600_000),
    });
    const fresh = await ca(NOW);
    const bundle = readCertificates(bundlePem([fresh.facts.cert, old.facts.cert])) ?? [];
    const decide = (config: WebhookConfiguration, nowMs: number) =>
      decideCertificates({
        purpose: { dnsNames: [HOST], extendedKeyUsages: ['serverAuth'] },
        ca: fresh.facts,
        bundle,
        leaf: readLeaf(leaf.certPem, leaf.keyPem, bundle),
        publishedBundles: publishedBundles(config),
        nowMs,
      });
    const both = b64(bundlePem(bundle));
    const later = NOW + 3600_000;
    expect(decide(configuration(both, b64(old.facts.cert.pem)), later).leaf).toEqual({
      action: 'wait',
      reason: 'NewCaNotYetTrusted',
    });
    expect(decide(configuration(both, both), later).leaf).toEqual({
      action: 'issue',
      reason: 'NewCaTrusted',
    });
    // The old CA stays in what is published while it is valid: a replica still serving from it is trusted.
    expect(decide(configuration(both, both), later).bundle.map((c) => c.fingerprint)).toEqual([
      fresh.facts.cert.fingerprint,
      old.facts.cert.fingerprint,
    ]);
  });
});
