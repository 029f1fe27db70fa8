// The process around a handler, the same for every concern: configuration, the split
// Kubernetes clients (writes only are used), the bus (topology verified, never applied), the
// view of the kinds the handler reads, and the handler runtime over the concern's consumers;
// SIGTERM drains and closes everything. Each `run-<concern>.ts` only says what differs.
// The view and every handler runtime a worker starts are handed to the worker's metrics here
// (and in handlers/assign/run.ts, handlers/router/run.ts): neither knows the metrics.

import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { type Bus, connectBus } from '../bus/connect.ts';
import { followConnection } from '../bus/connection-state.ts';
import type { WorkItem } from '../bus/messages.ts';
import { type Handler, startHandlerRuntime } from '../bus/runtime/index.ts';
import { topologyOptions } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { type Config, viewLagPolicyOf } from '../config/schema.ts';
import { createKubeClients, type KubeClients } from '../kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { observeHandlerRuntime, observeViewLag, workerMetricsToServe } from '../metrics/worker-metrics.ts';
import { systemClock } from '../runtime/clock.ts';
import { type HealthServer, startHealthServer } from '../runtime/health-server.ts';
import { createLogger } from '../runtime/logger.ts';
import { HANDLER_VIEW_PROJECTIONS, type ViewProjections } from '../views/projection.ts';
import type { ConcernWork } from './concern.ts';
import { startResync } from './resync.ts';

/** What a handler is built from: the process's pieces, ready. */
export interface HandlerProcessContext {
  config: Config;
  log: Logger;
  bus: Bus;
  view: ObjectView;
  clients: KubeClients;
  /** Server-side apply on the writes client, as the concern's field manager. */
  writer: KubeWriter;
}

export interface HandlerProcess<T extends WorkItem> {
  /** The concern's registration (<concern>/wakes.ts): its name, consumers, payload schema, and every key for resync. */
  work: ConcernWork<T>;
  viewKinds: readonly string[];
  /** What its view keeps of each kind: the handlers' projections unless said. */
  projections?: ViewProjections;
  handler: (process: HandlerProcessContext) => Handler<T>;
  /** Logged once running, e.g. "handing over". */
  running: string;
}

/**
 * What every worker on the bus starts from: its configuration, logger, probes, bus (topology
 * verified) and view. Ready while connected to NATS and its view is current.
 */
export interface Worker {
  config: Config;
  log: Logger;
  health: HealthServer;
  bus: Bus;
  view: ObjectView;
}

export async function startWorker(
  argv: string[],
  name: string,
  viewKinds: readonly string[],
  project: ViewProjections = HANDLER_VIEW_PROJECTIONS,
): Promise<Worker> {
  const { config } = loadConfig({ argv });
  const log = createLogger(config.log, name);
  // First: liveness answers while the worker waits for NATS or for the topology.
  const health = await startHealthServer({ log, metrics: workerMetricsToServe() });
  let started = false;
  health.require('start', () => (started ? undefined : 'connecting to NATS and reading the view'));
  const bus = await connectBus({
    servers: config.nats.url,
    credentials: config.nats,
    tls: config.nats.tls,
    name,
    log,
    topology: topologyOptions(config.bus),
    mode: 'verify',
  });
  const connection = followConnection(bus.nc);
  health.require('nats', () => (connection.connected() ? undefined : 'disconnected from NATS, reconnecting'));
  const view = new ObjectView(viewKinds, log, {
    lag: viewLagPolicyOf(config.view),
    project,
  });
  observeViewLag(view);
  await view.start(bus.js);
  // Not ready while the view is behind the bus or cannot tell: its handlers wait before deciding
  // (ObjectView.waitFor), and a rollout should not count on a worker that cannot act.
  health.require('view', () => {
    const lag = view.freshness();
    return lag.state === 'current' ? undefined : `view ${lag.state}: ${lag.reason}`;
  });
  started = true;
  return { config, log, health, bus, view };
}

/** The Kubernetes clients of a worker, from the default kubeconfig (in a Pod: its ServiceAccount). */
export function workerClients(component: string, config: Config): KubeClients {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  return createKubeClients({ kubeConfig: kc, component, kubernetes: config.kubernetes });
}

export async function runHandlerProcess<T extends WorkItem>(
  argv: string[],
  spec: HandlerProcess<T>,
): Promise<void> {
  const { config, log, health, bus, view } = await startWorker(
    argv,
    spec.work.concern,
    spec.viewKinds,
    spec.projections,
  );
  const clients = workerClients(spec.work.concern, config);
  const consumers = spec.work.consumers(config.bus.partitions[spec.work.partitionsOf]);
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: spec.work.concern,
    log,
    consumers,
    schema: spec.work.schema,
    deadLetterSubject: `dlq.${spec.work.concern}`,
    keyLogFields: spec.work.logFieldsOf,
    handle: spec.handler({
      config,
      log,
      bus,
      view,
      clients,
      writer: new KubeWriter(clients.writes, fieldManagerFor(spec.work.concern)),
    }),
  });
  observeHandlerRuntime(runtime);
  log.info({ consumers: consumers.durable }, spec.running);
  const resync = await startResync({
    nc: bus.nc,
    bucketReplicas: bus.topology.streamReplicas,
    view,
    work: spec.work,
    partitions: config.bus.partitions,
    settings: config.resync,
    clock: systemClock,
    log,
  });
  observeHandlerRuntime(resync.pacer.runtime);

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('stopping');
  await resync.stop();
  await runtime.stop();
  view.stop();
  await bus.close();
  await clients.close();
  await health.close();
}
