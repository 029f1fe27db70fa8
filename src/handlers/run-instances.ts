import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { workItemSchema } from '../bus/messages.ts';
import { startHandlerRuntime } from '../bus/runtime/index.ts';
import { topologyOptions } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { createKubeClients } from '../kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { systemClock } from '../runtime/clock.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { secretReader } from './instance-secrets.ts';
import { INSTANCES, INSTANCES_VIEW_KINDS, instancesConsumers, instancesHandler } from './instances.ts';
import { operatorNamespace } from './operator-namespace.ts';
import { projectImage } from './project-image.ts';

/**
 * `switchyard instances`: the view, the handler runtime over the concern's partitions, and the
 * writer and Secret reader on the `writes` client. Replicas may run side by side; any one may be
 * killed at any moment (the runtime redelivers). The replicas it renders reach the bus at the
 * same URL as this process.
 */
export async function runInstances(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: INSTANCES });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: INSTANCES, kubernetes: config.kubernetes });
  const bus = await connectBus({
    servers: config.nats.url,
    name: INSTANCES,
    log,
    topology: topologyOptions(config.bus),
    mode: 'verify',
  });
  const view = new ObjectView(INSTANCES_VIEW_KINDS, log);
  await view.start(bus.js);
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: INSTANCES,
    log,
    consumers: instancesConsumers(config.bus.partitions.instances),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${INSTANCES}`,
    handle: instancesHandler({
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(INSTANCES)),
      secrets: secretReader(clients.writes),
      issuer: x509Issuer(),
      clock: systemClock,
      settings: {
        defaultNamespace: operatorNamespace(),
        image: projectImage(),
        env: { SWITCHYARD_NATS_URL: config.nats.url },
      },
    }),
  });
  log.info({ partitions: config.bus.partitions.instances }, 'reconciling instances');

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('stopping');
  await runtime.stop();
  view.stop();
  await bus.close();
  await clients.close();
}
