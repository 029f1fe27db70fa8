import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { webhookServiceName } from '../../src/api/constants.ts';
import { busStats } from '../../src/bus/stats.ts';
import { STREAMS } from '../../src/bus/topology.ts';
import { defaultConfig } from '../../src/config/schema.ts';
import { poolMember, rendezvousWinner } from '../../src/core/assignment.ts';
import { conversionServiceOf, liveConversionOf } from '../../src/core/target-conversion.ts';
import { HttpMethod } from '../../src/kube/request.ts';
import type { LocalCluster } from '../../src/local-cluster/cluster.ts';
import { SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../src/local-cluster/nats-client.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import {
  configStatuses,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
  request,
  STORED_FIELD,
  servingInstances,
} from '../../src/scenario/fleet.ts';
import { type AuditEvent, auditLogFromNow } from '../support/audit-log.ts';
import type { HandoverWitness, Repoint } from './support/handover-witness.ts';
import { useInstalledCluster } from './support/installed-cluster.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'scale-e2e' });
const TARGETS = Number(process.env.SCALE_TARGETS ?? 1000);
const OBJECTS_PER_TARGET = 2;
const POOL = ['s1', 's2', 's3', 's4'];
const NEWCOMER = 's5';
const INSTANCES = [...POOL, NEWCOMER];
const GROUP = 'scale.switchyard.dev';
const NAMESPACE = 'scale';
/** Requests the scenario sends at once while it builds the fleet. */
const CONCURRENCY = 8;
const INSTANCES_USER = `system:serviceaccount:${SWITCHYARD_NAMESPACE}:switchyard-instances`;

const targets = Array.from({ length: TARGETS }, (_, i) => ({
  crd: `things${i}.${GROUP}`,
  config: `things${i}`,
  plural: `things${i}`,
  kind: `Thing${i}`,
}));

const e2e = useInstalledCluster('scale-e2e', { instances: INSTANCES, log });
let cluster: LocalCluster;
let witness: HandoverWitness;

beforeAll(async () => {
  ({ cluster, witness } = await e2e.start());
  const admin = cluster.kubeConfigFor('admin');
  const t = performance.now();
  for (const [i, name] of POOL.entries())
    await createInstance(admin, name, {
      default: i === 0,
      replicas: 2,
      sharding: { enabled: true, weight: 1 },
    });
  await inParallel(targets, async (target) => {
    await retryingRefusals(() => createTwoVersionTarget(admin, target.crd, target.kind));
    await retryingRefusals(() => createRenameConfig(admin, target.config, target.crd));
  });
  progress(`${TARGETS} targets and configs created (${refusalsRetried} refusals retried)`, t);
  await waitFor(
    `all ${TARGETS} targets served`,
    async () => {
      const [statuses, serving] = await Promise.all([
        configStatuses(admin),
        servingInstances(admin, INSTANCES),
      ]);
      const served = targets.filter((x) => {
        const s = statuses.get(x.config);
        return serving.get(x.crd) !== undefined && serving.get(x.crd) === s?.assignedWebhookServer;
      }).length;
      return served === TARGETS ? true : undefined;
    },
    { timeoutMs: 900_000, intervalMs: 2_000 },
  );
  progress(`all ${TARGETS} targets served by the pool`, t);
  await request(admin, HttpMethod.POST, '/api/v1/namespaces', { metadata: { name: NAMESPACE } });
  await inParallel(targets, async (target) => {
    for (let o = 0; o < OBJECTS_PER_TARGET; o++) {
      const answer = await request(
        admin,
        HttpMethod.POST,
        `/apis/${GROUP}/v1/namespaces/${NAMESPACE}/${target.plural}`,
        {
          apiVersion: `${GROUP}/v1`,
          kind: target.kind,
          metadata: { name: `o${o}` },
          spec: { [STORED_FIELD]: `${o}`, color: 'blue' },
        },
      );
      if (answer.status !== 201)
        throw new Error(`creating an object of ${target.crd}: ${answer.status} ${answer.message}`);
    }
  });
  progress(`${TARGETS * OBJECTS_PER_TARGET} objects created`, t);
}, 1_800_000);

describe(`${TARGETS} targets over four instances, a fifth joins`, () => {
  it('moves exactly the targets the newcomer wins, all onto it, each through a verified handover', async () => {
    const admin = cluster.kubeConfigFor('admin');
    const before = await servingInstances(admin, INSTANCES);
    const pool = INSTANCES.map((name) => poolMember(name, 1));
    const expected = targets
      .filter((t) => rendezvousWinner(pool, t.crd)?.name === NEWCOMER)
      .map((t) => t.crd);
    const audit = await auditLogFromNow(cluster.auditLog);
    const nc = await connect({ ...natsConnectOptions(cluster), name: 'scale-e2e-backlog' });
    const backlog = sampleBacklog(await jetstreamManager(nc));
    const startedAt = Date.now();
    await createInstance(admin, NEWCOMER, { replicas: 2, sharding: { enabled: true, weight: 1 } });

    await waitFor(
      `the ${expected.length} moves to ${NEWCOMER}`,
      () => {
        const repointed = new Set(witness.repoints.filter((r) => r.to === NEWCOMER).map((r) => r.target));
        return expected.every((t) => repointed.has(t)) ? true : undefined;
      },
      { timeoutMs: 600_000, intervalMs: 500 },
    );
    const backlogSamples = await backlog.stop();
    await nc.close();
    const repoints = witness.repoints.filter((r) => r.to === NEWCOMER && expected.includes(r.target));
    const endedAt = Math.max(...repoints.map((r) => r.atMs));
    const [after, statuses] = await Promise.all([servingInstances(admin, INSTANCES), configStatuses(admin)]);

    const moved = targets.filter((t) => after.get(t.crd) !== before.get(t.crd));
    expect(moved.map((t) => t.crd).sort()).toEqual([...expected].sort());
    expect(moved.every((t) => after.get(t.crd) === NEWCOMER)).toBe(true);
    expect(expected.length / TARGETS).toBeGreaterThan(0.12);
    expect(expected.length / TARGETS).toBeLessThan(0.28);
    for (const t of moved) {
      expect(handoverReady(statuses.get(t.config)), t.crd).toMatchObject({
        status: 'True',
        reason: 'HandoverReady',
      });
      const repoint = repoints.find((r) => r.target === t.crd);
      expect(
        repoint?.readyPods.filter((p) => !p.reported),
        t.crd,
      ).toEqual([]);
    }

    const events = (await audit.all()).filter((e) => Date.parse(e.requestReceivedTimestamp) <= endedAt);
    const writes = events.filter((e) => WRITE_VERBS.includes(e.verb) && e.stage === 'ResponseComplete');
    const instancesWrites = writes.filter((e) => e.user.username === INSTANCES_USER).length;
    const replicas = await replicaTimeline(cluster, NEWCOMER);
    const rate = defaultConfig().bus.fanoutRatePerSecond;
    const floorMs = (expected.length / rate) * 1000;
    const totalMs = endedAt - startedAt;
    const readyAt = Math.max(...replicas.map((r) => r.readyAtMs ?? Number.NaN));
    const fromReadyMs = endedAt - readyAt;
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `[scale-e2e] ${TARGETS} targets over ${POOL.length} instances; ${NEWCOMER} joined: ${moved.length} moved ` +
        `(the resolver predicted ${expected.length}), all to ${NEWCOMER}, all HandoverReady. Rebalance ` +
        `${seconds(totalMs)} from the instance's creation; pacing floor ${seconds(floorMs)} ` +
        `(${expected.length} ÷ ${rate}/s): ${(totalMs / floorMs).toFixed(2)}×. Its replicas: ` +
        replicas
          .map(
            (r) =>
              `${r.pod} started ${seconds(r.startedAtMs - startedAt)}, read the bus and ready by ` +
              `${r.readyAtMs === undefined ? '?' : seconds(r.readyAtMs - startedAt)}`,
          )
          .join('; ') +
        `; from the last ready to the last repoint ${seconds(fromReadyMs)} (${(fromReadyMs / floorMs).toFixed(2)}× the floor). ` +
        `Apiserver writes until then: ${writes.length}, of which the instances handler's ${instancesWrites}.`,
    );
    console.log(
      `[scale-e2e] apiserver writes until the last repoint, by writer and resource:\n${writesByWriter(writes, moved.length)}`,
    );
    console.log(
      `[scale-e2e] second by second:\n${perSecond(startedAt, endedAt, writes, backlogSamples, repoints)}`,
    );

    // The apiserver's own floor for the same moves on the same cluster: the handover stopped,
    // the moved targets pointed back where they were by bare patches, as many in flight as the
    // handover has partitions.
    await stopHandover(admin);
    const inFlight = defaultConfig().bus.partitions.handover;
    const bareMs = await bareRepoints(
      admin,
      moved.map((t) => ({ crd: t.crd, to: before.get(t.crd) ?? '' })),
      inFlight,
    );
    console.log(
      `[scale-e2e] the apiserver alone, same cluster: the ${moved.length} targets pointed back by bare patches, ` +
        `${inFlight} in flight, in ${seconds(bareMs)} (${((moved.length / bareMs) * 1000).toFixed(1)}/s; ` +
        `${(bareMs / floorMs).toFixed(2)}× the pacing floor). Switchyard's moves, from the newcomer ready to the ` +
        `last repoint: ${seconds(fromReadyMs)}, ${(fromReadyMs / bareMs).toFixed(2)}× the apiserver alone.`,
    );
  }, 900_000);
});

const WRITE_VERBS = ['create', 'update', 'patch', 'delete'];

/** Writes grouped by writer, verb and resource (with subresource), most first, and each per moved target. */
function writesByWriter(writes: readonly AuditEvent[], moves: number): string {
  const counts = new Map<string, number>();
  for (const e of writes) {
    const writer = e.user.username.replace(/^system:serviceaccount:[^:]+:/, '');
    const ref = e.objectRef;
    const resource = `${ref?.resource ?? '?'}${ref?.subresource ? `/${ref.subresource}` : ''}`;
    const key = `${writer} ${e.verb} ${resource}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const rows = [...counts].sort((a, b) => b[1] - a[1]);
  return [
    ...rows.map(
      ([key, n]) => `  ${String(n).padStart(6)}  ${(n / moves).toFixed(2).padStart(6)}/move  ${key}`,
    ),
    `  ${String(writes.length).padStart(6)}  ${(writes.length / moves).toFixed(2).padStart(6)}/move  in all`,
  ].join('\n');
}

interface BacklogSample {
  atMs: number;
  /** Work items on the bus not yet acknowledged, all handlers together (WORK and FANOUT). */
  backlog: number;
}

/** Samples the handlers' backlog every second on its own, until stopped. */
function sampleBacklog(jsm: JetStreamManager): { stop(): Promise<BacklogSample[]> } {
  const samples: BacklogSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const streams = await busStats(jsm);
      const backlog = streams
        .filter((s) => s.name === STREAMS.work || s.name === STREAMS.fanout)
        .flatMap((s) => s.consumers)
        .reduce((n, c) => n + c.pending + c.ackPending, 0);
      samples.push({ atMs: Date.now(), backlog });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return samples;
    },
  };
}

/** One line per second: apiserver writes in it, the last backlog sample, moves done by its end. */
function perSecond(
  startedAt: number,
  endedAt: number,
  writes: readonly AuditEvent[],
  backlog: readonly BacklogSample[],
  repoints: readonly Repoint[],
): string {
  const rows = ['  s   writes  backlog  moved'];
  for (let s = 0; startedAt + s * 1000 <= endedAt + 1000; s++) {
    const from = startedAt + s * 1000;
    const to = from + 1000;
    const inSecond = writes.filter((e) => {
      const at = Date.parse(e.requestReceivedTimestamp);
      return at >= from && at < to;
    }).length;
    const sample = [...backlog].reverse().find((b) => b.atMs < to);
    const moved = repoints.filter((r) => r.atMs < to).length;
    rows.push(
      `${String(s).padStart(3)} ${String(inSecond).padStart(8)} ${String(sample?.backlog ?? '').padStart(8)} ${String(moved).padStart(6)}`,
    );
  }
  return rows.join('\n');
}

interface ReplicaTimes {
  pod: string;
  startedAtMs: number;
  readyAtMs: number | undefined;
}

/** From each of the instance's webhook-server logs: when it started, and when it was ready. */
async function replicaTimeline(c: LocalCluster, instance: string): Promise<ReplicaTimes[]> {
  const dirs = (await readdir(join(c.dir, 'pods'))).filter((d) =>
    d.startsWith(`${SWITCHYARD_NAMESPACE}_${instance}-webhook-server-`),
  );
  return Promise.all(
    dirs.map(async (d) => {
      const lines = (await readFile(join(c.dir, 'pods', d, 'webhook-server.log'), 'utf8'))
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { time: number; msg: string });
      return {
        pod: d.split('_')[1] ?? d,
        startedAtMs: lines[0]?.time ?? Number.NaN,
        readyAtMs: lines.find((l) => l.msg.startsWith('ready: serving conversions'))?.time,
      };
    }),
  );
}

/** The handover's Deployment scaled to zero, and none of its Pods left running. */
async function stopHandover(admin: KubeConfig): Promise<void> {
  const deployment = `/apis/apps/v1/namespaces/${SWITCHYARD_NAMESPACE}/deployments/switchyard-handover`;
  const scaled = await request(admin, HttpMethod.PATCH, deployment, { spec: { replicas: 0 } });
  if (scaled.status !== 200) throw new Error(`scaling the handover to 0: ${scaled.status} ${scaled.message}`);
  const pods = `/api/v1/namespaces/${SWITCHYARD_NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dhandover`;
  await waitFor(
    'no handover Pod left',
    async () => {
      const answer = await request(admin, HttpMethod.GET, pods);
      return ((answer.body as { items?: unknown[] }).items ?? []).length === 0 ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 500 },
  );
}

/**
 * Each target's spec.conversion pointed at `to` by a bare merge patch (Service and caBundle, as
 * a move writes them), `inFlight` at a time; the time from the first request to the last answer.
 */
async function bareRepoints(
  admin: KubeConfig,
  moves: readonly { crd: string; to: string }[],
  inFlight: number,
): Promise<number> {
  const crds = (
    await request(admin, HttpMethod.GET, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions')
  ).body as { items: { metadata: { name: string }; spec: unknown }[] };
  const bundleOf = new Map<string, string>();
  for (const crd of crds.items) {
    const service = conversionServiceOf(crd);
    const bundle = liveConversionOf(crd)?.webhook?.clientConfig?.caBundle;
    if (service && bundle) bundleOf.set(service, bundle);
  }
  const t = performance.now();
  await inParallel(
    moves,
    async ({ crd, to }) => {
      const service = webhookServiceName(to);
      const answer = await request(
        admin,
        HttpMethod.PATCH,
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd}`,
        {
          spec: {
            conversion: {
              webhook: { clientConfig: { service: { name: service }, caBundle: bundleOf.get(service) } },
            },
          },
        },
      );
      if (answer.status !== 200)
        throw new Error(`bare repoint of ${crd}: ${answer.status} ${answer.message}`);
    },
    inFlight,
  );
  return performance.now() - t;
}

let refusalsRetried = 0;

/**
 * What a user's tooling does with a write refused for the moment: retry it. Under this
 * scenario's load the admission webhook may not get its consistent read of the configs within
 * its deadline and refuses with 503 ("nothing was written, retry"), as designed (it fails closed).
 */
async function retryingRefusals(write: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      const message = (err as Error).message;
      if (attempt >= 20 || !/HTTP (429|500|503)\b/.test(message)) throw err;
      refusalsRetried++;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
}

async function inParallel<T>(
  items: readonly T[],
  each: (item: T) => Promise<void>,
  concurrency = CONCURRENCY,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await each(items[next++] as T);
    }),
  );
}

function progress(what: string, since: number): void {
  process.stderr.write(`[scale-e2e] ${what} (${((performance.now() - since) / 1000).toFixed(0)} s)\n`);
}
