// The local stack's 3-node JetStream cluster: what the cluster fault tests stand on. A replicated
// stream keeps taking writes while its leader is killed and while one node is frozen (cut off
// from the other two past the route pings), and the lost node catches up when it comes back.
// Its routes are TLS, verified at both ends: a server whose certificate another CA signed, or
// one without TLS, never joins; a rotated certificate reaches the routes on a reload.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { natsServerList } from '../bus/connect.ts';
import { freePort } from './free-port.ts';
import { NatsServer } from './nats.ts';
import { NATS_CLUSTER_NAME, NatsCluster } from './nats-cluster.ts';
import { makeLocalNatsCredentials } from './nats-credentials.ts';
import type { LocalNatsTls } from './nats-tls.ts';
import { waitFor } from './wait.ts';

const STREAM = 'CLUSTER_CHECK';
let dir: string;
let cluster: NatsCluster;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let tls: LocalNatsTls;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-cluster-'));
  const users = await makeLocalNatsCredentials(dir);
  cluster = await NatsCluster.start(dir, pino({ level: 'warn' }), users.authorization, { tls: true });
  if (!cluster.nodes[0]?.tls) throw new Error('the cluster was started without TLS files');
  tls = cluster.nodes[0].tls;
  nc = await connect({
    servers: natsServerList(cluster.url),
    tls: { caFile: tls.paths.caFile },
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

interface ClusterVarz {
  cluster: { cluster_port: number; tls_required?: boolean; tls_verify?: boolean };
}

async function monitored<T>(node: NatsServer, path: string): Promise<T> {
  const res = await fetch(`${node.monitorUrl}${path}`, { signal: AbortSignal.timeout(2_000) });
  return (await res.json()) as T;
}

/** The servers `node` has routes to, by name (/routez: several connections per peer, pooled). */
async function routedTo(node: NatsServer): Promise<string[]> {
  const routez = await monitored<{ routes: { remote_name: string }[] }>(node, '/routez');
  return [...new Set(routez.routes.map((r) => r.remote_name))].sort();
}

/** Until every node routes to exactly the other two. */
async function routesFormed(): Promise<void> {
  await waitFor('every node to route to the other two', async () => {
    for (const node of cluster.nodes) {
      const others = cluster.nodes.filter((n) => n !== node).map((n) => n.name);
      if ((await routedTo(node)).join() !== others.sort().join()) return undefined;
    }
    return true;
  });
}

/**
 * The certificate `node` presents on its route port, read as a peer dialling a route does: TLS
 * from the first byte (a route's handshake comes before its INFO), verified against the CA for
 * the address dialled, with a client certificate of the CA (the port asks for one).
 */
async function servedOnRoutePort(node: NatsServer): Promise<string> {
  const { cluster: c } = await monitored<ClusterVarz>(node, '/varz');
  const secure = tlsConnect({
    host: '127.0.0.1',
    port: c.cluster_port,
    ca: tls.caPem,
    cert: await readText(tls.paths.certFile),
    key: await readText(tls.paths.keyFile),
  });
  try {
    await once(secure, 'secureConnect');
    return secure.getPeerCertificate().serialNumber;
  } finally {
    secure.destroy();
  }
}

describe('a 3-node NATS cluster on loopback', () => {
  it('names every node in its URL and elects one meta leader', async () => {
    expect(natsServerList(cluster.url)).toHaveLength(3);
    expect(['nats-0', 'nats-1', 'nats-2']).toContain(await cluster.waitForMetaLeader());
  });

  it('routes between its nodes in TLS, verified at both ends', async () => {
    await routesFormed();
    for (const node of cluster.nodes) {
      const { cluster: c } = await monitored<ClusterVarz>(node, '/varz');
      expect(c.tls_required, `${node.name} routes in clear`).toBe(true);
      expect(c.tls_verify, `${node.name} does not verify its route peers`).toBe(true);
      expect(await servedOnRoutePort(node)).toBe(
        new X509Certificate(await readText(tls.paths.certFile)).serialNumber,
      );
    }
  });

  // The negative of the test above: what it checks is what keeps these two out.
  it.each([
    { peer: 'a server whose certificate another CA signed', ownCa: true },
    { peer: 'a server without TLS on its routes', ownCa: false },
  ])('refuses $peer: it never joins, and neither end keeps the route', async ({ ownCa }) => {
    const refusedBefore = await refusedRoutes();
    const name = ownCa ? 'rogue-foreign-ca' : 'rogue-plain';
    const routePorts = await Promise.all(
      cluster.nodes.map(async (n) => (await monitored<ClusterVarz>(n, '/varz')).cluster.cluster_port),
    );
    const port = await freePort();
    // `tls: true` is a CA of its own; without it, no `tls {}` block at all, routes included.
    const rogue = await NatsServer.start(join(dir, name), pino({ level: 'warn' }), '', {
      serverName: name,
      tls: ownCa,
      cluster: {
        name: NATS_CLUSTER_NAME,
        port,
        routePorts: [...routePorts, port],
        pingIntervalSeconds: 1,
        pingMax: 3,
        lameDuckSeconds: 30,
      },
    });
    try {
      // Seen trying: the cluster's nodes logged its route handshakes failing.
      await waitFor(`${name}'s routes to be refused`, async () =>
        (await refusedRoutes()) >= refusedBefore + 2 ? true : undefined,
      );
      // A route that passed the handshake would be in /routez within milliseconds; the peer
      // retries every second, so two more rounds.
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expect(await routedTo(rogue), `${name} routed to the cluster`).toEqual([]);
      for (const node of cluster.nodes)
        expect(await routedTo(node), `${node.name} took a route from ${name}`).not.toContain(name);
    } finally {
      await rogue.stop();
    }
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

  it('serves a rotated certificate on the routes after a reload, keeps the routes up, and a restarted node rejoins with it', async () => {
    const before = await Promise.all(cluster.nodes.map(servedOnRoutePort));
    const serial = new X509Certificate(await cluster.rotateCertificate()).serialNumber;
    expect(before).not.toContain(serial);
    await waitFor('every node to present the rotated certificate on its route port', async () =>
      (await Promise.all(cluster.nodes.map(servedOnRoutePort))).every((s) => s === serial) ? true : undefined,
    );
    await routesFormed();
    const restarted = cluster.nodes.find(
      (n) => n.name !== nc.info?.server_name,
    ) as (typeof cluster.nodes)[number];
    await restarted.restart({ kill: true });
    await routesFormed();
    await publishAll('rotated', 10);
    await allReplicasCurrentWith(80);
  });
});

/** Route handshakes the cluster's nodes refused so far, as they logged them. */
async function refusedRoutes(): Promise<number> {
  const lines = await Promise.all(cluster.nodes.map((n) => n.logged(/TLS route handshake error/)));
  return lines.flat().length;
}

function readText(file: string): Promise<string> {
  return readFile(file, 'utf8');
}
