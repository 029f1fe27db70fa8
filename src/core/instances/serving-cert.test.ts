import { describe, expect, it } from 'vitest';
import type { CertificateFacts, ExtendedKeyUsage } from './certificate-facts.ts';
import {
  type CertificateInput,
  DEFAULT_CERTIFICATE_POLICY,
  decideCertificates,
  leafValidity,
  trustBundle,
} from './serving-cert.ts';

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.UTC(2026, 0, 1);
const HOST = 'blue-webhook-server.switchyard-system.svc';

function cert(
  fingerprint: string,
  notBeforeMs: number,
  days: number,
  over: Partial<CertificateFacts> = {},
): CertificateFacts {
  return {
    pem: `<${fingerprint}>`,
    fingerprint,
    notBeforeMs,
    notAfterMs: notBeforeMs + days * DAY,
    dnsNames: [],
    extendedKeyUsages: [],
    isCa: false,
    ...over,
  };
}

const ca = (fp: string, issuedDaysAgo = 100) => cert(fp, NOW - issuedDaysAgo * DAY, 3650, { isCa: true });
const leaf = (issuer: string, issuedDaysAgo = 10, over: Partial<CertificateFacts> = {}) => ({
  cert: cert(`leaf-of-${issuer}`, NOW - issuedDaysAgo * DAY, 365, {
    dnsNames: [HOST],
    extendedKeyUsages: ['serverAuth'],
    ...over,
  }),
  keyMatches: true,
  issuerFingerprint: issuer,
});

const purpose = (dnsNames: string[], ...extendedKeyUsages: ExtendedKeyUsage[]) => ({
  dnsNames,
  extendedKeyUsages,
});

function input(over: Partial<CertificateInput>): CertificateInput {
  const current = ca('ca1');
  return {
    purpose: purpose([HOST], 'serverAuth'),
    ca: { cert: current, keyMatches: true },
    bundle: [current],
    leaf: leaf('ca1'),
    publishedBundles: [['ca1']],
    nowMs: NOW,
    ...over,
  };
}

describe('decideCertificates: the CA', () => {
  it.each([
    { name: 'missing', over: { ca: undefined }, expected: { action: 'create', reason: 'Missing' } },
    {
      name: 'key does not match',
      over: { ca: { cert: ca('ca1'), keyMatches: false } },
      expected: { action: 'create', reason: 'KeyMismatch' },
    },
    {
      name: 'not a CA certificate',
      over: { ca: { cert: cert('x', NOW - DAY, 3650), keyMatches: true } },
      expected: { action: 'create', reason: 'KeyMismatch' },
    },
    {
      name: 'in its last fifth (2 years left of 10)',
      over: { ca: { cert: ca('ca1', 8 * 365 + 3), keyMatches: true } },
      expected: { action: 'create', reason: 'Expiring' },
    },
    { name: 'healthy', over: {}, expected: { action: 'keep' } },
  ])('$name → $expected.action', ({ over, expected }) => {
    expect(decideCertificates(input(over)).ca).toEqual(expected);
  });

  it('issues no leaf while the CA must be created first', () => {
    expect(decideCertificates(input({ ca: undefined })).leaf).toBeUndefined();
  });

  it('carries the replaced CA into the bundle, so its leaf keeps being trusted across the change', () => {
    const old = ca('ca1', 8 * 365 + 3);
    const d = decideCertificates(input({ ca: { cert: old, keyMatches: true }, bundle: [old] }));
    expect(d.bundle.map((c) => c.fingerprint)).toEqual(['ca1']);
  });
});

describe('decideCertificates: the serving certificate', () => {
  it.each([
    { name: 'missing', over: { leaf: undefined }, expected: { action: 'issue', reason: 'Missing' } },
    {
      name: 'key does not match',
      over: { leaf: { ...leaf('ca1'), keyMatches: false } },
      expected: { action: 'issue', reason: 'KeyMismatch' },
    },
    { name: 'expired', over: { leaf: leaf('ca1', 400) }, expected: { action: 'issue', reason: 'Expired' } },
    {
      name: 'SANs lack <service>.<namespace>.svc (the namespace changed)',
      over: { leaf: leaf('ca1', 10, { dnsNames: ['blue-webhook-server.old-ns.svc'] }) },
      expected: { action: 'issue', reason: 'NamesChanged' },
    },
    {
      name: 'SANs name more than it is issued for',
      over: { leaf: leaf('ca1', 10, { dnsNames: [HOST, 'blue.example.com'] }) },
      expected: { action: 'issue', reason: 'NamesChanged' },
    },
    {
      name: 'issued before its purpose grew names (deploy/nats: the route names on the headless Service)',
      over: {
        purpose: purpose([HOST, '*.nats-headless.switchyard-system.svc'], 'serverAuth'),
      },
      expected: { action: 'issue', reason: 'NamesChanged' },
    },
    {
      name: 'the same names in another order',
      over: {
        purpose: purpose(['b.svc', HOST], 'serverAuth'),
        leaf: leaf('ca1', 10, { dnsNames: [HOST, 'b.svc'] }),
      },
      expected: { action: 'keep' },
    },
    {
      name: 'serverAuth alone where routes need clientAuth too',
      over: { purpose: purpose([HOST], 'serverAuth', 'clientAuth') },
      expected: { action: 'issue', reason: 'UsagesChanged' },
    },
    {
      name: 'no ExtendedKeyUsage at all (a certificate made elsewhere)',
      over: { leaf: leaf('ca1', 10, { extendedKeyUsages: [] }) },
      expected: { action: 'issue', reason: 'UsagesChanged' },
    },
    {
      name: 'a usage more than it is issued for',
      over: { leaf: leaf('ca1', 10, { extendedKeyUsages: ['serverAuth', 'clientAuth'] }) },
      expected: { action: 'issue', reason: 'UsagesChanged' },
    },
    {
      name: 'two thirds of its year gone',
      over: { leaf: leaf('ca1', 244) },
      expected: { action: 'issue', reason: 'Expiring' },
    },
    {
      name: 'healthy, just before the renewal point',
      over: { leaf: leaf('ca1', 243) },
      expected: { action: 'keep' },
    },
    {
      name: 'signed by a CA nobody trusts any more',
      over: { leaf: leaf('lost-ca') },
      expected: { action: 'issue', reason: 'UntrustedIssuer' },
    },
  ])('$name → $expected.action', ({ over, expected }) => {
    expect(decideCertificates(input(over)).leaf).toEqual(expected);
  });

  describe('across a CA change', () => {
    const newCa = ca('ca2', 1);
    const oldCa = ca('ca1', 8 * 365 + 3);
    const rotating = (published: string[][]) =>
      input({
        ca: { cert: newCa, keyMatches: true },
        bundle: [oldCa],
        leaf: leaf('ca1'),
        publishedBundles: published,
      });

    it('publishes both CAs, the new one first', () => {
      expect(decideCertificates(rotating([['ca1']])).bundle.map((c) => c.fingerprint)).toEqual([
        'ca2',
        'ca1',
      ]);
    });

    it('keeps the old leaf while a target does not trust the new CA yet: switching now would fail its conversions', () => {
      expect(decideCertificates(rotating([['ca2', 'ca1'], ['ca1']])).leaf).toEqual({
        action: 'wait',
        reason: 'NewCaNotYetTrusted',
      });
    });

    it('keeps an old leaf past its renewal point while a target does not trust the new CA: it is still valid', () => {
      const d = decideCertificates({ ...rotating([['ca1']]), leaf: leaf('ca1', 300) });
      expect(d.leaf).toEqual({ action: 'wait', reason: 'NewCaNotYetTrusted' });
    });

    it('replaces an expired old leaf at once: it serves nobody any more', () => {
      expect(decideCertificates({ ...rotating([['ca1']]), leaf: leaf('ca1', 400) }).leaf).toEqual({
        action: 'issue',
        reason: 'Expired',
      });
    });

    it('moves the leaf to the new CA once every target trusts it', () => {
      expect(
        decideCertificates(
          rotating([
            ['ca2', 'ca1'],
            ['ca2', 'ca1'],
          ]),
        ).leaf,
      ).toEqual({ action: 'issue', reason: 'NewCaTrusted' });
    });

    it('moves at once when no target names the instance', () => {
      expect(decideCertificates(rotating([])).leaf).toEqual({ action: 'issue', reason: 'NewCaTrusted' });
    });

    it('waits until the new CA has been in the bundle for the overlap, and says when to look again', () => {
      // A target on its way to the instance names it only once its patch lands, maybe with the
      // bundle read before the change: the overlap gives the instances handler time to see it.
      const created = NOW - 60_000;
      const fresh = cert('ca2', created - DEFAULT_CERTIFICATE_POLICY.backdateMs, 3650, { isCa: true });
      const d = decideCertificates({ ...rotating([['ca2', 'ca1']]), ca: { cert: fresh, keyMatches: true } });
      expect(d.leaf).toEqual({ action: 'wait', reason: 'NewCaNotYetTrusted' });
      expect(d.recheckAtMs).toBe(created + DEFAULT_CERTIFICATE_POLICY.trustOverlapMs);
      const later = decideCertificates({
        ...rotating([['ca2', 'ca1']]),
        ca: { cert: fresh, keyMatches: true },
        nowMs: created + DEFAULT_CERTIFICATE_POLICY.trustOverlapMs,
      });
      expect(later.leaf).toEqual({ action: 'issue', reason: 'NewCaTrusted' });
    });
  });

  it('re-checks at the earliest point time alone changes the answer: the leaf renewal here', () => {
    const d = decideCertificates(input({}));
    const l = leaf('ca1');
    expect(d.recheckAtMs).toBe(l.cert.notBeforeMs + Math.floor(365 * DAY * (2 / 3)));
  });
});

describe('trustBundle', () => {
  it('drops expired and duplicate CAs, current first', () => {
    const current = ca('c', 0);
    const expired = cert('e', NOW - 4000 * DAY, 3650, { isCa: true });
    const older = ca('o', 3000);
    expect(trustBundle(current, [older, current, expired, older], NOW).map((c) => c.fingerprint)).toEqual([
      'c',
      'o',
    ]);
  });
});

describe('leafValidity', () => {
  it('is backdated for lagging clocks and never outlives its CA', () => {
    const shortCa = cert('ca', NOW - DAY, 30, { isCa: true });
    expect(leafValidity(shortCa, NOW)).toEqual({
      notBeforeMs: NOW - DEFAULT_CERTIFICATE_POLICY.backdateMs,
      notAfterMs: shortCa.notAfterMs,
    });
  });
});
