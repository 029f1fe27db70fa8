// bus.streamReplicas on a live bus (issue 28, item 1), on a 3-node JetStream cluster of the test's
// own: `switchyard bus setup`, run as the bus-setup NATS user as its Job runs it, takes every
// stream, the K8S_LATEST mirror and a pacer's slot bucket from one replica to three while records
// and paced work are published, and none of them is lost; `bus stats` shows every copy current; a
// worker configured for one replica warns and starts; a later run with 3 keeps 3, a pacer that
// re-creates its lost bucket creates it with 3, and 1 brings everything back to one. On a single
// server, asking for 3 fails with what to do and changes nothing.
import { join } from 'node:path';
import {
  AckPolicy,
  type JetStreamClient,
  type JetStreamManager,
  jetstream,
  jetstreamManager,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, natsServerList } from '../src/bus/connect.ts';
import { type Pacer, publishPaced, startPacer } from '../src/bus/pacer/pacer.ts';
import type { BusReport } from '../src/bus/stats.ts';
import { streamReplication } from '../src/bus/stats.ts';
import { bucketStream, DEFAULT_TOPOLOGY, STREAMS, type StreamReplicas } from '../src/bus/topology.ts';
import { ASSIGN_PACER } from '../src/handlers/assign.ts';
import { PACER_BUCKETS } from '../src/handlers/pacer-buckets.ts';
import { systemClock } from '../src/runtime/clock.ts';
import { startOwnBus } from './support/bus.ts';
import { type OwnNatsCluster, startOwnNatsCluster, type WithNatsUsers } from './support/nats.ts';
import { runSwitchyard } from './support/processes.ts';
import { waitFor } from './support/wait.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'replicas-itest' });
const BUCKET_STREAM = bucketStream(ASSIGN_PACER.bucket);
/** Every stream of the topology and the slot bucket a pacer created. */
const REPLICATED = [...Object.values(STREAMS), BUCKET_STREAM];

let nats: OwnNatsCluster & WithNatsUsers;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
let pacer: Pacer | undefined;
const published = { records: 0, paced: 0 };

/** The CLI as the bus-setup Job and an operator run it, as the bus-setup user, on `url`. */
function switchyard(args: string[], url: string, credentials = nats.users.dir) {
  return runSwitchyard([
    ...args,
    `--nats.url=${url}`,
    '--nats.user=bus-setup',
    `--nats.passwordFile=${join(credentials, 'bus-setup')}`,
  ]);
}

async function busSetup(replicas: StreamReplicas): Promise<void> {
  const run = await switchyard(['bus', 'setup', `--bus.streamReplicas=${replicas}`], nats.cluster.url);
  expect(run.stderr, `bus setup with ${replicas} replicas`).toBe('');
  expect(run.code).toBe(0);
}

/** Until every stream and the bucket has `replicas` replicas, a leader, and every follower current. */
async function allReplicasInSync(replicas: StreamReplicas): Promise<void> {
  await waitFor(
    `every stream and the slot bucket at ${replicas} replicas, all in sync`,
    async () => {
      for (const name of REPLICATED) {
        const r = streamReplication(await jsm.streams.info(name));
        if (r.replicas !== replicas || r.inSync !== replicas || r.members.length !== replicas)
          return undefined;
      }
      return true;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}

async function replicasOf(name: string): Promise<number> {
  return (await jsm.streams.info(name)).config.num_replicas;
}

/** Retried until the server stored it: the message id makes a retry of a stored publish a duplicate. */
function storeOnce(what: string, publish: () => Promise<unknown>): Promise<true> {
  return waitFor(what, () => publish().then(() => true as const), { timeoutMs: 30_000, intervalMs: 100 });
}

/** Records and paced work published one after the other until `stop`, each stored once. */
function publishUntil(stop: AbortSignal): Promise<void> {
  return (async () => {
    for (let i = published.records; !stop.aborted; i++) {
      await storeOnce(`record ${i}`, () =>
        js.publish(`k8s.crd._.obj-${i}`, JSON.stringify({ i }), { msgID: `record-${i}` }),
      );
      published.records++;
      if (i % 2 === 0) {
        await storeOnce(`paced item ${i}`, () =>
          publishPaced(
            js,
            `fanout.assign.k${i}`,
            { subject: `work.assign.0.k${i}`, payload: { i } },
            { msgID: `paced-${i}` },
          ),
        );
        published.paced++;
      }
      await systemClock.sleep(10);
    }
  })();
}

const RECORDS_DURABLE = 'replicas-itest';

/**
 * Durable consumers set no replica count, so they follow their stream's: the pacer's on the FANOUT
 * work queue and one on K8S (limits), as the router's.
 */
async function consumersFollow(replicas: StreamReplicas): Promise<void> {
  const durables = [
    [STREAMS.fanout, ASSIGN_PACER.durable],
    [STREAMS.records, RECORDS_DURABLE],
  ] as const;
  await waitFor(`the durable consumers on ${replicas} replicas`, async () => {
    for (const [stream, durable] of durables) {
      const followers = (await jsm.consumers.info(stream, durable)).cluster?.replicas?.length ?? 0;
      if (followers !== replicas - 1) return undefined;
    }
    return true;
  });
}

/** Every record in the history and in its mirror, every paced item released into WORK. */
async function nothingLost(): Promise<void> {
  expect((await jsm.streams.info(STREAMS.records)).state.messages, 'records stored in K8S').toBe(
    published.records,
  );
  await waitFor(`K8S_LATEST to mirror all ${published.records} records`, async () =>
    (await jsm.streams.info(STREAMS.latest)).state.messages === published.records ? true : undefined,
  );
  await waitFor(`the pacer to release all ${published.paced} paced items`, async () =>
    (await jsm.streams.info(STREAMS.work)).state.messages === published.paced ? true : undefined,
  );
}

// A local cluster runs as processes only: the bus suite's testcontainers pass (scripts/test.sh)
// leaves this file out, and the main pass runs it.
describe('bus.streamReplicas on a live bus', () => {
  beforeAll(async () => {
    nats = await startOwnNatsCluster('replicas', log, { users: true });
    nc = await connect({
      servers: natsServerList(nats.cluster.url),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
    });
    js = jetstream(nc, { timeout: 10_000 });
    jsm = await jetstreamManager(nc);
  });

  afterAll(async () => {
    await pacer?.stop();
    await nc?.close();
    const violations = (await nats?.stop()) ?? [];
    // bus setup and bus stats ran as the bus-setup user: a refusal means its grants are wrong.
    expect(violations, 'nats-server refused the bus-setup user').toEqual([]);
  });

  it('takes every stream, the mirror and the slot bucket from 1 replica to 3 while records and work flow, losing none', async () => {
    await busSetup(1);
    pacer = await startPacer({ ...ASSIGN_PACER, nc, log, ratePerSecond: 50, bucketReplicas: 1 });
    // A durable on a limits stream, as the router's on K8S: it sets no replicas of its own either.
    await jsm.consumers.add(STREAMS.records, {
      durable_name: RECORDS_DURABLE,
      ack_policy: AckPolicy.Explicit,
      filter_subject: 'k8s.>',
    });
    await allReplicasInSync(1);

    const stop = new AbortController();
    const flow = publishUntil(stop.signal);
    try {
      await systemClock.sleep(500);
      await busSetup(3);
      await allReplicasInSync(3);
      await systemClock.sleep(500);
    } finally {
      stop.abort();
      await flow;
    }
    expect(published.records, 'records published while the replicas changed').toBeGreaterThan(20);
    await nothingLost();
    await consumersFollow(3);
  });

  it('shows in bus stats every stream on three replicas, its leader and each copy current', async () => {
    const json = await switchyard(['bus', 'stats', '-o', 'json'], nats.cluster.url);
    expect(json.code).toBe(0);
    const report = JSON.parse(json.stdout) as BusReport;
    const names = new Set(nats.cluster.nodes.map((n) => n.name));
    for (const name of REPLICATED) {
      const s = report.streams.find((x) => x.name === name);
      expect(s?.replication, name).toMatchObject({ replicas: 3, inSync: 3 });
      expect(new Set(s?.replication.members.map((m) => m.name)), name).toEqual(names);
      expect(names.has(s?.replication.leader ?? ''), name).toBe(true);
    }
    const table = await switchyard(['bus', 'stats'], nats.cluster.url);
    const lines = table.stdout.split('\n');
    const cells = (first: string) => lines.find((l) => l.startsWith(`${first} `))?.split(/\s{2,}/);
    expect(cells(STREAMS.latest)?.slice(7, 9)).toEqual(['3', '3']);
    const copies = lines.filter((l) => /^K8S_LATEST\s+nats-\d\s+(leader|current)\b/.test(l));
    expect(copies, table.stdout).toHaveLength(3);
    expect(table.stdout).not.toMatch(/replicas in sync|no leader/);
  });

  it('lets a worker configured for one replica start on three, with a warning', async () => {
    const lines: string[] = [];
    const captured = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const worker = await connectBus({
      servers: nats.cluster.url,
      name: 'replicas-itest-worker',
      log: captured,
      topology: DEFAULT_TOPOLOGY,
      mode: 'verify',
      signal: AbortSignal.timeout(10_000),
    });
    await worker.close();
    const warning = lines
      .map((l) => JSON.parse(l) as { msg: string; warnings?: string[] })
      .find((l) => l.warnings);
    expect(warning?.msg).toMatch(/differs from this configuration in replicas/);
    expect(warning?.warnings).toContain('stream K8S_LATEST: num_replicas is 3, bus.streamReplicas is 1');
  });

  it('keeps 3 on a later run, and a pacer re-creates its lost bucket with 3', async () => {
    await busSetup(3);
    for (const name of REPLICATED) expect(await replicasOf(name), name).toBe(3);

    await pacer?.stop();
    pacer = undefined;
    await jsm.streams.delete(BUCKET_STREAM);
    pacer = await startPacer({ ...ASSIGN_PACER, nc, log, ratePerSecond: 50, bucketReplicas: 3 });
    expect(await replicasOf(BUCKET_STREAM), 'a re-created bucket on one server is lost with it').toBe(3);
    await allReplicasInSync(3);
  });

  it('goes back from 3 replicas to 1, losing nothing', async () => {
    const stop = new AbortController();
    const flow = publishUntil(stop.signal);
    try {
      await systemClock.sleep(300);
      await busSetup(1);
      await allReplicasInSync(1);
    } finally {
      stop.abort();
      await flow;
    }
    await nothingLost();
    await consumersFollow(1);
    // Only the buckets a pacer created are there; bus setup created none.
    const buckets = new Set(PACER_BUCKETS.map(bucketStream));
    const present: string[] = [];
    for await (const name of jsm.streams.names()) if (buckets.has(name)) present.push(name);
    expect(present).toEqual([BUCKET_STREAM]);
  });

  it('refuses 3 replicas on a single server, saying what to do, and changes nothing', async () => {
    const single = await startOwnBus();
    try {
      const run = await switchyard(
        ['bus', 'setup', '--bus.streamReplicas=3'],
        single.server.url,
        single.natsCredentialsDir,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(
        /^cannot apply the bus topology at .*: bus\.streamReplicas=3 needs a JetStream cluster of at least 3 servers; this server is not clustered \(stream K8S\): run a cluster, or set bus\.streamReplicas=1\n$/,
      );
      for (const name of Object.values(STREAMS))
        expect((await single.jsm.streams.info(name)).config.num_replicas, name).toBe(1);
    } finally {
      await single.stop();
    }
  });
});
