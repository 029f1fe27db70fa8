// The bundled NATS server's certificate (deploy/nats, docs/bus.md "TLS to NATS"): a CA of its own
// and a serving certificate for the client Service `nats`, made by the project's issuer in the
// same decide-then-write sequence as an instance's (src/handlers/instances/certificates.ts), run
// by the nats-credentials Job with `--server-certificate` (deploy/default adds it). The serving
// Secret holds tls.crt, tls.key and the trust bundle ca.crt: the server mounts all three, every
// client ca.crt alone. The CA's key stays in its own Secret, which nothing mounts.
//
// Renewal happens when the Job runs again (a year's leaf, renewed after two thirds of it), and
// the server serves the new files after a reload (docs/install.md).
import type { V1Secret } from '@kubernetes/client-node';
import { tlsSecretOf } from '../core/instances/serving-cert.ts';
import { type CertificatesEnsured, ensureCertificates } from '../handlers/instances/certificates.ts';
import { secretReader } from '../handlers/instances/secrets.ts';
import type { WritesClient } from '../kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';

/** The server's certificate, key and trust bundle (`kubernetes.io/tls`, plus `ca.crt`). */
export const NATS_TLS_SECRET = 'switchyard-nats-tls';
/** The CA's certificate and key; only this Job reads it. */
export const NATS_CA_KEY_SECRET = 'switchyard-nats-ca-key';
/** The client Service the certificate names (`nats.<namespace>.svc`, the host of deploy/'s nats.url). */
const NATS_SERVICE = 'nats';

/** Creates or renews the server's certificate in `namespace`; a second run with nothing due writes nothing. */
export function ensureNatsServerCertificate(
  writes: WritesClient,
  namespace: string,
  nowMs: number,
  signal: AbortSignal,
): Promise<CertificatesEnsured> {
  return ensureCertificates(
    {
      secrets: secretReader(writes),
      writer: new KubeWriter(writes, fieldManagerFor('nats-credentials')),
      issuer: x509Issuer(),
    },
    {
      instance: NATS_SERVICE,
      caCommonName: 'switchyard NATS CA',
      namespace,
      service: NATS_SERVICE,
      caSecret: tlsSecret(NATS_CA_KEY_SECRET, namespace),
      servingSecret: tlsSecret(NATS_TLS_SECRET, namespace),
      // No target publishes this CA: clients read ca.crt from the Secret itself.
      publishedBundles: [],
      nowMs,
      signal,
    },
  );
}

function tlsSecret(name: string, namespace: string): V1Secret {
  return tlsSecretOf({
    name,
    namespace,
    labels: { 'app.kubernetes.io/part-of': 'switchyard', 'app.kubernetes.io/component': 'nats' },
  });
}
