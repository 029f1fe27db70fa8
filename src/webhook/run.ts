// `switchyard webhook-server`: one replica of a ConversionWebhookServer, as the Deployment the
// instances handler renders runs it (core/instances/render.ts: `--instance`, `--port`,
// `--tls-dir`, and POD_NAME / POD_NAMESPACE / POD_UID from the downward API).
//
// It learns configs, instances and targets from the bus (no apiserver list or watch: its
// identity has none), holds the plans its instance must serve, answers the apiserver's
// ConversionReviews, and publishes what it can serve in its own Lease. Shutdown withdraws the
// report first, so no gate counts a replica that is going away, then drains the reviews in
// flight.

import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { WEBHOOK_SERVER_PORT } from '../api/constants.ts';
import { connectBus } from '../bus/connect.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { viewLagPolicyOf } from '../config/schema.ts';
import { createKubeClients } from '../kube/clients.ts';
import { listenPort } from '../runtime/listen-port.ts';
import { createLogger } from '../runtime/logger.ts';
import { CertificateReloader, readCertificatePair } from '../runtime/serving-certificate.ts';
import { REPLICA_VIEW_PROJECTIONS } from '../views/projection.ts';
import { LeasePublisher, leaseWriterFor } from './lease-publisher.ts';
import { WebhookMetrics } from './metrics.ts';
import { Replica } from './replica.ts';
import { ConversionWebhookServer } from './server.ts';
import { REPLICA_VIEW_KINDS } from './world.ts';

const COMPONENT = 'webhook-server';

/** A Secret volume changes on disk within about a minute of the Secret; a 10 s poll adds little. */
const CERTIFICATE_POLL_MS = 10_000;

interface ReplicaIdentity {
  instance: string;
  port: number;
  tlsDir: string;
  pod: { name: string; uid: string };
  namespace: string;
}

/** The managed flags and the downward-API environment; a missing one stops the start with its name. */
export function replicaIdentityOf(rest: readonly string[], env: NodeJS.ProcessEnv): ReplicaIdentity {
  const flags = new Map(
    rest.flatMap((arg) => {
      const match = /^--([a-z-]+)=(.*)$/.exec(arg);
      return match ? [[match[1] as string, match[2] as string]] : [];
    }),
  );
  const unknown = rest.filter((arg) => !/^--(instance|port|tls-dir)=/.test(arg));
  if (unknown.length > 0)
    throw new Error(
      `unknown arguments ${unknown.join(' ')}; webhook-server takes --instance, --port, --tls-dir`,
    );
  const required = (what: string, value: string | undefined) => {
    if (!value) throw new Error(`webhook-server needs ${what}`);
    return value;
  };
  const port = Number(flags.get('port') ?? WEBHOOK_SERVER_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`--port must be a port, got ${port}`);
  return {
    instance: required('--instance=<ConversionWebhookServer name>', flags.get('instance')),
    port,
    tlsDir: required('--tls-dir=<directory with tls.crt and tls.key>', flags.get('tls-dir')),
    pod: {
      name: required('POD_NAME (downward API metadata.name)', env.POD_NAME),
      uid: required('POD_UID (downward API metadata.uid)', env.POD_UID),
    },
    namespace: required('POD_NAMESPACE (downward API metadata.namespace)', env.POD_NAMESPACE),
  };
}

export async function runWebhookServer(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const id = replicaIdentityOf(rest, process.env);
  const log = createLogger(config.log, COMPONENT).child({
    instance: id.instance,
    pod: id.pod.name,
  });
  const files = { certFile: join(id.tlsDir, 'tls.crt'), keyFile: join(id.tlsDir, 'tls.key') };
  // No certificate, no server: a pod that cannot serve TLS must fail, not become ready.
  const certificate = await readCertificatePair(files);
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: COMPONENT, kubernetes: config.kubernetes });
  const bus = await connectBus({
    servers: config.nats.url,
    credentials: config.nats,
    tls: config.nats.tls,
    name: `${COMPONENT}-${id.pod.name}`,
    log,
    mode: 'verify',
  });
  const metrics = new WebhookMetrics({ processMetrics: true });
  const publisher = new LeasePublisher({
    writer: leaseWriterFor(clients.writes),
    namespace: id.namespace,
    instance: id.instance,
    pod: id.pod,
    log,
  });
  metrics.observeLease(() => publisher.stats());
  const view = new ObjectView([...REPLICA_VIEW_KINDS], log, {
    lag: viewLagPolicyOf(config.view),
    project: REPLICA_VIEW_PROJECTIONS,
  });
  metrics.observeView(() => view.freshness());
  if (config.webhook.unsafeDropPlanOnReassign)
    log.warn(
      'webhook.unsafeDropPlanOnReassign is set: conversions fail during every move away from this instance',
    );
  const replica = new Replica({
    view,
    instance: id.instance,
    sink: publisher,
    metrics,
    log,
    drainMs: config.webhook.drainSeconds * 1000,
    holdWhileNamed: !config.webhook.unsafeDropPlanOnReassign,
  });
  const server = new ConversionWebhookServer({ certificate, replica, metrics, log });
  metrics.servingCertificate(certificate.cert);
  const reloader = new CertificateReloader(certificate, {
    files,
    intervalMs: CERTIFICATE_POLL_MS,
    apply: (pair) => {
      server.setCertificate(pair);
      metrics.servingCertificate(pair.cert);
    },
    log,
  });
  // Serving (not ready) at once: the kubelet's liveness probe must not kill a replica that is
  // still reading the bus; /readyz turns 200 once the view has caught up and the first sync
  // decided what to hold. The plans compile after that, in the background or for a review.
  const port = await server.listen(listenPort(id.port));
  reloader.start();
  log.info({ port }, 'listening; reading the bus');
  await view.start(bus.js);
  replica.start();
  log.info(
    { compiling: replica.describe().compiling.length },
    'ready: serving conversions, compiling the plans in the background',
  );

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('stopping: withdrawing the served set, then draining');
  replica.stop();
  await publisher.withdraw();
  await server.close();
  reloader.stop();
  view.stop();
  await bus.close();
  await clients.close();
}
