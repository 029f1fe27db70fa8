import { KubeConfig } from '@kubernetes/client-node';
import { connectBus } from '../bus/connect.ts';
import { followConnection } from '../bus/connection-state.ts';
import { RecordWriter } from '../bus/records/record-writer.ts';
import { tombstoneTtl, topologyOptions } from '../bus/topology.ts';
import { loadConfig } from '../config/load.ts';
import { createKubeClients } from '../kube/clients.ts';
import { workerMetricsToServe } from '../metrics/worker-metrics.ts';
import { startHealthServer } from '../runtime/health-server.ts';
import { createLogger } from '../runtime/logger.ts';
import { loadRecorded, ObjectWatcher } from './object-watcher.ts';
import { RECORDED_RESOURCES, type WatchedResource } from './resources.ts';
import { XrdRecorder } from './xrd-recorder.ts';

const COMPONENT = 'watchers';

/**
 * The watcher process: one ObjectWatcher per recorded kind, all on the
 * informers client, and one for XRDs while Crossplane's API is served
 * (XrdRecorder). Replicas may run side by side (each change is stored once,
 * and never over a newer one); a replica killed at any moment loses nothing
 * (the next one starts from what the bus holds and relists).
 */
export async function runWatchers(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = createLogger(config.log, COMPONENT);
  const health = await startHealthServer({ log, metrics: workerMetricsToServe() });
  let recording = false;
  health.require('start', () => (recording ? undefined : 'connecting to NATS and listing what it records'));
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const clients = createKubeClients({ kubeConfig: kc, component: COMPONENT, kubernetes: config.kubernetes });
  const topology = topologyOptions(config.bus);
  const bus = await connectBus({
    servers: config.nats.url,
    credentials: config.nats,
    tls: config.nats.tls,
    name: COMPONENT,
    log,
    topology,
    mode: 'verify',
  });
  const connection = followConnection(bus.nc);
  health.require('nats', () => (connection.connected() ? undefined : 'disconnected from NATS, reconnecting'));
  const writer = new RecordWriter({
    js: bus.js,
    jsm: bus.jsm,
    maxPayload: bus.nc.info?.max_payload ?? 1024 * 1024,
    tombstoneTtl: tombstoneTtl(topology),
  });
  const newWatcher = async (resource: WatchedResource) =>
    new ObjectWatcher({
      resource,
      informers: clients.informers,
      writer,
      js: bus.js,
      log,
      recorded: await loadRecorded(bus.js, resource, log),
      onOversized: (object, bytes) =>
        clients.events.recorder.record({
          regarding: {
            apiVersion: object.apiVersion ?? '',
            kind: object.kind ?? '',
            name: object.metadata.name,
            ...(object.metadata.namespace ? { namespace: object.metadata.namespace } : {}),
            uid: object.metadata.uid,
          },
          type: 'Warning',
          reason: 'RecordTooLarge',
          action: 'Record',
          note:
            `${bytes} bytes even compressed, over the NATS max_payload: recorded on the bus without its ` +
            'content, so Switchyard fails closed on it; raise max_payload in the NATS server configuration',
        }),
    });
  const watchers = await Promise.all(RECORDED_RESOURCES.map(newWatcher));
  await Promise.all(watchers.map((w) => w.start()));
  recording = true;
  log.info({ kinds: RECORDED_RESOURCES.map((r) => r.kind) }, 'recording');
  const xrds = new XrdRecorder({
    kubeConfig: clients.informers.kubeConfig,
    periodMs: config.watchers.discoverySeconds * 1000,
    newWatcher,
    log,
  });
  xrds.start();

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('stopping');
  xrds.stop();
  for (const w of watchers) w.stop();
  await bus.close();
  await clients.close();
  await health.close();
}
