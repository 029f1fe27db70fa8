// `switchyard router`: records → work items (src/handlers/router.ts). No Kubernetes client at
// all: it reads only the bus, so its ServiceAccount has no permissions.
import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { stopOnSignals } from '../bus/runtime/index.ts';
import { topologyOptions } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { ASSIGN_VIEW_KINDS } from '../handlers/assign-world.ts';
import { startRouter } from '../handlers/router.ts';

const COMPONENT = 'router';

export async function runRouter(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: COMPONENT });
  const bus = await connectBus({
    servers: config.nats.url,
    name: COMPONENT,
    log,
    topology: topologyOptions(config.bus),
    mode: 'verify',
  });
  const view = new ObjectView(ASSIGN_VIEW_KINDS, log);
  await view.start(bus.js);
  const runtime = await startRouter({
    nc: bus.nc,
    js: bus.js,
    jsm: bus.jsm,
    view,
    partitions: {
      assign: config.bus.partitions.assign,
      leaseAggregate: config.bus.partitions.leaseAggregate,
      configStatus: config.bus.partitions.configStatus,
      instances: config.bus.partitions.instances,
    },
    log,
  });
  log.info('routing records to work');
  stopOnSignals({
    nc: bus.nc,
    log,
    stoppables: [{ stop: () => runtime.stop().finally(() => view.stop()) }],
  });
}
