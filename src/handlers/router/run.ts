// `switchyard router`: records → work items (src/handlers/router.ts). No Kubernetes client at
// all: it reads only the bus, so its ServiceAccount has no permissions.
import { stopOnSignals } from '../../bus/runtime/index.ts';
import { observeHandlerRuntime } from '../../metrics/worker-metrics.ts';
import { CONFIG_SUBJECT_VIEW_PROJECTIONS } from '../../views/projection.ts';
import { ROUTED_VIEW_KINDS } from '../concern.ts';
import { startRouter } from '../router.ts';
import { startWorker } from '../run-handler.ts';

const COMPONENT = 'router';

export async function runRouter(argv: string[]): Promise<void> {
  const { config, log, bus, view } = await startWorker(
    argv,
    COMPONENT,
    ROUTED_VIEW_KINDS,
    CONFIG_SUBJECT_VIEW_PROJECTIONS,
  );
  const runtime = await startRouter({
    nc: bus.nc,
    js: bus.js,
    jsm: bus.jsm,
    view,
    partitions: config.bus.partitions,
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
