// The scale scenario, shared by its end-to-end test (test/e2e/scale-rebalance.e2e.ts: is every
// predicted move made, verified, and nothing else) and its benchmark (bench/scale-rebalance.ts:
// how long, how many writes, against the apiserver alone): a pool of instances serving many
// two-version targets, a newcomer joining it, and what the apiserver and the bus did meanwhile.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { type JetStreamManager, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { GROUP as API_GROUP, VERSION, webhookServiceName } from '../../../src/api/constants.ts';
import { busStats } from '../../../src/bus/stats.ts';
import { STREAMS } from '../../../src/bus/topology.ts';
import { defaultConfig } from '../../../src/config/schema.ts';
import { poolMember, rendezvousWinner } from '../../../src/core/assignment.ts';
import { conversionServiceOf, liveConversionOf } from '../../../src/core/target-conversion.ts';
import { HttpMethod } from '../../../src/kube/request.ts';
import type { LocalCluster } from '../../../src/local-cluster/cluster.ts';
import { SWITCHYARD_NAMESPACE } from '../../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../../src/local-cluster/nats-client.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';
import {
  configStatuses,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  request,
  STORED_FIELD,
  servingInstances,
} from '../../../src/scenario/fleet.ts';
import { type AuditEvent, auditLogFromNow } from '../../support/audit-log.ts';
import type { Repoint } from './handover-witness.ts';
import type { InstalledCluster } from './installed-cluster.ts';
import { type CpuSnapshot, cpuBetween, cpuSnapshot } from './process-cpu.ts';

export const SCALE_GROUP = 'scale.switchyard.dev';
export const SCALE_NAMESPACE = 'scale';
const OBJECTS_PER_TARGET = 2;
/** Requests the scenario sends at once while it builds the fleet. */
const CONCURRENCY = 8;
const INSTANCES_USER = `system:serviceaccount:${SWITCHYARD_NAMESPACE}:switchyard-instances`;
const WRITE_VERBS = ['create', 'update', 'patch', 'delete'];

export interface ScaleTarget {
  crd: string;
  config: string;
  plural: string;
  kind: string;
}

export function scaleTargets(count: number): ScaleTarget[] {
  return Array.from({ length: count }, (_, i) => ({
    crd: `things${i}.${SCALE_GROUP}`,
    config: `things${i}`,
    plural: `things${i}`,
    kind: `Thing${i}`,
  }));
}

/**
 * The pool (two replicas each, the first the default), every target with its config, all served
 * by the pool, then two objects of each target stored at v1.
 */
export async function createScaleFleet(
  admin: KubeConfig,
  targets: readonly ScaleTarget[],
  pool: readonly string[],
  progress: (what: string) => void,
): Promise<void> {
  for (const [i, name] of pool.entries())
    await createInstance(admin, name, {
      default: i === 0,
      replicas: 2,
      sharding: { enabled: true, weight: 1 },
    });
  let refusals = 0;
  await inParallel(targets, async (target) => {
    refusals += await retryingRefusals(() => createTwoVersionTarget(admin, target.crd, target.kind));
    refusals += await retryingRefusals(() => createRenameConfig(admin, target.config, target.crd));
  });
  progress(`${targets.length} targets and configs created (${refusals} refusals retried)`);
  await untilServedAsAssigned(admin, targets, pool, 900_000);
  progress(`all ${targets.length} targets served by the pool`);
  await request(admin, HttpMethod.POST, '/api/v1/namespaces', { metadata: { name: SCALE_NAMESPACE } });
  await inParallel(targets, async (target) => {
    for (let o = 0; o < OBJECTS_PER_TARGET; o++) {
      const answer = await request(
        admin,
        HttpMethod.POST,
        `/apis/${SCALE_GROUP}/v1/namespaces/${SCALE_NAMESPACE}/${target.plural}`,
        {
          apiVersion: `${SCALE_GROUP}/v1`,
          kind: target.kind,
          metadata: { name: `o${o}` },
          spec: { [STORED_FIELD]: `${o}`, color: 'blue' },
        },
      );
      if (answer.status !== 201)
        throw new Error(`creating an object of ${target.crd}: ${answer.status} ${answer.message}`);
    }
  });
  progress(`${targets.length * OBJECTS_PER_TARGET} objects created`);
}

/** Until every target names the instance its config's status assigns, one of `instances`. */
export async function untilServedAsAssigned(
  admin: KubeConfig,
  targets: readonly ScaleTarget[],
  instances: readonly string[],
  timeoutMs: number,
): Promise<void> {
  await waitFor(
    `all ${targets.length} targets served as assigned`,
    async () => {
      const [statuses, serving] = await Promise.all([
        configStatuses(admin),
        servingInstances(admin, instances),
      ]);
      const served = targets.filter((x) => {
        const s = statuses.get(x.config);
        return serving.get(x.crd) !== undefined && serving.get(x.crd) === s?.assignedWebhookServer;
      }).length;
      return served === targets.length ? true : undefined;
    },
    { timeoutMs, intervalMs: 2_000 },
  );
}

export interface Rebalance {
  newcomer: string;
  /** The targets the resolver predicts the newcomer wins. */
  expected: string[];
  /** Which instance served each target before the join, and after the last predicted repoint. */
  before: Map<string, string | undefined>;
  after: Map<string, string | undefined>;
  /** The witness's repoints of the predicted targets onto the newcomer. */
  repoints: Repoint[];
  startedAt: number;
  endedAt: number;
  /** Apiserver writes from the newcomer's creation to the last repoint. */
  writes: AuditEvent[];
  replicas: ReplicaTimes[];
  backlog: BacklogSample[];
  /** CPU-seconds by component from the newcomer's creation until every predicted move was seen. */
  cpu: [string, number][];
  cpuWindowMs: number;
}

/** Creates `newcomer` in the pool (weight 1) and follows the rebalance to its last predicted repoint. */
export async function rebalanceOnto(
  installed: InstalledCluster,
  targets: readonly ScaleTarget[],
  pool: readonly string[],
  newcomer: string,
): Promise<Rebalance> {
  const { cluster, admin, witness } = installed;
  const instances = [...pool, newcomer];
  const before = await servingInstances(admin, instances);
  const members = instances.map((name) => poolMember(name, 1));
  const expected = targets
    .filter((t) => rendezvousWinner(members, t.crd)?.name === newcomer)
    .map((t) => t.crd);
  const audit = await auditLogFromNow(cluster.auditLog);
  const nc = await connect({ ...natsConnectOptions(cluster), name: 'scale-backlog' });
  const backlog = sampleBacklog(await jetstreamManager(nc));
  const startedAt = Date.now();
  const cpuBefore: CpuSnapshot = cpuSnapshot(cluster);
  const seen = witness.repoints.length;
  await createInstance(admin, newcomer, { replicas: 2, sharding: { enabled: true, weight: 1 } });
  const moved = () =>
    witness.repoints.slice(seen).filter((r) => r.to === newcomer && expected.includes(r.target));
  await waitFor(
    `the ${expected.length} moves to ${newcomer}`,
    () => (new Set(moved().map((r) => r.target)).size === expected.length ? true : undefined),
    { timeoutMs: 600_000, intervalMs: 500 },
  );
  const cpu = cpuBetween(cpuBefore, cpuSnapshot(cluster));
  const cpuWindowMs = Date.now() - startedAt;
  const samples = await backlog.stop();
  await nc.close();
  const repoints = moved();
  const endedAt = Math.max(...repoints.map((r) => r.atMs));
  const events = (await audit.all()).filter((e) => Date.parse(e.requestReceivedTimestamp) <= endedAt);
  return {
    newcomer,
    expected,
    before,
    after: await servingInstances(admin, instances),
    repoints,
    startedAt,
    endedAt,
    writes: events.filter((e) => WRITE_VERBS.includes(e.verb) && e.stage === 'ResponseComplete'),
    replicas: await replicaTimeline(cluster, newcomer, startedAt),
    backlog: samples,
    cpu,
    cpuWindowMs,
  };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** When the newcomer's last replica was ready, from their logs. */
export function newcomerReadyAt(r: Rebalance): number {
  return Math.max(...r.replicas.map((x) => x.readyAtMs ?? Number.NaN));
}

/** What a rebalance took, in the words and figures BENCHMARKS.md reports. */
export function describeRebalance(r: Rebalance, targets: number, pool: number): string {
  const rate = defaultConfig().bus.fanoutRatePerSecond;
  const floorMs = (r.expected.length / rate) * 1000;
  const totalMs = r.endedAt - r.startedAt;
  const fromReadyMs = r.endedAt - newcomerReadyAt(r);
  const instancesWrites = r.writes.filter((e) => e.user.username === INSTANCES_USER).length;
  return (
    `${targets} targets over ${pool} instances; ${r.newcomer} joined: ${r.expected.length} moves predicted. ` +
    `Rebalance ${seconds(totalMs)} from the instance's creation; pacing floor ${seconds(floorMs)} ` +
    `(${r.expected.length} ÷ ${rate}/s): ${(totalMs / floorMs).toFixed(2)}×. Its replicas: ` +
    r.replicas
      .map(
        (x) =>
          `${x.pod} started ${seconds(x.startedAtMs - r.startedAt)}, read the bus and ready by ` +
          `${x.readyAtMs === undefined ? '?' : seconds(x.readyAtMs - r.startedAt)}`,
      )
      .join('; ') +
    `; from the last ready to the last repoint ${seconds(fromReadyMs)}. ` +
    `Apiserver writes until then: ${r.writes.length} (${(r.writes.length / r.expected.length).toFixed(2)} per move), ` +
    `of which the instances handler's ${instancesWrites}.`
  );
}

/** Writes grouped by writer, verb and resource (with subresource), most first, and each per moved target. */
export function writesByWriter(writes: readonly AuditEvent[], moves: number): string {
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
export function perSecond(r: Rebalance): string {
  const rows = ['  s   writes  backlog  moved'];
  for (let s = 0; r.startedAt + s * 1000 <= r.endedAt + 1000; s++) {
    const from = r.startedAt + s * 1000;
    const to = from + 1000;
    const inSecond = r.writes.filter((e) => {
      const at = Date.parse(e.requestReceivedTimestamp);
      return at >= from && at < to;
    }).length;
    const sample = [...r.backlog].reverse().find((b) => b.atMs < to);
    const moved = r.repoints.filter((x) => x.atMs < to).length;
    rows.push(
      `${String(s).padStart(3)} ${String(inSecond).padStart(8)} ${String(sample?.backlog ?? '').padStart(8)} ${String(moved).padStart(6)}`,
    );
  }
  return rows.join('\n');
}

export interface ReplicaTimes {
  pod: string;
  startedAtMs: number;
  readyAtMs: number | undefined;
}

/** From the webhook-server logs of the instance's Pods started since `sinceMs`: when each started, and was ready. */
async function replicaTimeline(c: LocalCluster, instance: string, sinceMs: number): Promise<ReplicaTimes[]> {
  const dirs = (await readdir(join(c.dir, 'pods'))).filter((d) =>
    d.startsWith(`${SWITCHYARD_NAMESPACE}_${instance}-webhook-server-`),
  );
  const all = await Promise.all(
    dirs.map(async (d) => {
      const lines = (await readFile(join(c.dir, 'pods', d, 'webhook-server.log'), 'utf8'))
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { time: string; msg: string });
      const ready = lines.find((l) => l.msg.startsWith('ready: serving conversions'));
      return {
        pod: d.split('_')[1] ?? d,
        startedAtMs: lines[0] ? Date.parse(lines[0].time) : Number.NaN,
        readyAtMs: ready && Date.parse(ready.time),
      };
    }),
  );
  return all.filter((r) => r.startedAtMs >= sinceMs);
}

/**
 * The same instance started with nothing to move: created outside the pool on the idle cluster,
 * the time from its creation to its last replica ready; then deleted, and gone.
 */
export async function bareStart(installed: InstalledCluster, name: string): Promise<number> {
  const { cluster, admin } = installed;
  const startedAt = Date.now();
  await createInstance(admin, name, { replicas: 2 });
  const ready = await waitFor(
    `${name}'s two replicas ready`,
    async () => {
      const replicas = await replicaTimeline(cluster, name, startedAt).catch(() => []);
      const times = replicas.map((r) => r.readyAtMs).filter((t) => t !== undefined);
      return times.length >= 2 ? Math.max(...times) : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 200 },
  );
  await deleteInstance(admin, name);
  return ready - startedAt;
}

export async function deleteInstance(admin: KubeConfig, name: string): Promise<void> {
  const path = `/apis/${API_GROUP}/${VERSION}/conversionwebhookservers/${name}`;
  const deleted = await request(admin, HttpMethod.DELETE, path);
  if (deleted.status !== 200 && deleted.status !== 202)
    throw new Error(`deleting ${name}: ${deleted.status} ${deleted.message}`);
  await waitFor(
    `${name} gone`,
    async () => ((await request(admin, HttpMethod.GET, path)).status === 404 ? true : undefined),
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}

const HANDOVER_DEPLOYMENT = `/apis/apps/v1/namespaces/${SWITCHYARD_NAMESPACE}/deployments/switchyard-handover`;

/** The handover's Deployment scaled to `replicas`; at 0, none of its Pods left running. */
export async function scaleHandover(admin: KubeConfig, replicas: number): Promise<void> {
  const scaled = await request(admin, HttpMethod.PATCH, HANDOVER_DEPLOYMENT, { spec: { replicas } });
  if (scaled.status !== 200)
    throw new Error(`scaling the handover to ${replicas}: ${scaled.status} ${scaled.message}`);
  if (replicas > 0) return;
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

/** The handover's replicas as deployed. */
export async function handoverReplicas(admin: KubeConfig): Promise<number> {
  const answer = await request(admin, HttpMethod.GET, HANDOVER_DEPLOYMENT);
  return (answer.body as { spec?: { replicas?: number } }).spec?.replicas ?? 1;
}

/**
 * The apiserver alone: each target's spec.conversion pointed at `to` by a bare merge patch
 * (Service and caBundle, as a move writes them), `inFlight` at a time; the time from the first
 * request to the last answer.
 */
export async function bareRepoints(
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

/**
 * What a user's tooling does with a write refused for the moment: retry it. Under this
 * scenario's load the admission webhook may not get its consistent read of the configs within
 * its deadline and refuses with 503 ("nothing was written, retry"), as designed (it fails closed).
 * How many refusals were retried.
 */
async function retryingRefusals(write: () => Promise<void>): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    try {
      await write();
      return attempt - 1;
    } catch (err) {
      const message = (err as Error).message;
      if (attempt >= 20 || !/HTTP (429|500|503)\b/.test(message)) throw err;
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
