// The local stack's 3-node JetStream cluster: what the cluster fault tests stand on. A replicated
// stream keeps taking writes while its leader is killed and while one node is frozen (cut off
// from the other two past the route pings), and the lost node catches up when it comes back.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsServerList } from '../bus/connect.ts';
import { NatsCluster } from './nats-cluster.ts';
import { makeLocalNatsCredentials } from './nats-credentials.ts';
import { waitFor } from './wait.ts';

const STREAM = 'CLUSTER_CHECK';
let dir: string;
let cluster: NatsCluster;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-cluster-'));
  const users = await makeLocalNatsCredentials(dir);
  cluster = await NatsCluster.start(dir, pino({ level: 'warn' }), users.authorization);
  nc = await connect({
    servers: natsServerList(cluster.url),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  js = jetstream(nc, { timeout: 10_000 });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: STREAM, subjects: ['check.>'], num_replicas: 3 });
});

afterAll(async () => {
  await nc?.close();
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** Publishes `n` messages, each retried until stored once (the duplicate window drops a repeat). */
async function publishAll(prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await waitFor(`${prefix}-${i} stored`, () =>
      js.publish(`check.${prefix}`, `${i}`, { msgID: `${prefix}-${i}` }).then(() => true),
    );
  }
}

/**
 * Until the stream's leader holds every acknowledged message and both other replicas are running
 * and current. Waited for, not read once: a node thawed after a freeze may still answer as the
 * leader it was, with the messages it had, until it learns of the term it missed and steps down.
 */
async function allReplicasCurrentWith(messages: number): Promise<void> {
  await waitFor(
    `every replica of ${STREAM} to be current with ${messages} messages`,
    async () => {
      const info = await jsm.streams.info(STREAM);
      const replicas = info.cluster?.replicas ?? [];
      return info.cluster?.leader &&
        info.state.messages === messages &&
        replicas.length === 2 &&
        replicas.every((r) => r.current && !r.offline)
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}

describe('a 3-node NATS cluster on loopback', () => {
  it('names every node in its URL and elects one meta leader', async () => {
    expect(natsServerList(cluster.url)).toHaveLength(3);
    expect(['nats-0', 'nats-1', 'nats-2']).toContain(await cluster.waitForMetaLeader());
  });

  it("keeps a replicated stream's writes while its leader is killed, and the leader catches up when back", async () => {
    await publishAll('before', 20);
    const leader = await cluster.streamLeader(STREAM);
    await leader.stop({ kill: true });
    await publishAll('during', 20);
    const next = await cluster.streamLeader(STREAM);
    expect(next.name).not.toBe(leader.name);
    await leader.launch();
    await allReplicasCurrentWith(40);
  });

  it("hands a node's clients to the others when it stops in lame duck, as a rolled Pod does", async () => {
    const rolled = cluster.nodes.find(
      (n) => n.name === nc.info?.server_name,
    ) as (typeof cluster.nodes)[number];
    const started = Date.now();
    await rolled.stopInLameDuck();
    expect(Date.now() - started, 'lame duck lasts its duration (5 s), then the server exits').toBeLessThan(
      20_000,
    );
    await publishAll('lame-duck', 10);
    expect(nc.info?.server_name, 'the client moved to another node').not.toBe(rolled.name);
    await rolled.launch();
    await allReplicasCurrentWith(50);
  });

  it('drops a frozen node from the routes, keeps writing with the other two, and takes it back', async () => {
    // Not the node this client is on: a client of a frozen node waits for its pings to give up.
    const frozen = cluster.nodes.find(
      (n) => n.name !== nc.info?.server_name,
    ) as (typeof cluster.nodes)[number];
    frozen.freeze();
    try {
      await waitFor(
        `${frozen.name} to be seen offline or behind`,
        async () => {
          const replica = (await jsm.streams.info(STREAM)).cluster?.replicas?.find(
            (r) => r.name === frozen.name,
          );
          return replica === undefined || replica.offline || !replica.current ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      await publishAll('frozen', 20);
    } finally {
      frozen.thaw();
    }
    await allReplicasCurrentWith(70);
  });
});
