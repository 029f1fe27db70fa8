// The scale scenario of issue 13: four instances in the sharding pool serve 1,000 targets with a
// few objects each; a fifth joins. About a fifth of the targets move, every one onto the
// newcomer (the resolver's own prediction, target by target), every one through a verified
// handover, and nothing else moves. Switchyard runs as Pods from deploy/ on a local cluster of
// its own.
//
// It prints what BENCHMARKS.md records: the rebalance time against the pacing floor (moves ÷
// the assign fan-out rate, 50/s by default), and, second by second, the apiserver's write rate,
// the handlers' backlog on the bus and the moves done. Nothing here asserts a duration.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { busStats } from '../../src/bus/stats.ts';
import { STREAMS } from '../../src/bus/topology.ts';
import { defaultConfig } from '../../src/config/schema.ts';
import { poolMember, rendezvousWinner } from '../../src/core/assignment.ts';
import { apiUrl, HttpMethod, send } from '../../src/kube/request.ts';
import { type LocalCluster, startLocalCluster } from '../../src/local-cluster/cluster.ts';
import { installSwitchyard, SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
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
import { auditLogFromNow } from '../support/audit-log.ts';
import { HandoverWitness } from './support/handover-witness.ts';

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

let cluster: LocalCluster;
let nc: NatsConnection;
let witness: HandoverWitness;
let failed = false;

afterEach((ctx) => {
  if (ctx.task.result?.state === 'fail') failed = true;
});

beforeAll(async () => {
  cluster = await startLocalCluster({ log });
  const admin = cluster.kubeConfigFor('admin');
  await installSwitchyard({ admin, natsUrl: cluster.natsUrl, dir: cluster.dir, log });
  nc = await connect({ servers: cluster.natsUrl, name: 'scale-e2e-witness' });
  witness = new HandoverWitness({ namespace: SWITCHYARD_NAMESPACE, instances: INSTANCES, log });
  await witness.start(jetstream(nc));

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

afterAll(async () => {
  witness?.stop();
  await nc?.close();
  if (failed) writeFileSync(join(cluster.dir, 'A_TEST_FAILED'), 'scale-rebalance');
  await cluster?.stop({ keepDir: failed });
  if (failed) process.stderr.write(`[scale-e2e] a test failed: logs kept in ${cluster.dir}\n`);
});

describe(`${TARGETS} targets over four instances, a fifth joins`, () => {
  it('moves exactly the targets the newcomer wins, all onto it, each through a verified handover', async () => {
    const admin = cluster.kubeConfigFor('admin');
    const before = await servingInstances(admin, INSTANCES);
    const pool = INSTANCES.map((name) => poolMember(name, 1));
    const expected = targets
      .filter((t) => rendezvousWinner(pool, t.crd)?.name === NEWCOMER)
      .map((t) => t.crd);
    const audit = await auditLogFromNow(cluster.auditLog);
    const jsm = await jetstreamManager(nc);
    const samples: Sample[] = [];
    const startedAt = Date.now();
    const writesBefore = await apiserverWrites(cluster);
    await createInstance(admin, NEWCOMER, { replicas: 2, sharding: { enabled: true, weight: 1 } });

    let readyAt: number | undefined;
    await waitFor(
      `the ${expected.length} moves to ${NEWCOMER}`,
      async () => {
        const repointed = new Set(witness.repoints.filter((r) => r.to === NEWCOMER).map((r) => r.target));
        const done = expected.filter((t) => repointed.has(t)).length;
        readyAt ??= (await readyReplicas(cluster, NEWCOMER)) >= 2 ? Date.now() : undefined;
        samples.push({
          atMs: Date.now() - startedAt,
          writes: (await apiserverWrites(cluster)) - writesBefore,
          backlog: await workBacklog(jsm),
          moved: done,
        });
        return done === expected.length ? true : undefined;
      },
      { timeoutMs: 600_000, intervalMs: 1_000 },
    );
    const repoints = witness.repoints.filter((r) => r.to === NEWCOMER);
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

    const instancesWrites = (await audit.all()).filter(
      (e) => e.user.username === INSTANCES_USER && ['create', 'update', 'patch'].includes(e.verb),
    ).length;
    const rate = defaultConfig().bus.fanoutRatePerSecond;
    const floorMs = (expected.length / rate) * 1000;
    const totalMs = endedAt - startedAt;
    const fromReadyMs = readyAt === undefined ? undefined : endedAt - readyAt;
    console.log(
      `[scale-e2e] ${TARGETS} targets over ${POOL.length} instances; ${NEWCOMER} joined: ${moved.length} moved ` +
        `(the resolver predicted ${expected.length}), all to ${NEWCOMER}, all HandoverReady. Rebalance ` +
        `${(totalMs / 1000).toFixed(1)} s from the instance's creation (its replicas ready after ` +
        `${readyAt === undefined ? '?' : ((readyAt - startedAt) / 1000).toFixed(1)} s; ` +
        `${fromReadyMs === undefined ? '?' : (fromReadyMs / 1000).toFixed(1)} s from then); pacing floor ` +
        `${(floorMs / 1000).toFixed(1)} s (${expected.length} ÷ ${rate}/s): ${(totalMs / floorMs).toFixed(2)}× ` +
        `(${fromReadyMs === undefined ? '?' : (fromReadyMs / floorMs).toFixed(2)}× from ready). ` +
        `Instances-handler writes meanwhile: ${instancesWrites}.`,
    );
    console.log(
      `[scale-e2e] second by second: ${samples
        .map((s, i) => {
          const previous = samples[i - 1];
          const perSecond = previous ? ((s.writes - previous.writes) * 1000) / (s.atMs - previous.atMs) : 0;
          return `t=${(s.atMs / 1000).toFixed(0)}s writes/s ${perSecond.toFixed(0)} backlog ${s.backlog} moved ${s.moved}`;
        })
        .join(' | ')}`,
    );
  }, 900_000);
});

interface Sample {
  atMs: number;
  /** Apiserver write requests since the newcomer was created. */
  writes: number;
  /** Work items on the bus not yet acknowledged, all handlers together. */
  backlog: number;
  moved: number;
}

/** Write requests the apiserver has served (apiserver_request_total, every verb that changes state). */
async function apiserverWrites(c: LocalCluster): Promise<number> {
  const kc = c.kubeConfigFor('admin');
  const text = await (await send(kc, HttpMethod.GET, apiUrl(kc, '/metrics'))).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const verb = /verb="([A-Z]+)"/.exec(line)?.[1];
    if (verb && ['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(verb))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return total;
}

async function workBacklog(jsm: Awaited<ReturnType<typeof jetstreamManager>>): Promise<number> {
  const streams = await busStats(jsm);
  return streams
    .filter((s) => s.name === STREAMS.work || s.name === STREAMS.fanout)
    .flatMap((s) => s.consumers)
    .reduce((n, c) => n + c.pending + c.ackPending, 0);
}

async function readyReplicas(c: LocalCluster, instance: string): Promise<number> {
  const kc = c.kubeConfigFor('admin');
  const answer = await request(
    kc,
    HttpMethod.GET,
    `/apis/apps/v1/namespaces/${SWITCHYARD_NAMESPACE}/deployments/${instance}-webhook-server`,
  );
  return (answer.body as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0;
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

async function inParallel<T>(items: readonly T[], each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) await each(items[next++] as T);
    }),
  );
}

function progress(what: string, since: number): void {
  process.stderr.write(`[scale-e2e] ${what} (${((performance.now() - since) / 1000).toFixed(0)} s)\n`);
}
