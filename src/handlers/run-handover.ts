import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { handoverWorkSchema } from '../bus/messages.ts';
import { startHandlerRuntime } from '../bus/runtime/index.ts';
import { topologyOptions } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import type { HandoverPolicy } from '../core/handover.ts';
import { createKubeClients } from '../kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { systemClock } from '../runtime/clock.ts';
import { HANDOVER, HANDOVER_VIEW_KINDS, handoverConsumers, handoverHandler } from './handover.ts';
import { operatorNamespace } from './operator-namespace.ts';
import { trustBundleReader } from './trust-bundle.ts';

/**
 * `switchyard handover`: the view, the handler runtime over the concern's partitions, and
 * the target and status writer on the `writes` client. Replicas may run side by side; any one may be
 * killed at any moment (the runtime redelivers, re-checks are stored on the bus).
 */
export async function runHandover(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: HANDOVER });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({
    kubeConfig: kc,
    component: HANDOVER,
    kubernetes: config.kubernetes,
  });
  const topology = topologyOptions(config.bus);
  const bus = await connectBus({
    servers: config.nats.url,
    name: HANDOVER,
    log,
    topology,
    mode: 'verify',
  });
  const view = new ObjectView([...HANDOVER_VIEW_KINDS], log);
  await view.start(bus.js);
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: HANDOVER,
    log,
    consumers: handoverConsumers(config.bus.partitions.handover),
    schema: handoverWorkSchema,
    deadLetterSubject: `dlq.${HANDOVER}`,
    handle: handoverHandler({
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(HANDOVER)),
      trustBundle: trustBundleReader(clients.writes),
      clock: systemClock,
      policy: handoverPolicyOf(config.handover),
      defaultNamespace: operatorNamespace(),
    }),
  });
  log.info({ partitions: config.bus.partitions.handover }, 'handing over');

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

/** The gate's policy from the process configuration (seconds there, milliseconds in the gate). */
export function handoverPolicyOf(config: Config['handover']): HandoverPolicy {
  return {
    unreportedGraceMs: config.unreportedGraceSeconds * 1000,
    stallAfterMs: config.stallAfterSeconds * 1000,
  };
}
