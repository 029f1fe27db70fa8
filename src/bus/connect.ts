import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { checkServerVersion, DEFAULT_TOPOLOGY, ensureTopology, type TopologyOptions } from './topology.ts';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  close(): Promise<void>;
}

/**
 * Connects a component to the bus: reconnects forever (the client's default
 * gives up after ten tries, ~20 s), checks the server can run the topology,
 * and applies the topology.
 */
export async function connectBus(opts: {
  servers: string;
  name: string;
  log: Logger;
  topology?: TopologyOptions;
  /** False for read-only tools (bus stats): they must not create or change streams. */
  applyTopology?: boolean;
}): Promise<Bus> {
  const nc = await connect({
    servers: opts.servers,
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
  });
  checkServerVersion(nc.info?.version ?? '0.0.0', nc.info?.jetstream === true);
  const jsm = await jetstreamManager(nc);
  if (opts.applyTopology !== false) {
    const applied = await ensureTopology(jsm, opts.topology ?? DEFAULT_TOPOLOGY);
    opts.log.debug({ streams: applied, server: nc.info?.version }, 'bus topology applied');
  }
  return {
    nc,
    js: jetstream(nc),
    jsm,
    close: () => nc.drain(),
  };
}
