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
  LEASE_AGGREGATE,
  LEASE_AGGREGATE_VIEW_KINDS,
  leaseAggregateConsumers,
  leaseAggregateHandler,
} from './lease-aggregate.ts';
import { operatorNamespace } from './operator-namespace.ts';

/**
 * `switchyard lease-aggregate`: the view, the handler runtime over the concern's partitions,
 * and the status writer on the `writes` client. Replicas may run side by side; any one may be
 * killed at any moment (the runtime redelivers, re-checks are stored on the bus).
 */
export async function runLeaseAggregate(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: LEASE_AGGREGATE });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({
    kubeConfig: kc,
    component: LEASE_AGGREGATE,
    kubernetes: config.kubernetes,
  });
  const topology = topologyOptions(config.bus);
  const bus = await connectBus({
    servers: config.nats.url,
    name: LEASE_AGGREGATE,
    log,
    topology,
    mode: 'verify',
  });
  const view = new ObjectView([...LEASE_AGGREGATE_VIEW_KINDS], log);
  await view.start(bus.js);
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: LEASE_AGGREGATE,
    log,
    consumers: leaseAggregateConsumers(config.bus.partitions.leaseAggregate),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${LEASE_AGGREGATE}`,
    handle: leaseAggregateHandler({
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(LEASE_AGGREGATE)),
      js: bus.js,
      clock: systemClock,
      handoverPartitions: config.bus.partitions.handover,
      defaultNamespace: operatorNamespace(),
    }),
  });
  log.info({ partitions: config.bus.partitions.leaseAggregate }, 'aggregating');

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
