// A simulated cluster of N targets on a real JetStream, and every worker kind run against it
// without an apiserver (issue 31 item 4). For each size:
//
// * the cluster (bench/simulated-objects.ts: N three-version CRDs with 50-leaf schemas, N 10-rule
//   configs, 20 pool instances with their Deployments, EndpointSlices and 2 replicas' served-set
//   Leases) is recorded on a bus of its own through the watchers' RecordWriter, so the records
//   are the ones `switchyard watch` stores;
// * each handler worker (router, assign, handover, lease-aggregate, config-status, instances)
//   runs in its own process (bench/simulated-worker.ts): its view's start, heap after gc, peak
//   RSS, and each decision's time over a sample of its keys, writes going to a RecordingWriter;
//   assign also plans an instance joining the pool (simulate, the router's fan-out, assign's
//   decisions of that fan-out);
// * webhook-server replicas of three instances (weights 1, 10 and 20: 0.5%, 4.8% and 9.5% of the
//   targets) start as their own processes (bench/webhook-replica.ts): start to ready and heap,
//   as a function of the targets each serves.
//
// Each figure is printed beside the issue's target. Needs nats-server (scripts/lib/bootstrap.sh):
//
//   SWITCHYARD_BIN_NATS=… node bench/simulated-cluster.ts                         # 1,000 targets
//   SWITCHYARD_BIN_NATS=… BENCH_SIZES=1000,10000,50000 node bench/simulated-cluster.ts
//
// BENCH_SAMPLES (2000): keys decided per pass; BENCH_WORKERS: a comma list to run only some.
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { NOTHING_STORED, RecordWriter } from '../src/bus/records/record-writer.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { DEFAULT_TOPOLOGY, ensureTopology, STREAMS } from '../src/bus/topology.ts';
import { readCertificates } from '../src/core/instances/certificate-facts.ts';
import { NatsServer } from '../src/local-cluster/nats.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { deployedEnv } from './deployed-env.ts';
import { assignmentsOf, instanceName, instanceWeight, simulatedCluster } from './simulated-objects.ts';

const SIZES = (process.env.BENCH_SIZES ?? '1000').split(',').map(Number);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 2_000);
const HANDLER_WORKERS = ['router', 'assign', 'handover', 'lease-aggregate', 'config-status', 'instances'];
const WORKERS = (process.env.BENCH_WORKERS ?? HANDLER_WORKERS.join(',')).split(',');
/** The replicas measured: pool weights 1, 10 and 20. */
const REPLICA_INDEXES = [0, 9, 19];
const REPLICA_INSTANCES = REPLICA_INDEXES.map(instanceName);
/** Records in flight while the cluster is recorded: each subject is written once, so none race. */
const PUBLISH_CONCURRENCY = 64;

const TARGETS = {
  rssMiB: 300,
  viewMs: 5_000,
  p99Ms: 20,
  joinCpuMs: 1_000,
  servedKiB: 9,
  unservedKiB: 1,
};

const log = pino({ level: 'warn' });
const here = import.meta.dirname;
const run = promisify(execFile);

interface WorkerRun {
  worker: string;
  viewMs: number;
  viewCpuMs: number;
  viewHeapBytes: number;
  /** RSS once the worker's modules are loaded, before its view starts. */
  rssBeforeViewBytes: number;
  heapBytes: number;
  maxRssBytes: number;
  first: number[];
  second: number[];
  secondCpuMs: number;
  writes: number;
  events: number;
  /** Work the handler published (the instances handler's trust wakes of the handover). */
  publishes: number;
  join?: {
    moves: number;
    simulateCpuMs: number;
    fanout: number;
    triggerCpuMs: number;
    decideCpuMs: number;
    decideWallMs: number;
  };
}

interface ReplicaRun {
  instance: string;
  served: number;
  viewMs: number;
  compileMs: number;
  readyMs: number;
  heapBytes: number;
  maxRssBytes: number;
}

type Failed = { failed: string };

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const ms = (x: number) => `${x < 10 ? x.toFixed(2) : x.toFixed(0)} ms`;
const mark = (ok: boolean) => (ok ? '✓' : '✗');

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

/** The last line of a child's stdout as JSON, or why it has none (killed, out of memory). */
async function jsonOf<T>(args: string[], env: NodeJS.ProcessEnv = deployedEnv()): Promise<T | Failed> {
  try {
    const { stdout } = await run(process.execPath, ['--expose-gc', ...args], { maxBuffer: 64 << 20, env });
    return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as T;
  } catch (err) {
    const e = err as { code?: unknown; signal?: unknown; stderr?: string };
    const tail = (e.stderr ?? String(err)).trim().split('\n').slice(-3).join(' / ');
    return { failed: `exit ${String(e.code ?? e.signal)}: ${tail.slice(0, 300)}` };
  }
}

function isFailed<T>(r: T | Failed): r is Failed {
  return typeof r === 'object' && r !== null && 'failed' in r;
}

/** Records the cluster as the watchers would: one RecordWriter.write per object, nothing known before. */
async function recordCluster(
  url: string,
  n: number,
): Promise<{ records: number; seconds: number; bytes: number; ca: { certPem: string; keyPem: string } }> {
  const nc = await connect({ servers: url });
  const js = jetstream(nc);
  const jsm = await jetstreamManager(nc);
  await ensureTopology(jsm, DEFAULT_TOPOLOGY);
  const writer = new RecordWriter({ js, jsm, maxPayload: nc.info?.max_payload ?? 0, tombstoneTtl: '3600s' });
  const issuer = x509Issuer();
  const now = Date.now();
  const ca = await issuer.createCa({
    commonName: 'bench-ca',
    notBeforeMs: now - 60_000,
    notAfterMs: now + 86_400_000,
  });
  // As the instances handler writes a trust bundle (readCertificates' PEM), so the targets publish exactly it.
  const caBundle = Buffer.from(readCertificates(ca.certPem)?.[0]?.pem ?? ca.certPem).toString('base64');
  const started = performance.now();
  const objects = simulatedCluster(n, caBundle, now);
  let records = 0;
  const lane = async () => {
    for (let next = objects.next(); !next.done; next = objects.next()) {
      const { kind, object } = next.value;
      const subject = objectSubject({
        kind,
        namespace: object.metadata.namespace ?? '',
        name: object.metadata.name,
      });
      const event = {
        op: 'upsert' as const,
        object,
        observedBy: 'list' as const,
        observedAt: new Date().toISOString(),
      };
      const result = await writer.write(subject, event, NOTHING_STORED);
      if (result.outcome !== 'stored') throw new Error(`${subject} was not stored: ${result.outcome}`);
      records++;
    }
  };
  await Promise.all(Array.from({ length: PUBLISH_CONCURRENCY }, lane));
  const seconds = (performance.now() - started) / 1000;
  const bytes = (await jsm.streams.info(STREAMS.records)).state.bytes;
  await nc.close();
  return { records, seconds, bytes, ca };
}

function workerTable(n: number, runs: ReadonlyArray<WorkerRun | (Failed & { worker: string })>): void {
  console.log(
    `\n### ${n.toLocaleString('en-US')} targets: handler workers (each its own process; decisions: second pass over the sampled keys)\n`,
  );
  console.log(
    '| worker | view start | target | view heap | heap after decisions | RSS before the view | peak RSS | target | decisions | p50 | p99 | target | first pass p99 | CPU per decision | writes recorded | work published |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of runs) {
    if (isFailed(r)) {
      console.log(`| ${r.worker} | **failed**: ${r.failed} |`);
      continue;
    }
    const p99 = percentile(r.second, 0.99);
    console.log(
      `| ${r.worker} | ${ms(r.viewMs)} | ${mark(r.viewMs <= TARGETS.viewMs)} ≤ 5 s | ${mib(r.viewHeapBytes)} | ${mib(r.heapBytes)} | ${mib(r.rssBeforeViewBytes)} | ${mib(r.maxRssBytes)} | ${mark(r.maxRssBytes <= TARGETS.rssMiB * 1024 * 1024)} ≤ 300 MiB | ${r.second.length} | ${ms(percentile(r.second, 0.5))} | ${ms(p99)} | ${mark(p99 <= TARGETS.p99Ms)} ≤ 20 ms | ${ms(percentile(r.first, 0.99))} | ${ms(r.secondCpuMs / r.second.length)} | ${r.writes} | ${r.publishes} |`,
    );
  }
  const assign = runs.find((r): r is WorkerRun => !isFailed(r) && r.join !== undefined);
  if (assign?.join) {
    const j = assign.join;
    const planCpu = j.triggerCpuMs + j.decideCpuMs;
    console.log(
      `\nAn instance joins (weight 10 of 220): simulate ${ms(j.simulateCpuMs)} CPU (${j.moves} moves); the router's trigger (the fan-out) ${ms(j.triggerCpuMs)} CPU, ${j.fanout} configs paced; assign deciding them ${ms(j.decideCpuMs)} CPU (${ms(j.decideWallMs)} wall). **Planned in ${ms(planCpu)} of CPU** (trigger + assign's decisions), target ≤ 1 s: ${mark(planCpu <= TARGETS.joinCpuMs)}`,
    );
  }
}

function replicaTable(
  n: number,
  runs: ReadonlyArray<ReplicaRun | (Failed & { instance: string; served: number })>,
): void {
  console.log(`\n### ${n.toLocaleString('en-US')} targets: webhook-server replicas (each its own process)\n`);
  console.log(
    '| instance | targets served | read the bus | compile | start to ready | heap after gc | peak RSS |',
  );
  console.log('|---|---|---|---|---|---|---|');
  const ok: ReplicaRun[] = [];
  for (const r of runs) {
    if (isFailed(r)) {
      console.log(`| ${r.instance} | ${r.served} | **failed**: ${r.failed} |`);
      continue;
    }
    ok.push(r);
    console.log(
      `| ${r.instance} | ${r.served} | ${ms(r.viewMs)} | ${ms(r.compileMs)} | ${ms(r.readyMs)} | ${mib(r.heapBytes)} | ${mib(r.maxRssBytes)} |`,
    );
  }
  const fit = heapFit(ok, n);
  if (fit)
    console.log(
      `\nHeap as a function of the targets served (least squares over the replicas above, heap = a × served + b × unserved): **${fit.servedKiB.toFixed(1)} KiB per served target** (target ≤ 9: ${mark(fit.servedKiB <= TARGETS.servedKiB)}), **${fit.unservedKiB.toFixed(1)} KiB per unserved** (target ≤ 1: ${mark(fit.unservedKiB <= TARGETS.unservedKiB)}).`,
    );
}

/** a and b of heap = a·served + b·(n − served), least squares over the runs. */
function heapFit(
  runs: readonly ReplicaRun[],
  n: number,
): { servedKiB: number; unservedKiB: number } | undefined {
  if (runs.length < 2) return undefined;
  let [sxx, sxy, syy, sxh, syh] = [0, 0, 0, 0, 0];
  for (const r of runs) {
    const x = r.served;
    const y = n - r.served;
    const h = r.heapBytes / 1024;
    sxx += x * x;
    sxy += x * y;
    syy += y * y;
    sxh += x * h;
    syh += y * h;
  }
  const det = sxx * syy - sxy * sxy;
  if (det === 0) return undefined;
  return { servedKiB: (sxh * syy - syh * sxy) / det, unservedKiB: (syh * sxx - sxh * sxy) / det };
}

interface SizeResult {
  n: number;
  recorded: { records: number; seconds: number; bytes: number };
  workers: Array<WorkerRun | (Failed & { worker: string })>;
  replicas: Array<ReplicaRun | (Failed & { instance: string; served: number })>;
}

async function measure(n: number): Promise<SizeResult> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-'));
  const server = await NatsServer.start(dir, log);
  try {
    const recorded = await recordCluster(server.url, n);
    console.log(
      `\n## ${n.toLocaleString('en-US')} targets: ${recorded.records.toLocaleString('en-US')} records (${mib(recorded.bytes)} in K8S) recorded in ${recorded.seconds.toFixed(1)} s`,
    );
    const workers: SizeResult['workers'] = [];
    // assign last: its join publishes a new instance, which every later view would hold.
    for (const worker of [
      ...WORKERS.filter((w) => w !== 'assign'),
      ...WORKERS.filter((w) => w === 'assign'),
    ]) {
      // The CA every target publishes: the instances worker seeds each instance's CA Secret with it.
      const r = await jsonOf<WorkerRun>(
        [join(here, 'simulated-worker.ts'), server.url, worker, String(SAMPLES)],
        deployedEnv({ BENCH_CA_CERT: recorded.ca.certPem, BENCH_CA_KEY: recorded.ca.keyPem }),
      );
      workers.push(isFailed(r) ? { ...r, worker } : r);
      process.stderr.write(
        `  ${n}: ${worker} ${isFailed(r) ? r.failed : `view ${r.viewMs.toFixed(0)} ms`}\n`,
      );
    }
    const assignments = assignmentsOf(n);
    const replicas: SizeResult['replicas'] = [];
    for (const instance of REPLICA_INSTANCES) {
      const served = assignments.get(instance)?.length ?? 0;
      const r = await jsonOf<Omit<ReplicaRun, 'instance' | 'served'>>([
        join(here, 'webhook-replica.ts'),
        server.url,
        instance,
        String(served),
        'replica',
      ]);
      replicas.push(isFailed(r) ? { ...r, instance, served } : { ...r, instance, served });
      process.stderr.write(
        `  ${n}: replica ${instance} ${isFailed(r) ? r.failed : `ready ${r.readyMs.toFixed(0)} ms`}\n`,
      );
    }
    workerTable(n, workers);
    replicaTable(n, replicas);
    return { n, recorded, workers, replicas };
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/** One line per worker and figure across the sizes: how each grows. */
function growthTable(results: readonly SizeResult[]): void {
  if (results.length < 2) return;
  console.log('\n## How each grows\n');
  console.log(`| worker | measure | ${results.map((r) => r.n.toLocaleString('en-US')).join(' | ')} |`);
  console.log(`|---|---|${results.map(() => '---').join('|')}|`);
  const cell = (r: SizeResult, worker: string, f: (w: WorkerRun) => string) => {
    const w = r.workers.find((x) => x.worker === worker);
    return !w ? '' : isFailed(w) ? 'failed' : f(w);
  };
  for (const worker of WORKERS) {
    const rows: Array<[string, (w: WorkerRun) => string]> = [
      ['view start', (w) => ms(w.viewMs)],
      ['peak RSS', (w) => mib(w.maxRssBytes)],
      ['decision p99', (w) => ms(percentile(w.second, 0.99))],
    ];
    for (const [label, f] of rows)
      console.log(`| ${worker} | ${label} | ${results.map((r) => cell(r, worker, f)).join(' | ')} |`);
  }
  for (const i of REPLICA_INDEXES) {
    const instance = instanceName(i);
    const cells = (f: (r: ReplicaRun) => string) =>
      results
        .map((s) => {
          const r = s.replicas.find((x) => x.instance === instance);
          return !r ? '' : isFailed(r) ? 'failed' : f(r);
        })
        .join(' | ');
    console.log(
      `| replica ${instance} (weight ${instanceWeight(i)}) | start to ready | ${cells((r) => ms(r.readyMs))} |`,
    );
    console.log(`| replica ${instance} | heap after gc | ${cells((r) => mib(r.heapBytes))} |`);
  }
}

console.log(
  `Each worker and replica runs as its own process with NODE_OPTIONS=${deployedEnv().NODE_OPTIONS}.`,
);
const results: SizeResult[] = [];
for (const n of SIZES) results.push(await measure(n));
growthTable(results);
