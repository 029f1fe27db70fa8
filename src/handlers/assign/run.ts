// `switchyard assign`: the assign handler and its pacer (src/handlers/assign.ts). Kubernetes is
// written through the writes client only (status of configs and instances); everything it
// reads comes from the bus.
import { stopOnSignals } from '../../bus/runtime/index.ts';
import { fieldManagerFor, KubeWriter } from '../../kube/writer.ts';
import { observeHandlerRuntime } from '../../metrics/worker-metrics.ts';
import { systemClock } from '../../runtime/clock.ts';
import { CONFIG_SUBJECT_VIEW_PROJECTIONS } from '../../views/projection.ts';
import { startAssignWorker } from '../assign.ts';
import { operatorNamespace } from '../operator-namespace.ts';
import { startResync } from '../resync.ts';
import { startWorker, workerClients } from '../run-handler.ts';
import { ASSIGN_WORK } from './wakes.ts';
import { ASSIGN_CONCERN, ASSIGN_VIEW_KINDS } from './world.ts';

const COMPONENT = 'assign';

export async function runAssign(argv: string[]): Promise<void> {
  const { config, log, bus, view } = await startWorker(
    argv,
    COMPONENT,
    ASSIGN_VIEW_KINDS,
    CONFIG_SUBJECT_VIEW_PROJECTIONS,
  );
  const clients = workerClients(COMPONENT, config);
  const worker = await startAssignWorker({
    nc: bus.nc,
    log,
    deps: {
      view,
      writer: new KubeWriter(clients.writes, fieldManagerFor(ASSIGN_CONCERN)),
      js: bus.js,
      clock: systemClock,
      events: clients.events.recorder,
      partitions: { handover: config.bus.partitions.handover },
      defaultNamespace: operatorNamespace(),
    },
    partitions: config.bus.partitions.assign,
    fanoutRatePerSecond: config.bus.fanoutRatePerSecond,
    bucketReplicas: bus.topology.streamReplicas,
  });
  observeHandlerRuntime(worker.pacer.runtime);
  observeHandlerRuntime(worker.runtime);
  log.info('assigning');
  const resync = await startResync({
    nc: bus.nc,
    bucketReplicas: bus.topology.streamReplicas,
    view,
    work: ASSIGN_WORK,
    partitions: config.bus.partitions,
    settings: config.resync,
    clock: systemClock,
    log,
  });
  observeHandlerRuntime(resync.pacer.runtime);
  stopOnSignals({
    nc: bus.nc,
    log,
    stoppables: [
      {
        stop: async () => {
          await resync.stop();
          await Promise.all([worker.runtime.stop(), worker.pacer.stop()]);
          view.stop();
          await clients.close();
        },
      },
    ],
  });
}
