// Kubernetes clients split by concern vs one limiter shared by writes and
// events, against a local cluster this script starts (etcd + kube-apiserver).
//   SWITCHYARD_BIN_DIR=… node bench/client-split.ts      (~4 min)
//
// Write burst: WRITES merge patches to WRITES ConfigMaps (one each) from
// WORKERS concurrent workers. Event storm: STORM Events recorded over one
// second (STORM/100 every 10 ms), starting with the burst. Setups:
//   split   — the production clients: writes unlimited (the default), events
//             recorder with the defaults (200/400 bucket, 1000-deep queue,
//             1 sender) on its own connection pool;
//   split, senders stalled — the same, but the Events API never answers: the
//             storm's client-side work (record, bucket, queue) without its
//             apiserver load, to separate client-side coupling from the CPU the
//             apiserver shares with everything else on a 2-core machine;
//   split, writes paced — the same with the opt-in kubernetes.qps at about
//             half the local apiserver's capacity: the storm on an apiserver
//             that has headroom;
//   shared  — the old coupling: one client-go-like 50/100 token bucket (the
//             kube-scheduler defaults) in front of writes, Events and LISTs, with
//             client-go v0.36.1's events/v1 shape: no event bucket, a 1000-deep
//             queue that drops when full, and a sender per queued Event that
//             *waits* for a token.
// Each run gets a fresh recorder (a full bucket, an empty queue); split runs
// alternate alone/storm REPEATS times and report medians, shared runs once
// (it takes ~2 minutes).
// Relist: a full LIST of the WRITES ConfigMaps through the informers client,
// idle vs right after a storm has left an event backlog.
//
// BENCH_ISOLATED=1 runs the same as deploy/ would in a cluster (issue 14): the
// apiserver, etcd and every other process of the local stack pinned to core 0
// and this process to core 1 (taskset), so a ratio measures client-side
// coupling rather than two processes sharing two cores; deploy/api-priority
// applied, and the clients acting as a ServiceAccount of switchyard-system, so
// their Events go to the switchyard-events priority level as Switchyard's do.
import { execFileSync } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  EventsV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { ClientKubeConfig } from '../src/kube/client-kube-config.ts';
import { type EventCounters, EventRecorder } from '../src/kube/event-recorder.ts';
import { limiterFor, tokenBucketLimiter, unlimited } from '../src/kube/rate-limiter.ts';
import { type LocalCluster, startLocalCluster } from '../src/local-cluster/cluster.ts';
import { renderDeploy } from '../src/local-cluster/install.ts';
import { kubeConfigFromToken } from '../src/local-cluster/kubeconfig.ts';

const WRITES = 2_000;
const WORKERS = 16;
const STORM = 5_000;
const REPEATS = 5;
const RELIST_RUNS = 7;
const SHARED = { qps: 50, burst: 100 };
// An offered write rate about half of what the local apiserver sustains, to
// show the split on an apiserver with headroom (as in a real cluster).
const PACED_WRITES_QPS = 400;
const EVENTS = { qps: 200, burst: 400, queueSize: 1_000 };
// client-go v0.36.1's events/v1 sink spawns a goroutine per event, each waiting
// on the (shared) limiter; bounded here by its 1000-deep channel.
const CLIENT_GO_SENDERS = 1_000;
const NAMESPACE = 'bench-client-split';
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface Setup {
  label: string;
  writes: ClientKubeConfig;
  informers: ClientKubeConfig;
  newRecorder(): EventRecorder;
  /** False when queued Events never finish (stalled senders) or take minutes (shared). */
  drains: boolean;
}

function split(kc: KubeConfig, { stalled = false, writesQps = 0 } = {}): Setup {
  const events = new ClientKubeConfig(kc, { userAgent: 'switchyard/bench/events' });
  const writesLimiter = limiterFor({ qps: writesQps, burst: WORKERS });
  const api = stalled
    ? { createNamespacedEvent: () => new Promise<never>(() => {}) }
    : events.makeApiClient(EventsV1Api);
  return {
    label: stalled
      ? 'split, Event senders stalled (client-side only)'
      : writesQps > 0
        ? `split, writes paced at ${writesQps}/s (apiserver not saturated)`
        : `split: writes unlimited; events ${EVENTS.qps}/${EVENTS.burst}, queue ${EVENTS.queueSize}, 1 sender`,
    writes: new ClientKubeConfig(kc, { userAgent: 'switchyard/bench/writes', limiter: writesLimiter }),
    informers: new ClientKubeConfig(kc, { userAgent: 'switchyard/bench/informers' }),
    newRecorder: () =>
      new EventRecorder({
        api,
        component: 'bench',
        instance: 'split',
        admission: limiterFor({ qps: EVENTS.qps, burst: EVENTS.burst }),
        queueSize: EVENTS.queueSize,
      }),
    drains: !stalled,
  };
}

function shared(kc: KubeConfig): Setup {
  const limiter = tokenBucketLimiter(SHARED);
  const events = new ClientKubeConfig(kc, { userAgent: 'bench/shared-events', limiter });
  return {
    label: `shared ${SHARED.qps}/${SHARED.burst} bucket: writes + Events + LISTs; queue ${EVENTS.queueSize}, a sender per Event`,
    writes: new ClientKubeConfig(kc, { userAgent: 'bench/shared-writes', limiter }),
    informers: new ClientKubeConfig(kc, { userAgent: 'bench/shared-informers', limiter }),
    newRecorder: () =>
      new EventRecorder({
        api: events.makeApiClient(EventsV1Api),
        component: 'bench',
        instance: 'shared',
        admission: unlimited, // client-go's broadcaster sheds only when its queue is full
        queueSize: EVENTS.queueSize,
        concurrency: CLIENT_GO_SENDERS,
      }),
    drains: false,
  };
}

function memory() {
  const { rss, heapUsed } = process.memoryUsage();
  return { rss, heapUsed };
}

/** Peak RSS and heap while `fn` runs, sampled every 50 ms. */
async function withPeakMemory<T>(fn: () => Promise<T>) {
  const before = memory();
  const peak = { ...before };
  const timer = setInterval(() => {
    const now = memory();
    peak.rss = Math.max(peak.rss, now.rss);
    peak.heapUsed = Math.max(peak.heapUsed, now.heapUsed);
  }, 50);
  try {
    const result = await fn();
    return { result, before, peak };
  } finally {
    clearInterval(timer);
  }
}

let round = 0;

/** Writes per second for one burst of WRITES patches. */
async function writeBurst(writes: ClientKubeConfig): Promise<number> {
  const core = writes.makeApiClient(CoreV1Api);
  const value = String(++round);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (let i = next++; i < WRITES; i = next++) {
        await core.patchNamespacedConfigMap(
          { name: `cm-${i}`, namespace: NAMESPACE, body: { data: { round: value } } },
          mergePatch,
        );
      }
    }),
  );
  return WRITES / ((performance.now() - started) / 1000);
}

function recordOne(recorder: EventRecorder, i: number): void {
  recorder.record({
    regarding: { apiVersion: 'v1', kind: 'ConfigMap', name: `cm-${i % WRITES}`, namespace: NAMESPACE },
    type: 'Normal',
    reason: 'Storm',
    action: 'Bench',
  });
}

/** STORM Events over one second, in 100 slices of 10 ms. */
async function eventStorm(recorder: EventRecorder): Promise<void> {
  const started = performance.now();
  for (let slice = 0; slice < 100; slice++) {
    for (let i = 0; i < STORM / 100; i++) recordOne(recorder, slice * 100 + i);
    const wait = started + (slice + 1) * 10 - performance.now();
    if (wait > 0) await sleep(wait);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

interface BurstResult {
  label: string;
  runs: number;
  alone: number;
  storm: number;
  ratio: number;
  /** Of the last storm run, at the end of its write burst. */
  events: EventCounters;
  memory: { before: ReturnType<typeof memory>; peak: ReturnType<typeof memory> };
}

async function bursts(setup: Setup, runs: number): Promise<BurstResult> {
  const alone: number[] = [];
  const storm: number[] = [];
  const ratios: number[] = [];
  let events: EventCounters | undefined;
  let memoryUse: BurstResult['memory'] | undefined;
  for (let run = 0; run < runs; run++) {
    alone.push(await writeBurst(setup.writes));
    const recorder = setup.newRecorder();
    const measured = await withPeakMemory(async () => {
      const [throughput] = await Promise.all([writeBurst(setup.writes), eventStorm(recorder)]);
      return throughput;
    });
    storm.push(measured.result);
    ratios.push(measured.result / (alone.at(-1) as number));
    events = recorder.counters();
    memoryUse = { before: measured.before, peak: memoryUse?.peak ?? measured.peak };
    memoryUse.peak.rss = Math.max(memoryUse.peak.rss, measured.peak.rss);
    memoryUse.peak.heapUsed = Math.max(memoryUse.peak.heapUsed, measured.peak.heapUsed);
    if (setup.drains) await recorder.idle();
  }
  return {
    label: setup.label,
    runs,
    alone: median(alone),
    storm: median(storm),
    ratio: median(ratios),
    events: events as EventCounters,
    memory: memoryUse as BurstResult['memory'],
  };
}

async function listAll(informers: ClientKubeConfig): Promise<number> {
  const started = performance.now();
  const list = await informers.makeApiClient(CoreV1Api).listNamespacedConfigMap({ namespace: NAMESPACE });
  if (list.items.length < WRITES)
    throw new Error(`listed ${list.items.length} ConfigMaps, expected ${WRITES}`);
  return performance.now() - started;
}

interface RelistResult {
  label: string;
  runs: number;
  idleMs: number;
  backlogMs: number;
  backlogAtStart: number;
}

async function relists(setup: Setup, runs: number): Promise<RelistResult> {
  const idle: number[] = [];
  const backlog: number[] = [];
  let backlogAtStart = 0;
  for (let run = 0; run < runs; run++) {
    await sleep(300);
    idle.push(await listAll(setup.informers));
    // A storm in one go: the recorder admits what it admits and queues it.
    const recorder = setup.newRecorder();
    for (let i = 0; i < STORM; i++) recordOne(recorder, i);
    const counters = recorder.counters();
    backlogAtStart = counters.queued + counters.inFlight;
    backlog.push(await listAll(setup.informers));
    if (setup.drains) await recorder.idle();
  }
  return { label: setup.label, runs, idleMs: median(idle), backlogMs: median(backlog), backlogAtStart };
}

async function prepare(kc: KubeConfig): Promise<void> {
  const writer = new ClientKubeConfig(kc, { userAgent: 'switchyard/bench/setup' }).makeApiClient(CoreV1Api);
  let next = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async () => {
      for (let i = next++; i < WRITES; i = next++) {
        await writer.createNamespacedConfigMap({
          namespace: NAMESPACE,
          body: { metadata: { name: `cm-${i}` }, data: { round: '0' } },
        });
      }
    }),
  );
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

function printBursts(results: BurstResult[]): void {
  console.log(
    `\nWrite burst: ${WRITES} merge patches from ${WORKERS} workers; storm: ${STORM} Events in 1 s, starting with the burst.`,
  );
  console.log(
    '\n| clients | runs | writes alone | writes during storm | storm ÷ alone | Events emitted by burst end | dropped by bucket | dropped, queue full | queued/in flight at burst end | RSS before → peak | heap before → peak |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  for (const b of results) {
    const e = b.events;
    console.log(
      `| ${b.label} | ${b.runs} | ${b.alone.toFixed(0)}/s | ${b.storm.toFixed(0)}/s | **${b.ratio.toFixed(3)}** | ${e.emitted} | ${e.droppedRateLimited} | ${e.droppedQueueFull} | ${e.queued + e.inFlight} | ${mib(b.memory.before.rss)} → ${mib(b.memory.peak.rss)} | ${mib(b.memory.before.heapUsed)} → ${mib(b.memory.peak.heapUsed)} |`,
    );
  }
}

function printRelists(results: RelistResult[]): void {
  console.log(`\nRelist: a full LIST of ${WRITES} ConfigMaps through the informers client.`);
  console.log('\n| clients | runs | idle | with an event backlog | idle ÷ backlog | backlog at LIST start |');
  console.log('|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(
      `| ${r.label} | ${r.runs} | ${r.idleMs.toFixed(0)} ms | ${r.backlogMs.toFixed(0)} ms | **${(r.idleMs / r.backlogMs).toFixed(3)}** | ${r.backlogAtStart} Events |`,
    );
  }
}

const ISOLATED = process.env.BENCH_ISOLATED === '1';
const SWITCHYARD_NAMESPACE = 'switchyard-system';
const BENCH_ACCOUNT = 'bench-client-split';

/** Every process of the local stack on core 0, this one on core 1. */
function pinProcesses(cluster: LocalCluster): void {
  for (const { pid } of cluster.pids()) execFileSync('taskset', ['-a', '-c', '-p', '0', String(pid)]);
  execFileSync('taskset', ['-a', '-c', '-p', '1', String(process.pid)]);
}

/**
 * deploy/api-priority applied as a user applies it, and a kubeconfig of a ServiceAccount in
 * Switchyard's namespace allowed what the bench does: its Events match the FlowSchema.
 */
async function switchyardIdentity(cluster: LocalCluster, admin: KubeConfig): Promise<KubeConfig> {
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const apply = (o: KubernetesObject) =>
    objects.patch(o, undefined, undefined, 'bench', true, PatchStrategy.ServerSideApply);
  for (const o of await renderDeploy('api-priority')) await apply(o);
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: SWITCHYARD_NAMESPACE } } });
  await core.createNamespacedServiceAccount({
    namespace: SWITCHYARD_NAMESPACE,
    body: { metadata: { name: BENCH_ACCOUNT } },
  });
  const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createClusterRole({
    body: {
      metadata: { name: BENCH_ACCOUNT },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch', 'create', 'patch'] },
        { apiGroups: ['events.k8s.io'], resources: ['events'], verbs: ['create'] },
      ],
    },
  });
  await rbac.createClusterRoleBinding({
    body: {
      metadata: { name: BENCH_ACCOUNT },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: BENCH_ACCOUNT },
      subjects: [{ kind: 'ServiceAccount', name: BENCH_ACCOUNT, namespace: SWITCHYARD_NAMESPACE }],
    },
  });
  const token = await core.createNamespacedServiceAccountToken({
    name: BENCH_ACCOUNT,
    namespace: SWITCHYARD_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return kubeConfigFromToken(
    cluster.endpoint,
    `system:serviceaccount:${SWITCHYARD_NAMESPACE}:${BENCH_ACCOUNT}`,
    token.status?.token ?? '',
  );
}

async function main() {
  process.stderr.write('starting the local cluster…\n');
  const cluster = await startLocalCluster();
  try {
    const admin = cluster.kubeConfigFor('admin');
    if (ISOLATED) pinProcesses(cluster);
    const kc = ISOLATED ? await switchyardIdentity(cluster, admin) : admin;
    process.stderr.write(
      ISOLATED
        ? 'isolated: the local stack on core 0, this process on core 1; deploy/api-priority applied, clients as a switchyard-system ServiceAccount\n'
        : 'shared cores: the local stack and this process on both cores; no FlowSchema, clients as admin\n',
    );
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    await prepare(kc);
    const splitSetup = split(kc);
    const stalledSetup = split(kc, { stalled: true });
    const sharedSetup = shared(kc);
    await writeBurst(splitSetup.writes); // warm-up: connections, apiserver caches, JIT
    process.stderr.write('write bursts…\n');
    const burstResults = [
      await bursts(splitSetup, REPEATS),
      await bursts(stalledSetup, REPEATS),
      await bursts(split(kc, { writesQps: PACED_WRITES_QPS }), 3),
    ];
    process.stderr.write('write bursts, shared bucket (~2 min)…\n');
    burstResults.push(await bursts(sharedSetup, 1));
    process.stderr.write('relists…\n');
    const relistResults = [
      await relists(splitSetup, RELIST_RUNS),
      await relists(stalledSetup, RELIST_RUNS),
      await relists(sharedSetup, 1),
    ];
    printBursts(burstResults);
    printRelists(relistResults);
  } finally {
    await cluster.stop();
  }
}

await main();
// The shared setup's queued Events would keep waiting for tokens; nothing left to measure.
process.exit(0);
