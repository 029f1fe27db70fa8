// The monitoring gate against real nats-servers: `switchyard nats-monitor-gate` run as its own
// process in front of one node of a 3-node JetStream cluster of the test's own (its monitoring on
// loopback, as deploy/nats binds it), with a stream and a durable consumer on it as the handlers
// have. Without credentials the probes' /healthz and KEDA's /jsz pass whole and /varz is reduced to
// the fields KEDA reads (and carries them, as a cluster fills them); /connz, /subsz and /varz whole
// need the `monitor` user's password, and a wrong one is refused. /metrics is the gate's own: the
// JetStream stores' fill, as /jsz says it. An unreachable server fails the probe and the scrape
// rather than passing them.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnNatsCluster, startOwnNatsCluster } from '../../test/support/nats.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { childEnv } from '../local-cluster/control-plane.ts';
import { freePort } from '../local-cluster/free-port.ts';
import { ManagedProcess } from '../local-cluster/managed-process.ts';
import type { NatsServer } from '../local-cluster/nats.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { type MonitorGate, startMonitorGate } from './monitor-gate.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'monitor-gate-itest' });
const PASSWORD = 'gate-itest-Zm9vYmFyYmF6';
let nats: OwnNatsCluster;
let node: NatsServer;
let dir: string;
let gate: ManagedProcess;
let gateUrl: string;
let nc: NatsConnection;
/** The gates of the other two nodes, in this process: each server Pod has its own. */
const others: MonitorGate[] = [];

const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});
const AS_MONITOR = basic('monitor', PASSWORD);
const get = (path: string, headers: Record<string, string> = {}, base = gateUrl) =>
  fetch(`${base}${path}`, { headers });
const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

beforeAll(async () => {
  nats = await startOwnNatsCluster('monitor-gate', log);
  node = nats.cluster.nodes[0] as NatsServer;
  dir = await mkdtemp(join(tmpdir(), 'switchyard-monitor-gate-'));
  await writeFile(join(dir, 'password'), PASSWORD, { mode: 0o440 });
  const port = await freePort();
  gateUrl = `http://127.0.0.1:${port}`;
  gate = new ManagedProcess(
    {
      name: 'nats-monitor-gate',
      command: process.execPath,
      args: [
        join(PROJECT_ROOT, 'src/cli/main.ts'),
        'nats-monitor-gate',
        `--port=${port}`,
        '--host=127.0.0.1',
        `--upstream=${node.monitorUrl}`,
        `--password-file=${join(dir, 'password')}`,
      ],
      env: childEnv(),
      logFile: join(dir, 'gate.log'),
    },
    log,
  );
  await waitFor('the gate answering', async () => {
    if (!gate.running) throw new Error(`the gate exited: see ${gate.logFile}`);
    return (await get('/healthz').catch(() => undefined))?.ok ? true : undefined;
  });
  for (const other of nats.cluster.nodes.slice(1))
    others.push(
      await startMonitorGate(
        { port: 0, host: '127.0.0.1', upstream: other.monitorUrl, passwordFile: join(dir, 'password') },
        log,
      ),
    );
  // What the handlers have: a stream, a durable pull consumer with a backlog, a client connected.
  nc = await connect({ servers: node.url, name: 'gate-itest-client' });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'GATE', subjects: ['gate.>'], num_replicas: 3 });
  await jsm.consumers.add('GATE', { durable_name: 'router', ack_policy: 'explicit' });
  for (let i = 0; i < 5; i++)
    await nc.request('gate.x', new TextEncoder().encode(String(i))).catch(() => undefined);
});

afterAll(async () => {
  await nc?.close().catch(() => undefined);
  await gate?.stop();
  for (const other of others) await other.close();
  await nats?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('switchyard nats-monitor-gate', () => {
  it('passes the probes’ /healthz without credentials', async () => {
    for (const path of ['/healthz', '/healthz?js-enabled-only=true']) {
      const res = await get(path);
      expect(res.status, path).toBe(200);
      expect(await json(res)).toMatchObject({ status: 'ok' });
    }
  });

  it('passes what KEDA’s scaler reads without credentials: each server’s name, and the consumer’s backlog at its leader', async () => {
    type Jsz = {
      meta_cluster?: { cluster_size: number };
      account_details: {
        name: string;
        stream_detail: {
          name: string;
          consumer_detail: { name: string; num_pending: number; cluster?: { leader?: string } }[];
        }[];
      }[];
    };
    const consumerIn = (jsz: Jsz) =>
      jsz.account_details
        .find((a) => a.name === '$G')
        ?.stream_detail.find((s) => s.name === 'GATE')
        ?.consumer_detail.find((c) => c.name === 'router');
    // As the scaler does on a cluster: /jsz at the endpoint names the consumer's leader, /varz of
    // each server names the server, and the leader's /jsz has the backlog. Every step through a gate.
    const jszPath = '/jsz?acc=$G&consumers=true&config=true';
    const first = await get(jszPath);
    expect(first.status).toBe(200);
    const jsz = (await first.json()) as Jsz;
    expect(jsz.meta_cluster?.cluster_size).toBe(3);
    const leader = consumerIn(jsz)?.cluster?.leader;
    expect(leader).toMatch(/^nats-\d$/);
    const gates = [gateUrl, ...others.map((g) => `http://127.0.0.1:${g.port}`)];
    const names = await Promise.all(
      gates.map(async (g) => (await json(await get('/varz', {}, g))).server_name),
    );
    expect([...names].sort()).toEqual(nats.cluster.nodes.map((n) => n.name).sort());
    const atLeader = gates[names.indexOf(leader)] as string;
    const backlog = await waitFor('the backlog at the consumer’s leader', async () => {
      const pending = consumerIn((await (await get(jszPath, {}, atLeader)).json()) as Jsz)?.num_pending;
      return pending === 5 ? pending : undefined;
    });
    expect(backlog).toBe(5);
  });

  it('answers /varz without credentials with exactly the fields KEDA reads, filled as the server has them', async () => {
    const full = await json(await get('/varz', AS_MONITOR));
    const res = await get('/varz');
    expect(res.status).toBe(200);
    const reduced = await json(res);
    expect(Object.keys(reduced).sort()).toEqual(['cluster', 'connect_urls', 'server_name']);
    expect(Object.keys(reduced.cluster as object)).toEqual(['urls']);
    expect(reduced.server_name).toBe(node.name);
    expect(reduced.server_name).toBe(full.server_name);
    expect(reduced.connect_urls).toEqual(full.connect_urls);
    expect((reduced.connect_urls as string[]).length).toBeGreaterThan(0);
    expect((reduced.cluster as { urls: string[] }).urls).toEqual((full.cluster as { urls: string[] }).urls);
    expect((reduced.cluster as { urls: string[] }).urls.length).toBeGreaterThan(0);
  });

  it('refuses /connz, /subsz, /accountz and /varz whole without credentials, and serves them with the monitor user’s', async () => {
    for (const path of ['/connz', '/subsz', '/accountz', '/routez', '/', '/jsz/../connz']) {
      const res = await get(path);
      expect(res.status, path).toBe(401);
      expect(res.headers.get('www-authenticate'), path).toMatch(/^Basic realm="nats-monitor"/);
      expect(await res.text(), `${path} leaks nothing`).not.toContain('gate-itest-client');
    }
    const connz = await get('/connz', AS_MONITOR);
    expect(connz.status).toBe(200);
    const { connections } = (await connz.json()) as { connections: { name?: string }[] };
    expect(connections.map((c) => c.name)).toContain('gate-itest-client');
    const varz = await json(await get('/varz', AS_MONITOR));
    expect(varz).toHaveProperty('server_id');
    expect(varz).toHaveProperty('connections');
    expect((await get('/subsz', AS_MONITOR)).status).toBe(200);
  });

  it('refuses a wrong password or user, /varz included, and anything but GET', async () => {
    for (const headers of [
      basic('monitor', `${PASSWORD}x`),
      basic('admin', PASSWORD),
      { authorization: 'Bearer x' },
    ]) {
      expect((await get('/connz', headers)).status).toBe(401);
      expect((await get('/varz', headers)).status).toBe(401);
      // What the probes and KEDA read stays open whatever a request brings.
      expect((await get('/healthz', headers)).status).toBe(200);
    }
    const post = await fetch(`${gateUrl}/healthz`, { method: 'POST', headers: AS_MONITOR });
    expect(post.status).toBe(405);
  });

  it('serves /metrics itself, to anyone: each JetStream store’s bytes used and the server’s limit, as /jsz says them', async () => {
    const res = await get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const sample = (name: string, store: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${name}{store="${store}"} `));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    };
    const jsz = (await (await fetch(`${node.monitorUrl}/jsz`)).json()) as {
      storage: number;
      config: { max_storage: number; max_memory: number };
    };
    expect(sample('switchyard_nats_jetstream_store_limit_bytes', 'file')).toBe(jsz.config.max_storage);
    expect(sample('switchyard_nats_jetstream_store_limit_bytes', 'memory')).toBe(jsz.config.max_memory);
    // The GATE stream (file storage) holds the five messages on every node.
    expect(sample('switchyard_nats_jetstream_store_used_bytes', 'file')).toBeGreaterThan(0);
    expect(sample('switchyard_nats_jetstream_store_used_bytes', 'memory')).toBe(0);
    expect(text).toContain('switchyard_build_info{');
    expect(text).toContain('process_resident_memory_bytes');
    // Whatever credentials come with the scrape.
    expect((await get('/metrics', basic('monitor', 'wrong'))).status).toBe(200);
  });

  it('fails the probe when the server’s monitoring does not answer', async () => {
    const nowhere = await startMonitorGate(
      {
        port: 0,
        host: '127.0.0.1',
        upstream: `http://127.0.0.1:${await freePort()}`,
        passwordFile: join(dir, 'password'),
      },
      // It logs each refused upstream connection as a warning: expected here.
      log.child({}, { level: 'error' }),
    );
    try {
      expect((await get('/healthz', {}, `http://127.0.0.1:${nowhere.port}`)).status).toBe(502);
      expect((await get('/varz', {}, `http://127.0.0.1:${nowhere.port}`)).status).toBe(502);
      // A scrape fails too (Prometheus's `up` is 0), rather than serving figures it could not read.
      expect((await get('/metrics', {}, `http://127.0.0.1:${nowhere.port}`)).status).toBe(502);
    } finally {
      await nowhere.close();
    }
  });
});
