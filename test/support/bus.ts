import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { DEFAULT_TOPOLOGY, ensureTopology, type TopologyOptions } from '../../src/bus/topology.ts';
import type { NatsServer } from '../../src/local-cluster/nats.ts';
import type { LocalNatsAddress } from '../../src/local-cluster/nats-client.ts';
import { connectNats, startOwnNats } from './nats.ts';

/** What `switchyard bus setup` does in a cluster: the topology's one owner applies it. */
export async function applyBusTopology(
  nats: LocalNatsAddress,
  topology: TopologyOptions = DEFAULT_TOPOLOGY,
): Promise<void> {
  const nc = await connectNats(nats);
  try {
    await ensureTopology(await jetstreamManager(nc), topology);
  } finally {
    await nc.close();
  }
}

export interface OwnBus {
  server: NatsServer;
  /** Its users, as the local stack's: components started on it connect as theirs (`switchyardProcess`). */
  natsCredentialsDir: string;
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  stop(): Promise<void>;
}

/**
 * A NATS server of the test's own, with the topology applied: for tests that
 * restart NATS or need short retention and duplicate windows, which the run's
 * shared server must not get. The connection reconnects forever, as a
 * component's does (`connectBus`). It has the local stack's users
 * (`natsCredentialsDir`), and `stop()` fails when the server refused any of
 * them a subject, unless the test is about refusals.
 */
export async function startOwnBus(
  topology: TopologyOptions = DEFAULT_TOPOLOGY,
  natsConfig = '',
  opts: { permissionViolationsExpected?: boolean } = {},
): Promise<OwnBus> {
  const own = await startOwnNats('nats', pino({ level: 'warn' }), { users: true, config: natsConfig });
  const nc = await connect({ servers: own.server.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  const jsm = await jetstreamManager(nc);
  await ensureTopology(jsm, topology);
  return {
    server: own.server,
    natsCredentialsDir: own.users.dir,
    nc,
    js: jetstream(nc),
    jsm,
    async stop() {
      await nc.close();
      const violations = await own.stop();
      // A component started on this bus used a subject its NATS user may not: its role is wrong.
      if (violations.length > 0 && !opts.permissionViolationsExpected)
        throw new Error(`nats-server refused components' requests:\n${violations.join('\n')}`);
    },
  };
}
