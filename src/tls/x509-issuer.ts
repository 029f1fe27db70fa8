// The certificate issuer: a self-managed CA and serving certificates, made in-process with
// @peculiar/x509 over Node's WebCrypto (Node's crypto makes keys but not certificates; no
// openssl subprocess, no cert-manager). Decisions about when and for how long live in
// core/instances/serving-cert.ts; this file only makes what it is asked for.
//
// Keys are ECDSA P-256 with SHA-256 signatures: accepted by the apiserver's Go TLS client and by
// Node's, generated in milliseconds (RSA-2048 takes ~100 ms a key), and small in a caBundle.
// tsyringe (a dependency of @peculiar/x509) needs the reflect-metadata polyfill loaded first.
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { ExtendedKeyUsage } from '../core/instances/certificate-facts.ts';
import type { CertificateIssuer, KeyPair } from '../core/instances/serving-cert.ts';

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const crypto = webcrypto;

export function x509Issuer(): CertificateIssuer {
  return { createCa, issueServing };
}

async function createCa(request: {
  commonName: string;
  notBeforeMs: number;
  notAfterMs: number;
}): Promise<KeyPair> {
  const keys = await generateKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: [{ CN: [request.commonName] }],
      notBefore: new Date(request.notBeforeMs),
      notAfter: new Date(request.notAfterMs),
      signingAlgorithm: ALGORITHM,
      keys,
      extensions: [
        // pathLen 0: this CA signs serving certificates, never another CA.
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

async function issueServing(request: {
  ca: KeyPair;
  dnsNames: readonly string[];
  ipAddresses?: readonly string[];
  extendedKeyUsages?: readonly ExtendedKeyUsage[];
  notBeforeMs: number;
  notAfterMs: number;
}): Promise<KeyPair> {
  const ca = new x509.X509Certificate(request.ca.certPem);
  const caKey = await crypto.subtle.importKey(
    'pkcs8',
    x509.PemConverter.decodeFirst(request.ca.keyPem),
    ALGORITHM,
    false,
    ['sign'],
  );
  const keys = await generateKeys();
  const [first] = request.dnsNames;
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: first === undefined ? [] : [{ CN: [first] }],
      issuer: ca.subject,
      notBefore: new Date(request.notBeforeMs),
      notAfter: new Date(request.notAfterMs),
      signingAlgorithm: ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: caKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension(
          (request.extendedKeyUsages ?? ['serverAuth']).map((usage) => x509.ExtendedKeyUsage[usage]),
          false,
        ),
        new x509.SubjectAlternativeNameExtension(
          [
            ...request.dnsNames.map((value) => ({ type: 'dns' as const, value })),
            ...(request.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
          ],
          false,
        ),
        await x509.AuthorityKeyIdentifierExtension.create(ca, false, crypto),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { certPem: cert.toString('pem'), keyPem: await privateKeyPem(keys.privateKey) };
}

async function generateKeys(): Promise<webcrypto.CryptoKeyPair> {
  return crypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

/** 128 random bits, top bit clear so the DER integer is positive (RFC 5280 §4.1.2.2). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] ?? 0) & 0x7f;
  return bytes.toString('hex');
}
