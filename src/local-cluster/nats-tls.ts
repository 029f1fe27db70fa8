// The local stack's NATS certificates, made by the project's own issuer (src/tls/x509-issuer.ts)
// as the server's Secret holds them in a cluster: `ca.crt`, `tls.crt`, `tls.key` in one directory
// (deploy/'s `switchyard-nats-tls`, mounted at /etc/nats/tls). The serving certificate names
// 127.0.0.1 and localhost, where the local server listens and where a cluster's routes dial, and
// deploy/'s Service name for it (`nats.switchyard-system.svc`), which an operator's command
// verifies when it reaches the server through a port-forward to that Service; it is a client
// certificate too: a route's TLS verifies both ends (`natsRouteTlsConfig`).
//
// Rotation replaces the certificate and key files (each written aside and renamed over the old
// one, so a reload never reads half a file) under the same CA; the server picks them up at its
// next configuration reload (`NatsServer.reload()`), without a restart: new connections get the
// new certificate, existing ones keep theirs.
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DEFAULT_OPERATOR_NAMESPACE } from '../api/constants.ts';
import { readCa } from '../core/instances/certificate-facts.ts';
import { caValidity, type KeyPair, leafValidity } from '../core/instances/serving-cert.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';

/** Where the server and the clients find the files (what `nats.tls.caFile` names). */
export interface NatsTlsPaths {
  caFile: string;
  certFile: string;
  keyFile: string;
}

const issuer = x509Issuer();
/** deploy/'s client Service for the server, in the namespace the local stack installs into. */
export const NATS_SERVICE_HOST = `nats.${DEFAULT_OPERATOR_NAMESPACE}.svc`;

export class LocalNatsTls {
  readonly paths: NatsTlsPaths;
  /** The CA's certificate, PEM: what a client trusts. */
  readonly caPem: string;
  private readonly ca: KeyPair;

  private constructor(dir: string, ca: KeyPair) {
    this.paths = {
      caFile: join(dir, 'ca.crt'),
      certFile: join(dir, 'tls.crt'),
      keyFile: join(dir, 'tls.key'),
    };
    this.ca = ca;
    this.caPem = ca.certPem;
  }

  /** A new CA and a first serving certificate, written into `dir`. */
  static async create(dir: string, nowMs: number): Promise<LocalNatsTls> {
    await mkdir(dir, { recursive: true });
    const ca = await issuer.createCa({ commonName: 'switchyard local NATS CA', ...caValidity(nowMs) });
    const tls = new LocalNatsTls(dir, ca);
    await writeAtomically(tls.paths.caFile, ca.certPem);
    await tls.issue(nowMs);
    return tls;
  }

  /** A new serving certificate and key from the same CA, replacing the files; returns the certificate. */
  async issue(nowMs: number): Promise<string> {
    const caFacts = readCa(this.ca.certPem, this.ca.keyPem);
    if (caFacts === undefined) throw new Error('the local NATS CA does not parse');
    const leaf = await issuer.issueServing({
      ca: this.ca,
      dnsNames: ['localhost', NATS_SERVICE_HOST],
      ipAddresses: ['127.0.0.1'],
      extendedKeyUsages: ['serverAuth', 'clientAuth'],
      ...leafValidity(caFacts.cert, nowMs),
    });
    // The key first: a reload between the two renames would pair the new key with the old
    // certificate and fail, keeping the old pair (nats-server refuses a reload it cannot apply).
    await writeAtomically(this.paths.keyFile, leaf.keyPem, 0o600);
    await writeAtomically(this.paths.certFile, leaf.certPem);
    return leaf.certPem;
  }
}

/** The server's `tls {}` block: clients are not asked for certificates (users and passwords authenticate them). */
export function natsTlsConfig(paths: NatsTlsPaths): string {
  return [
    'tls {',
    `  cert_file: "${paths.certFile}"`,
    `  key_file: "${paths.keyFile}"`,
    `  ca_file: "${paths.caFile}"`,
    '  verify: false',
    '  timeout: 2',
    '}',
  ].join('\n');
}

/**
 * The `tls {}` block inside a server's `cluster {}`: routes in TLS, the same files. nats-server
 * verifies both ends of a route whatever `verify` says (the dialler checks the peer against the
 * host it dials, the peer checks the dialler's client certificate, both against ca_file); it is
 * written out so the configuration says what happens. A peer without a certificate of the CA,
 * or without TLS, never joins.
 */
export function natsRouteTlsConfig(paths: NatsTlsPaths): string {
  return [
    '  tls {',
    `    cert_file: "${paths.certFile}"`,
    `    key_file: "${paths.keyFile}"`,
    `    ca_file: "${paths.caFile}"`,
    '    verify: true',
    '    timeout: 2',
    '  }',
  ].join('\n');
}

async function writeAtomically(file: string, content: string, mode = 0o644): Promise<void> {
  const aside = `${file}.new`;
  await writeFile(aside, content, { mode });
  await rename(aside, file);
}
