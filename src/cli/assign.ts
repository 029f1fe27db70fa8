// `switchyard assign`: the assign handler and its pacer (src/handlers/assign.ts). Kubernetes is
// written through the writes client only (status of configs and instances); everything it
// reads comes from the bus.
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { stopOnSignals } from '../bus/runtime/index.ts';
import { topologyOptions } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { startAssignWorker } from '../handlers/assign.ts';
import { ASSIGN_CONCERN, ASSIGN_VIEW_KINDS } from '../handlers/assign-world.ts';
import { createKubeClients } from '../kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { systemClock } from '../runtime/clock.ts';

const COMPONENT = 'assign';

export async function runAssign(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: COMPONENT });
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: COMPONENT, kubernetes: config.kubernetes });
  const bus = await connectBus({
    servers: config.nats.url,
    name: COMPONENT,
    log,
    topology: topologyOptions(config.bus),
    mode: 'verify',
  });
  const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
  await view.start(bus.js);
  const worker = await startAssignWorker({
    nc: bus.nc,
    log,
    deps: {
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(ASSIGN_CONCERN)),
      js: bus.js,
      clock: systemClock,
      partitions: { handover: config.bus.partitions.handover },
    },
    partitions: config.bus.partitions.assign,
    fanoutRatePerSecond: config.bus.fanoutRatePerSecond,
  });
  log.info('assigning');
  stopOnSignals({
    nc: bus.nc,
    log,
    stoppables: [
      {
        stop: async () => {
          await Promise.all([worker.runtime.stop(), worker.pacer.stop()]);
          view.stop();
          await clients.close();
        },
      },
    ],
  });
}
