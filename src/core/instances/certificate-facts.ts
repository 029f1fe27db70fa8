// What the serving-certificate decisions read from PEM text, as plain data. Parsing is Node's
// own X.509 parser (node:crypto X509Certificate): pure computation, no I/O, so it stays in core,
// and the decisions in serving-cert.ts take only the facts it yields.
import { createPrivateKey, X509Certificate } from 'node:crypto';

export interface CertificateFacts {
  pem: string;
  /** SHA-256 fingerprint, as Node formats it (colon-separated hex): the certificate's identity. */
  fingerprint: string;
  notBeforeMs: number;
  notAfterMs: number;
  dnsNames: string[];
  /** Its ExtendedKeyUsage by name; an OID this project does not name stays an OID. */
  extendedKeyUsages: string[];
  isCa: boolean;
}

/**
 * What a leaf may prove (ExtendedKeyUsage): `serverAuth` to serve TLS, `clientAuth` to present
 * itself as a TLS client too, as a NATS server does on the routes it dials.
 */
export type ExtendedKeyUsage = 'serverAuth' | 'clientAuth';

const EXTENDED_KEY_USAGE_OIDS: Readonly<Record<string, ExtendedKeyUsage>> = {
  '1.3.6.1.5.5.7.3.1': 'serverAuth',
  '1.3.6.1.5.5.7.3.2': 'clientAuth',
};

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/** Every certificate in a PEM bundle, in order; undefined when any block does not parse. */
export function readCertificates(pem: string): CertificateFacts[] | undefined {
  const blocks = pem.match(PEM_CERTIFICATE) ?? [];
  const facts: CertificateFacts[] = [];
  for (const block of blocks) {
    const parsed = parse(block);
    if (parsed === undefined) return undefined;
    facts.push(factsOf(`${block}\n`, parsed));
  }
  return facts;
}

/** The single certificate in `pem`, or undefined when there is not exactly one that parses. */
export function readCertificate(pem: string): CertificateFacts | undefined {
  const all = readCertificates(pem);
  return all?.length === 1 ? all[0] : undefined;
}

/** Whether `keyPem` is the private key of the certificate in `certPem` (false if either is unreadable). */
export function keyMatches(certPem: string, keyPem: string): boolean {
  const cert = parse(certPem);
  if (cert === undefined) return false;
  try {
    return cert.checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    return false;
  }
}

/** Whether `ca` signed `leaf`: the issuer name matches and the signature verifies with the CA's key. */
export function issuedBy(leafPem: string, caPem: string): boolean {
  const leaf = parse(leafPem);
  const ca = parse(caPem);
  return leaf !== undefined && ca !== undefined && leaf.checkIssued(ca) && leaf.verify(ca.publicKey);
}

function parse(pem: string): X509Certificate | undefined {
  try {
    return new X509Certificate(pem);
  } catch {
    return undefined;
  }
}

function factsOf(pem: string, cert: X509Certificate): CertificateFacts {
  return {
    pem,
    fingerprint: cert.fingerprint256,
    notBeforeMs: cert.validFromDate.getTime(),
    notAfterMs: cert.validToDate.getTime(),
    dnsNames: dnsNamesOf(cert.subjectAltName),
    extendedKeyUsages: (cert.keyUsage ?? []).map((oid) => EXTENDED_KEY_USAGE_OIDS[oid] ?? oid),
    isCa: cert.ca,
  };
}

/** Node renders SANs as `DNS:a, DNS:b, IP Address:…`; DNS names never contain ", " or quotes. */
function dnsNamesOf(subjectAltName: string | undefined): string[] {
  if (subjectAltName === undefined) return [];
  return subjectAltName
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice('DNS:'.length));
}

/** The CA Secret's certificate and key as the decision reads them; undefined when unreadable. */
export function readCa(certPem: string | undefined, keyPem: string | undefined) {
  const cert = certPem === undefined ? undefined : readCertificate(certPem);
  if (cert === undefined || keyPem === undefined) return undefined;
  return { cert, keyMatches: keyMatches(cert.pem, keyPem) };
}

/** The serving Secret's leaf, with which of `cas` (current CA and bundle) signed it. */
export function readLeaf(
  certPem: string | undefined,
  keyPem: string | undefined,
  cas: readonly CertificateFacts[],
) {
  const cert = certPem === undefined ? undefined : readCertificate(certPem);
  if (cert === undefined) return undefined;
  return {
    cert,
    keyMatches: keyPem !== undefined && keyMatches(cert.pem, keyPem),
    issuerFingerprint: cas.find((ca) => issuedBy(cert.pem, ca.pem))?.fingerprint,
  };
}
