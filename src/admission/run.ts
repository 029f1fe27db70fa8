import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { loadConfig } from '../config/load.ts';
import { createKubeClients } from '../kube/clients.ts';
import { listenPort } from '../runtime/listen-port.ts';
import { CertificateReloader, readCertificatePair } from '../runtime/serving-certificate.ts';
import { apiserverReader } from './cluster-read.ts';
import { AdmissionServer } from './server.ts';

const COMPONENT = 'admission';

/** The container port of deploy/admission/deployment.yaml; the Service's targetPort. */
const CONTAINER_PORT = 9443;

/**
 * A Secret volume changes on disk within about a minute of the Secret (the kubelet's sync);
 * a 10 s poll adds little to that and costs two small reads.
 */
const CERTIFICATE_POLL_MS = 10_000;

/**
 * The admission worker: one HTTPS server, reads on the informers client only (it writes
 * nothing, and its ServiceAccount may write nothing). Any number of replicas answer alike.
 */
export async function runAdmission(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: COMPONENT });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: COMPONENT, kubernetes: config.kubernetes });
  const files = { certFile: config.admission.tlsCertFile, keyFile: config.admission.tlsKeyFile };
  // No certificate, no server: a pod that cannot serve TLS must fail, not become ready.
  const certificate = await readCertificatePair(files);
  const server = new AdmissionServer({
    certificate,
    reader: apiserverReader(clients.informers.kubeConfig),
    log,
  });
  const reloader = new CertificateReloader(certificate, {
    files,
    intervalMs: CERTIFICATE_POLL_MS,
    apply: (pair) => server.setCertificate(pair),
    log,
  });
  const port = await server.listen(listenPort(CONTAINER_PORT));
  reloader.start();
  log.info({ port }, 'serving admission reviews');

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('stopping');
  reloader.stop();
  await server.close();
  await clients.close();
}
