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
import {
  CONFIG_STATUS,
  CONFIG_STATUS_VIEW_KINDS,
  configStatusConsumers,
  configStatusHandler,
} from './config-status.ts';

/**
 * `switchyard config-status`: the view, the handler runtime over the concern's partitions, and
 * the status writer on the `writes` client. Replicas may run side by side; any one may be
 * killed at any moment (the runtime redelivers).
 */
export async function runConfigStatus(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: CONFIG_STATUS });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({
    kubeConfig: kc,
    component: CONFIG_STATUS,
    kubernetes: config.kubernetes,
  });
  const bus = await connectBus({
    servers: config.nats.url,
    name: CONFIG_STATUS,
    log,
    topology: topologyOptions(config.bus),
    mode: 'verify',
  });
  const view = new ObjectView(CONFIG_STATUS_VIEW_KINDS, log);
  await view.start(bus.js);
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: CONFIG_STATUS,
    log,
    consumers: configStatusConsumers(config.bus.partitions.configStatus),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${CONFIG_STATUS}`,
    handle: configStatusHandler({
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(CONFIG_STATUS)),
      clock: systemClock,
    }),
  });
  log.info({ partitions: config.bus.partitions.configStatus }, 'validating configs');

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
