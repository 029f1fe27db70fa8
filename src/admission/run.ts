import { KubeConfig } from '@kubernetes/client-node';
import { loadConfig } from '../config/load.ts';
import { operatorNamespace } from '../handlers/operator-namespace.ts';
import { createKubeClients } from '../kube/clients.ts';
import { listenPort } from '../runtime/listen-port.ts';
import { createLogger } from '../runtime/logger.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { apiserverReader } from './cluster-read.ts';
import { CertificateKeeper, certificatePass } from './own-certificate.ts';
import { AdmissionServer } from './server.ts';

const COMPONENT = 'admission';

/** The container port of deploy/admission/deployment.yaml; the Service's targetPort. */
const CONTAINER_PORT = 9443;

/**
 * How often a replica checks its certificate, the Secrets and the caBundle while all is well:
 * three reads, so a deleted Secret or a caBundle someone overwrote is repaired within 30 s.
 * Renewal itself is months ahead of expiry (core/instances/serving-cert.ts) and needs no haste.
 */
const CERTIFICATE_CHECK_MS = 30_000;
/** Until there is a pair to serve and a webhook configuration to publish its CA to. */
const CERTIFICATE_RETRY_MS = 5_000;

/**
 * The admission worker: one HTTPS server, reading on the informers client only, and the keeper
 * of its own serving certificate on the writes client (own-certificate.ts): the only writes its
 * ServiceAccount may make are to its two Secrets and to the webhook configuration's caBundle.
 * Any number of replicas answer alike.
 */
export async function runAdmission(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = createLogger(config.log, COMPONENT);
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: COMPONENT, kubernetes: config.kubernetes });
  const stopping = new AbortController();
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  }).then(() => stopping.abort());

  let server: AdmissionServer | undefined;
  const keeper = new CertificateKeeper({
    pass: certificatePass({
      writes: clients.writes,
      namespace: operatorNamespace(),
      issue: config.admission.issueCertificate,
      issuer: x509Issuer(),
    }),
    apply: (pair) => server?.setCertificate(pair),
    log,
    intervalMs: CERTIFICATE_CHECK_MS,
    retryMs: CERTIFICATE_RETRY_MS,
  });
  const keeping = keeper.run(stopping.signal);
  // No certificate, no server: until a valid pair exists nothing listens, so the readiness probe
  // fails and the Service sends no review here.
  const certificate = await Promise.race([keeper.first, stopped]);
  if (certificate !== undefined) {
    server = new AdmissionServer({
      certificate,
      reader: apiserverReader(clients.informers.kubeConfig),
      operatorNamespace: operatorNamespace(),
      log,
    });
    const port = await server.listen(listenPort(CONTAINER_PORT));
    log.info({ port }, 'serving admission reviews');
    await stopped;
  }
  log.info('stopping');
  await keeping;
  await server?.close();
  await clients.close();
}
