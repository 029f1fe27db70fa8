// `switchyard router`: records → work items (src/handlers/router.ts). No Kubernetes client at
// all: it reads only the bus, so its ServiceAccount has no permissions.
import { stopOnSignals } from '../bus/runtime/index.ts';
import { ASSIGN_VIEW_KINDS } from '../handlers/assign-world.ts';
import { startRouter } from '../handlers/router.ts';
import { startWorker } from '../handlers/run-handler.ts';
import { observeHandlerRuntime } from '../metrics/worker-metrics.ts';

const COMPONENT = 'router';

export async function runRouter(argv: string[]): Promise<void> {
  const { config, log, bus, view } = await startWorker(argv, COMPONENT, ASSIGN_VIEW_KINDS);
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
      handover: config.bus.partitions.handover,
    },
    log,
  });
  observeHandlerRuntime(runtime);
  log.info('routing records to work');
  stopOnSignals({
    nc: bus.nc,
    log,
    stoppables: [{ stop: () => runtime.stop().finally(() => view.stop()) }],
  });
}
