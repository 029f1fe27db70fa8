// The bundled NATS server's certificate (deploy/nats, docs/bus.md "TLS to NATS"): a CA of its own
// and a certificate for the client Service `nats` and for the routes between deploy/nats-cluster's
// servers, made by the project's issuer in the same decide-then-write sequence as an instance's
// (src/handlers/instances/certificates.ts), run by the nats-credentials Job with
// `--server-certificate` (deploy/default adds it). The serving
// Secret holds tls.crt, tls.key and the trust bundle ca.crt: the server mounts all three, every
// client ca.crt alone. The CA's key stays in its own Secret, which nothing mounts.
//
// Routes are TLS verified at both ends (nats-server forces it on a cluster's `tls {}`): a server
// dialling a route checks the peer's certificate against the host it dials, and the peer checks
// the dialler's as a client certificate. So the one certificate names the Pods' names on the
// headless Service (`nats-N.nats-headless.<namespace>.svc`, as nats.conf's routes dial them, by a
// wildcard, which Go's verifier matches to exactly one leftmost label; and the `.cluster.local`
// form of the same) and carries clientAuth beside serverAuth. A certificate from before that
// is renewed by the next run (its names and usages differ: core/instances/serving-cert.ts).
//
// Renewal happens when the Job's command runs again (a year's leaf, renewed after two thirds of
// it): deploy/default runs it daily as a CronJob, and each NATS Pod's reloader sidecar
// (src/nats-pod/reloader.ts) signals the server to serve the new files (docs/install.md).
import type { V1Secret } from '@kubernetes/client-node';
import { type LeafPurpose, tlsSecretOf } from '../core/instances/serving-cert.ts';
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
/** deploy/nats-cluster's headless Service, whose Pod names the routes dial. */
const NATS_HEADLESS_SERVICE = 'nats-headless';

/** The client Service's name, then every Pod's name on the headless Service; serving and dialling routes. */
export function natsServerPurpose(namespace: string): LeafPurpose {
  const pods = `*.${NATS_HEADLESS_SERVICE}.${namespace}.svc`;
  return {
    dnsNames: [`${NATS_SERVICE}.${namespace}.svc`, pods, `${pods}.cluster.local`],
    extendedKeyUsages: ['serverAuth', 'clientAuth'],
  };
}

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
      purpose: natsServerPurpose(namespace),
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
