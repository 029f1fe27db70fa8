// What a replicated bus costs a move (issue 28): the same rebalance on R1 (one nats-server,
// every stream one replica) and on R3 (a 3-node JetStream cluster, every stream and pacer bucket
// three replicas), in one run, each on a fresh local stack with Switchyard installed from deploy/:
//
//   SWITCHYARD_BIN_DIR=… SWITCHYARD_BIN_NATS=… node bench/replicated-bus.ts     (~2.5 min a round)
//
// On each stack: a pool of three instances (two webhook-server replicas each) serving
// BENCH_TARGETS targets (40), then a fourth instance joins the pool, and from the apiserver's
// audit log (its own clock, the same as every process's here):
//   * the rebalance: from the newcomer's creation to the last moved target verified (the
//     handover's status write after the repoint), and how many moved;
//   * per move, from the assignment (assign's status write naming the newcomer) to the repoint
//     (the handover's patch of the CRD), and from the newcomer's first report (its first
//     replica's first served-set Lease write) to the repoint: the handover proper, the bus hops
//     and the gate, without the wait for the newcomer's Pods to start;
//   * the bus alone: JetStream publish → ack on a scratch stream declared as WORK is (a client
//     on this machine, one publish at a time), with the client on the stream leader's server,
//     and on R3 also on a follower's (where two in three of the components' connections land);
//   * beside them: CPU seconds of nats-server and of the whole stack until the moves are verified
//     (R3's three servers share this machine's cores), the Pods that restarted a container (a
//     disturbed run), and the watches dropped to relist (JetStream's 10158 on a replicated stream).
// BENCH_ROUNDS (1) repeats R1, R3 alternately; BENCH_PUBLISHES (3,000) sizes the bus figure;
// SWITCHYARD_KEEP_CLUSTER=1 keeps each stack's directory (every Pod's log).
//
// The gate confirms a verified move for handover.confirmSeconds (10 s as deployed) before the
// repoint, the same fixed wait on both buses, which would bury their difference: the bench sets
// BENCH_CONFIRM_SECONDS (1 s) on the handover Deployment, as a user sets it, so every step of the
// deployed path runs (the confirming status write, the re-check scheduled on the bus) with the
// timer short. BENCH_CONFIRM_SECONDS=10 measures the deployed setting.
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { servedLeaseName, webhookServiceName } from '../src/api/constants.ts';
import { DEFAULT_TOPOLOGY, STREAMS, type StreamReplicas, streamConfigs } from '../src/bus/topology.ts';
import { poolMember, rendezvousWinner } from '../src/core/assignment.ts';
import { HttpMethod } from '../src/kube/request.ts';
import { type LocalCluster, startLocalCluster } from '../src/local-cluster/cluster.ts';
import { installSwitchyard, SWITCHYARD_NAMESPACE } from '../src/local-cluster/install.ts';
import { runKubectl } from '../src/local-cluster/kubectl.ts';
import type { NatsServer } from '../src/local-cluster/nats.ts';
import { natsConnectOptions } from '../src/local-cluster/nats-client.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import {
  configStatuses,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
  isServedBy,
  request,
  servingInstances,
} from '../src/scenario/fleet.ts';
import { type AuditEvent, auditLogFromNow } from '../test/support/audit-log.ts';

const TARGETS = Number(process.env.BENCH_TARGETS ?? 40);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 1);
const CONFIRM_SECONDS = Number(process.env.BENCH_CONFIRM_SECONDS ?? 1);
const PUBLISHES = Number(process.env.BENCH_PUBLISHES ?? 3_000);
/** Publishes before the timed ones: connection, stream lookup and the leader's first writes settle. */
const WARMUP_PUBLISHES = 200;
const POOL = ['alpha', 'bravo', 'charlie'] as const;
const NEWCOMER = 'delta';
const INSTANCES = [...POOL, NEWCOMER];
const GROUP = 'replicated.switchyard.dev';
const SCRATCH_STREAM = 'BENCH_PUBLISH';
/** About the size of a handover work item on the bus. */
const PAYLOAD = JSON.stringify({
  target: `things0.${GROUP}`,
  reason: 'assigned',
  seq: 123456,
  pad: 'x'.repeat(96),
});
const BUSES = ['R1', 'R3'] as const;
type Bus = (typeof BUSES)[number];

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'bench-replicated-bus' });
const userOf = (serviceAccount: string) => `system:serviceaccount:${SWITCHYARD_NAMESPACE}:${serviceAccount}`;
const ASSIGN_USER = userOf('switchyard-assign');
const HANDOVER_USER = userOf('switchyard-handover');

const targets = Array.from({ length: TARGETS }, (_, i) => ({
  crd: `things${i}.${GROUP}`,
  config: `things${i}`,
  kind: `Thing${i}`,
}));

/** Everything measured on one stack. Times in ms. */
interface StackRun {
  bus: Bus;
  installMs: number;
  fleetServedMs: number;
  predicted: number;
  moved: number;
  verified: number;
  rebalanceMs: number;
  /** From the newcomer's creation to its first replica's first served-set report. */
  reportedMs: number;
  assignToRepointMs: number[];
  reportToRepointMs: number[];
  publishOnLeaderMs: number[];
  /** R3 only: the client connected to a node that does not lead the stream. */
  publishOnFollowerMs: number[] | undefined;
  relists: Relists;
  /** CPU seconds used by the time the moves are verified (before the publish timing). */
  cpu: StackCpu;
  /** Container restarts of Switchyard's and the instances' Pods over the stack's life: a disturbed run. */
  restarts: string[];
}

// ---- one stack ----------------------------------------------------------------------------

async function measureOn(bus: Bus): Promise<StackRun> {
  const replicas: StreamReplicas = bus === 'R3' ? 3 : 1;
  progress(`${bus}: starting a local stack (load average ${loadavg()[0]?.toFixed(1)})`);
  const cluster = await startLocalCluster({ log, natsCluster: replicas === 3 });
  try {
    const admin = cluster.kubeConfigFor('admin');
    let t = performance.now();
    await installSwitchyard({
      admin,
      natsUrl: cluster.natsUrl,
      natsCaFile: cluster.natsCaFile,
      natsCredentialsDir: cluster.natsCredentialsDir,
      streamReplicas: replicas,
      log,
    });
    const installMs = performance.now() - t;
    await setConfirmSeconds(cluster, CONFIRM_SECONDS);
    t = performance.now();
    await buildFleet(admin);
    const fleetServedMs = performance.now() - t;
    progress(`${bus}: ${TARGETS} targets served; ${NEWCOMER} joins the pool`);
    const rebalance = await rebalanceOntoNewcomer(cluster);
    const cpu = stackCpuSeconds(cluster);
    progress(`${bus}: ${rebalance.moved} moves verified; timing ${PUBLISHES} publishes`);
    const publish = await publishLatency(cluster, replicas);
    const relists = await watcherRelists(cluster);
    const restarts = await podRestarts(admin);
    return { bus, installMs, fleetServedMs, ...rebalance, ...publish, relists, cpu, restarts };
  } finally {
    const keepDir = process.env.SWITCHYARD_KEEP_CLUSTER === '1';
    await cluster.stop({ keepDir });
    if (keepDir) progress(`${bus}: logs kept in ${cluster.dir}`);
  }
}

/**
 * handover.confirmSeconds on the handover Deployment, as a user changes it (`kubectl set env`),
 * and every handover Pod running with it before the fleet is built: the first moves use it too.
 */
async function setConfirmSeconds(cluster: LocalCluster, seconds: number): Promise<void> {
  const kubectl = async (...args: string[]) => {
    const result = await runKubectl(cluster.kubeConfigs.admin, ['-n', SWITCHYARD_NAMESPACE, ...args], {
      timeoutMs: 200_000,
    });
    if (result.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${result.stderr.trim()}`);
  };
  await kubectl(
    'set',
    'env',
    'deployment/switchyard-handover',
    `SWITCHYARD_HANDOVER_CONFIRM_SECONDS=${seconds}`,
  );
  await kubectl('rollout', 'status', 'deployment/switchyard-handover', '--timeout=180s');
  // rollout status is done when the new Pods are ready; the old ones may still be draining.
  const pods = `/api/v1/namespaces/${SWITCHYARD_NAMESPACE}/pods?labelSelector=app.kubernetes.io%2Fcomponent%3Dhandover`;
  await waitFor(
    'the old handover Pods gone',
    async () => {
      const items = (
        (await request(cluster.kubeConfigFor('admin'), HttpMethod.GET, pods)).body as {
          items?: { metadata: { deletionTimestamp?: string } }[];
        }
      ).items;
      return items?.every((p) => p.metadata.deletionTimestamp === undefined) ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}

/** The pool's three instances, then every target and its config, until each is served where assigned. */
async function buildFleet(admin: KubeConfig): Promise<void> {
  for (const [i, name] of POOL.entries())
    await createInstance(admin, name, {
      default: i === 0,
      replicas: 2,
      sharding: { enabled: true, weight: 1 },
    });
  for (const target of targets) {
    await createTwoVersionTarget(admin, target.crd, target.kind);
    await createRenameConfig(admin, target.config, target.crd);
  }
  await waitFor(
    `all ${TARGETS} targets served`,
    async () => {
      const [statuses, serving] = await Promise.all([
        configStatuses(admin),
        servingInstances(admin, INSTANCES),
      ]);
      const served = targets.filter((t) => {
        const status = statuses.get(t.config);
        return isServedBy(status, serving.get(t.crd), status?.assignedWebhookServer);
      });
      return served.length === TARGETS ? true : undefined;
    },
    { timeoutMs: 600_000, intervalMs: 1_000 },
  );
}

type Rebalance = Pick<
  StackRun,
  | 'predicted'
  | 'moved'
  | 'verified'
  | 'rebalanceMs'
  | 'reportedMs'
  | 'assignToRepointMs'
  | 'reportToRepointMs'
>;

/** The newcomer joins the pool; every target it wins moves, verified; the times from the audit log. */
async function rebalanceOntoNewcomer(cluster: LocalCluster): Promise<Rebalance> {
  const admin = cluster.kubeConfigFor('admin');
  const before = await servingInstances(admin, INSTANCES);
  const pool = INSTANCES.map((name) => poolMember(name, 1));
  const expected = targets.filter((t) => rendezvousWinner(pool, t.crd)?.name === NEWCOMER);
  const audit = await auditLogFromNow(cluster.auditLog);
  await createInstance(admin, NEWCOMER, { replicas: 2, sharding: { enabled: true, weight: 1 } });

  const statuses = await waitFor(
    `the ${expected.length} moves to ${NEWCOMER} verified`,
    async () => {
      const [statuses, serving] = await Promise.all([
        configStatuses(admin),
        servingInstances(admin, INSTANCES),
      ]);
      const done = expected.every((t) => isServedBy(statuses.get(t.config), serving.get(t.crd), NEWCOMER));
      return done ? statuses : undefined;
    },
    { timeoutMs: 600_000, intervalMs: 500 },
  );
  const after = await servingInstances(admin, INSTANCES);
  const moved = targets.filter((t) => after.get(t.crd) !== before.get(t.crd));
  const strays = moved.filter((t) => !expected.includes(t));
  if (strays.length > 0)
    throw new Error(`targets moved that ${NEWCOMER} does not win: ${strays.map((t) => t.crd).join(', ')}`);

  // The apiserver writes its audit log asynchronously: wait for the verifying write of every move.
  const events = await audit.waitFor("the handover's status write after every repoint", (events) => {
    const moves = expected.map((t) => moveTimes(events, t));
    return moves.every((m) => m.verifiedAt !== undefined) ? events : [];
  });
  const createdAt = onlyTime(
    events.filter((e) => isWrite(e, 'conversionwebhookservers', NEWCOMER) && e.verb === 'create'),
    `the creation of ${NEWCOMER}`,
  );
  const reportedAt = newcomerReportedAt(events);
  const moves = expected.map((t) => completeMove(moveTimes(events, t), t.crd));
  return {
    predicted: expected.length,
    moved: moved.length,
    verified: expected.filter((t) => handoverReady(statuses.get(t.config))?.reason === 'HandoverReady')
      .length,
    rebalanceMs: Math.max(...moves.map((m) => m.verifiedAt)) - createdAt,
    reportedMs: reportedAt - createdAt,
    assignToRepointMs: moves.map((m) => m.repointedAt - m.assignedAt),
    reportToRepointMs: moves.map((m) => m.repointedAt - reportedAt),
  };
}

// ---- reading the audit log (apiserver times of completed, successful writes) -----------------

interface MoveTimes {
  /** Assign's status write naming the newcomer (with HandoverReady False about it). */
  assignedAt: number | undefined;
  /** The handover's patch of the CRD's spec.conversion. */
  repointedAt: number | undefined;
  /** The handover's first status write after the repoint: HandoverReady True. */
  verifiedAt: number | undefined;
}

function moveTimes(events: readonly AuditEvent[], target: (typeof targets)[number]): MoveTimes {
  const statusWrites = (user: string) =>
    events.filter(
      (e) => isWrite(e, 'crdconversionconfigs', target.config, 'status') && e.user.username === user,
    );
  const assignedAt = firstTime(statusWrites(ASSIGN_USER));
  const repointedAt = firstTime(
    events.filter(
      (e) => isWrite(e, 'customresourcedefinitions', target.crd) && e.user.username === HANDOVER_USER,
    ),
  );
  const verifiedAt =
    repointedAt === undefined
      ? undefined
      : firstTime(statusWrites(HANDOVER_USER).filter((e) => timeOf(e) >= repointedAt));
  return { assignedAt, repointedAt, verifiedAt };
}

function completeMove(m: MoveTimes, target: string): Record<keyof MoveTimes, number> {
  const { assignedAt, repointedAt, verifiedAt } = m;
  if (assignedAt === undefined || repointedAt === undefined || verifiedAt === undefined)
    throw new Error(`${target}: not every write of its move is in the audit log: ${JSON.stringify(m)}`);
  return { assignedAt, repointedAt, verifiedAt };
}

/**
 * When the newcomer first reported: its first served-set Lease write. A replica writes its Lease
 * first once it has read the bus and compiled what is assigned to it (src/webhook/run.ts), and the
 * assignments are all made before its Pod starts, so that write lists every target it wins. The
 * gate needs every *ready* Pod's report, and a replica turns ready only after it has reported: the
 * first report can open the gate before the other replica has started (the later report would
 * come after some repoints).
 */
function newcomerReportedAt(events: readonly AuditEvent[]): number {
  const prefix = servedLeaseName(webhookServiceName(NEWCOMER));
  return onlyTime(
    events.filter(
      (e) =>
        e.objectRef?.resource === 'leases' &&
        (e.objectRef.name ?? '').startsWith(prefix) &&
        isSuccessfulWrite(e),
    ),
    `a served-set Lease write by ${NEWCOMER}'s replicas`,
  );
}

function isWrite(e: AuditEvent, resource: string, name: string, subresource?: string): boolean {
  return (
    e.objectRef?.resource === resource &&
    e.objectRef.name === name &&
    e.objectRef.subresource === subresource &&
    isSuccessfulWrite(e)
  );
}

function isSuccessfulWrite(e: AuditEvent): boolean {
  const code = e.responseStatus?.code ?? 0;
  return (
    e.stage === 'ResponseComplete' &&
    ['create', 'update', 'patch'].includes(e.verb) &&
    code >= 200 &&
    code < 300
  );
}

/** When the apiserver answered the write. */
function timeOf(e: AuditEvent): number {
  return Date.parse(e.stageTimestamp);
}

function firstTime(events: readonly AuditEvent[]): number | undefined {
  return events.length === 0 ? undefined : Math.min(...events.map(timeOf));
}

function onlyTime(events: readonly AuditEvent[], what: string): number {
  const time = firstTime(events);
  if (time === undefined) throw new Error(`not in the audit log: ${what}`);
  return time;
}

// ---- the bus alone -------------------------------------------------------------------------

/**
 * Publish → ack on a scratch stream declared as WORK is (same storage, replicas, retention,
 * duplicate window; its own subjects, so no handler sees the messages), one publish at a time
 * with a message id as every producer here sends one.
 */
async function publishLatency(
  cluster: LocalCluster,
  replicas: StreamReplicas,
): Promise<Pick<StackRun, 'publishOnLeaderMs' | 'publishOnFollowerMs'>> {
  const nc = await connect({ ...natsConnectOptions(cluster), name: 'bench-publish-setup' });
  const jsm = await jetstreamManager(nc);
  const work = streamConfigs({ ...DEFAULT_TOPOLOGY, streamReplicas: replicas }).find(
    (s) => s.name === STREAMS.work,
  );
  await jsm.streams.add({ ...work, name: SCRATCH_STREAM, subjects: ['bench.publish.>'] });
  try {
    const leader = cluster.natsCluster
      ? await cluster.natsCluster.streamLeader(SCRATCH_STREAM)
      : cluster.nats;
    const follower = cluster.natsCluster?.nodes.find((n) => n !== leader);
    return {
      publishOnLeaderMs: await timedPublishes(leader, 'leader'),
      publishOnFollowerMs: follower ? await timedPublishes(follower, 'follower') : undefined,
    };
  } finally {
    await jsm.streams.delete(SCRATCH_STREAM);
    await nc.close();
  }
}

async function timedPublishes(server: NatsServer, label: string): Promise<number[]> {
  const nc = await connect({
    ...natsConnectOptions({ natsUrl: server.url, natsCaFile: server.tls?.paths.caFile }),
    name: `bench-publish-${label}`,
  });
  const js = jetstream(nc);
  const publish = (i: number) =>
    js.publish(`bench.publish.${i % 64}`, PAYLOAD, { msgID: `${label}-${i}`, timeout: 5_000 });
  try {
    for (let i = 0; i < WARMUP_PUBLISHES; i++) await publish(-1 - i);
    const times: number[] = [];
    for (let i = 0; i < PUBLISHES; i++) {
      const t = performance.now();
      await publish(i);
      times.push(performance.now() - t);
    }
    return times;
  } finally {
    await nc.close();
  }
}

// ---- where the machine's time went -----------------------------------------------------------

interface StackCpu {
  /** Every nats-server of the stack: one, or the cluster's three, all on this machine's cores. */
  nats: number;
  /** Every process of the stack still running: control plane, NATS, every Pod. */
  all: number;
}

/**
 * User + system CPU seconds of the stack's running processes so far (/proc/<pid>/stat). On this
 * machine the three nodes of R3 share the same two cores, where a deployment gives each its own.
 */
function stackCpuSeconds(cluster: LocalCluster): StackCpu {
  const natsPids = new Set((cluster.natsCluster?.nodes ?? [cluster.nats]).map((n) => n.pid));
  let nats = 0;
  let all = 0;
  for (const { pid } of cluster.pids()) {
    const seconds = cpuSecondsOf(pid);
    all += seconds;
    if (natsPids.has(pid)) nats += seconds;
  }
  return { nats, all };
}

function cpuSecondsOf(pid: number): number {
  const USER_HZ = 100;
  try {
    // The fields after the command name, which may contain spaces: utime and stime are 14th and 15th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / USER_HZ;
  } catch {
    return 0; // exited meanwhile
  }
}

/** Each Pod of the stack that restarted a container, with how many times. */
async function podRestarts(admin: KubeConfig): Promise<string[]> {
  const answer = await request(admin, HttpMethod.GET, `/api/v1/namespaces/${SWITCHYARD_NAMESPACE}/pods`);
  const pods =
    (
      answer.body as {
        items?: {
          metadata: { name: string };
          status?: { containerStatuses?: { restartCount?: number }[] };
        }[];
      }
    ).items ?? [];
  return pods.flatMap((p) => {
    const restarts = (p.status?.containerStatuses ?? []).reduce((n, c) => n + (c.restartCount ?? 0), 0);
    return restarts > 0 ? [`${p.metadata.name} ×${restarts}`] : [];
  });
}

// ---- the watchers' relists ------------------------------------------------------------------

interface Relists {
  /** A watcher could not record a change and relisted (src/watchers/object-watcher.ts). */
  all: number;
  /**
   * Of which JetStream's 10158, "duplicate message id is in process": on a replicated stream the
   * other watcher replica's publish of the same change was proposed and not yet committed.
   */
  idInProcess: number;
}

/** Over the stack's whole life, from the watchers' Pod logs (read before the stack stops). */
async function watcherRelists(cluster: LocalCluster): Promise<Relists> {
  const pods = join(cluster.dir, 'pods');
  const dirs = (await readdir(pods)).filter((d) =>
    d.startsWith(`${SWITCHYARD_NAMESPACE}_switchyard-watchers-`),
  );
  const lines = (
    await Promise.all(dirs.map((d) => readFile(join(pods, d, 'watchers.log'), 'utf8').catch(() => '')))
  )
    .flatMap((text) => text.split('\n'))
    .filter((line) => line.includes('change not recorded; dropping the watch to relist'));
  return {
    all: lines.length,
    idInProcess: lines.filter((l) => l.includes('duplicate message id is in process')).length,
  };
}

// ---- the report ----------------------------------------------------------------------------

function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)] ?? Number.NaN;
}

function median(xs: readonly number[]): number {
  return percentile(xs, 0.5);
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const millis = (ms: number) => `${Math.round(ms)}`;
const fineMillis = (ms: number) => ms.toFixed(2);
const cpuSeconds = (s: number) => `${Math.round(s)} s`;
const ratio = (r1: number, r3: number) => `${(r3 / r1).toFixed(2)}×`;

/** One row: a figure on each bus and R3 ÷ R1, or several figures (p50 / p90 / max) joined. */
function row(what: string, r1: number[], r3: number[], format: (ms: number) => string): string {
  const cell = (xs: number[]) => xs.map(format).join(' / ');
  const ratios = r1.map((x, i) => ratio(x, r3[i] ?? Number.NaN)).join(' / ');
  return `| ${what} | ${cell(r1)} | ${cell(r3)} | ${ratios} |`;
}

const P50_P90_MAX = [0.5, 0.9, 1];
const P50_P99 = [0.5, 0.99];

/** R1 and R3 side by side; several rounds: scalars are medians of the rounds, distributions pooled. */
function table(r1: readonly StackRun[], r3: readonly StackRun[]): string {
  const scalar = (what: string, f: (r: StackRun) => number, format = seconds) =>
    row(what, [median(r1.map(f))], [median(r3.map(f))], format);
  const spread = (what: string, f: (r: StackRun) => number[], ps: number[], format: (ms: number) => string) =>
    row(
      what,
      ps.map((p) => percentile(r1.flatMap(f), p)),
      ps.map((p) => percentile(r3.flatMap(f), p)),
      format,
    );
  const restarts = (runs: readonly StackRun[]) =>
    runs.map((r) => (r.restarts.length === 0 ? 'none' : r.restarts.join(', '))).join('; ');
  const relists = (runs: readonly StackRun[]) =>
    runs.map((r) => `${r.relists.all} (${r.relists.idInProcess})`).join(', ');
  const moves = (runs: readonly StackRun[]) =>
    runs.map((r) => `${r.moved} (${r.verified} verified; ${r.predicted} predicted)`).join(', ');
  return [
    '| measure | R1 (one nats-server) | R3 (3-node cluster) | R3 ÷ R1 |',
    '|---|---|---|---|',
    scalar('Switchyard installed from deploy/ (bus setup, every Deployment ready)', (r) => r.installMs),
    scalar(`${TARGETS} targets created, each served by the pool (verified)`, (r) => r.fleetServedMs),
    `| targets moved to ${NEWCOMER} | ${moves(r1)} | ${moves(r3)} | |`,
    scalar(`**rebalance**: ${NEWCOMER} created → last move verified`, (r) => r.rebalanceMs),
    scalar(`of which ${NEWCOMER} created → its first report`, (r) => r.reportedMs),
    scalar('of which first report → last move verified', (r) => r.rebalanceMs - r.reportedMs),
    spread(
      'per move, assignment → repoint, ms: p50 / p90 / max',
      (r) => r.assignToRepointMs,
      P50_P90_MAX,
      millis,
    ),
    spread(
      `**per move, ${NEWCOMER}'s first report → repoint**, ms: p50 / p90 / max`,
      (r) => r.reportToRepointMs,
      P50_P90_MAX,
      millis,
    ),
    spread(
      "publish → ack, WORK's settings, client on the stream leader's server, ms: p50 / p99",
      (r) => r.publishOnLeaderMs,
      P50_P99,
      fineMillis,
    ),
    ...followerRow(r1, r3),
    scalar('CPU of nats-server, all nodes, until the moves are verified', (r) => r.cpu.nats, cpuSeconds),
    scalar(
      'CPU of the whole stack (control plane, NATS, every Pod), same period',
      (r) => r.cpu.all,
      cpuSeconds,
    ),
    `| Pods that restarted a container (a disturbed run) | ${restarts(r1)} | ${restarts(r3)} | |`,
    `| watches dropped to relist: a change not recorded (of which 10158, "duplicate message id is in process") | ${relists(r1)} | ${relists(r3)} | |`,
  ].join('\n');
}

/** R3's publishes from a client on a follower's server, against R1's (which has no follower). */
function followerRow(r1: readonly StackRun[], r3: readonly StackRun[]): string[] {
  const follower = r3.flatMap((r) => r.publishOnFollowerMs ?? []);
  if (follower.length === 0) return [];
  const leaderR1 = r1.flatMap((r) => r.publishOnLeaderMs);
  const figures = P50_P99.map((p) => fineMillis(percentile(follower, p))).join(' / ');
  const ratios = P50_P99.map((p) => ratio(percentile(leaderR1, p), percentile(follower, p))).join(' / ');
  return [
    `| the same, client on a follower's server, ms: p50 / p99 | (no follower) | ${figures} | ${ratios} |`,
  ];
}

function progress(what: string): void {
  process.stderr.write(`[replicated-bus] ${what}\n`);
}

// ---- main ----------------------------------------------------------------------------------

/**
 * A stack that fails to come up or to converge measures nothing: it is started again, at most
 * twice, and said so. (The local stack's node agent can give two Pods the same free port, and
 * the Pod that lost keeps exiting: a property of the test rig, not of either bus.)
 */
async function measureRetrying(bus: Bus): Promise<StackRun> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await measureOn(bus);
    } catch (err) {
      if (attempt >= 3) throw err;
      progress(`${bus}: this stack failed (${(err as Error).message}); starting another`);
      stacksRetried.push(`${bus}: ${(err as Error).message}`);
    }
  }
}

const runs: StackRun[] = [];
const stacksRetried: string[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const bus of BUSES) runs.push(await measureRetrying(bus));
  const [r1, r3] = runs.slice(-2) as [StackRun, StackRun];
  console.log(
    `\nRound ${round} of ${ROUNDS}: ${TARGETS} targets over ${POOL.length} instances × 2 replicas, ${NEWCOMER} joins; handover.confirmSeconds ${CONFIRM_SECONDS}; ${PUBLISHES} publishes; ${cpus().length} cores; stacks that failed and were started again so far: ${stacksRetried.length === 0 ? 'none' : stacksRetried.join('; ')}\n`,
  );
  console.log(table([r1], [r3]));
}
if (ROUNDS > 1) {
  console.log(
    `\nAll ${ROUNDS} rounds (scalars: medians of the rounds; per-move and publish figures: pooled)\n`,
  );
  console.log(
    table(
      runs.filter((r) => r.bus === 'R1'),
      runs.filter((r) => r.bus === 'R3'),
    ),
  );
}
