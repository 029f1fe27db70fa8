// The webhook-server's benchmarks (issue 12), each beside its baseline in the same run:
//
//   review   ConversionReview throughput and p50/p99 latency with 1, 10 and 50 objects per
//            review and the 10-rule plan of bench/fleet.ts, against a bare HTTPS server that
//            parses the review and rewrites only apiVersion (bench/webhook-review-server.ts),
//            and a control: Switchyard asked for the version the objects are at (no conversion).
//            Each server is its own process; the load comes from this one, alternating rounds.
//   replica  start to ready and heap of a replica holding 1,000 targets of 50 leaves, as its
//            own process (bench/webhook-replica.ts) reading a real JetStream bus; the same
//            process with the view alone (no plans) splits the heap. With REFERENCE_DIR set (a
//            checkout of TeraSky-OSS/declarative-conversion-operator at d92dfe6), the reference
//            engine compiles the same targets in the same run (bench/reference/), at GOMAXPROCS=1
//            and 2, each run beside a replica's start.
//   lease    bytes written per heartbeat and per publish at 50,000 held targets, against the
//            reference design's whole-Lease rewrite of its gzip+base64 list.
//
//   SWITCHYARD_BIN_NATS=… [REFERENCE_DIR=…] node bench/webhook.ts   (BENCH_PARTS=review,replica,lease)
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { Pool } from 'undici';
import { API_VERSION } from '../src/api/constants.ts';
import { encodeMessage, type ObjectEvent, objectEventSchema } from '../src/bus/messages.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { DEFAULT_TOPOLOGY, ensureTopology } from '../src/bus/topology.ts';
import { DEFAULT_BUDGET_BYTES, expectedSetOf } from '../src/core/served-set-codec.ts';
import type { KubeWriter } from '../src/kube/writer.ts';
import { NatsServer } from '../src/local-cluster/nats.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { LeasePublisher, servedLeaseBody } from '../src/webhook/lease-publisher.ts';
import { deployedEnv } from './deployed-env.ts';
import { configSpec, hubObject, target } from './fleet.ts';
import {
  buildReference,
  type ReferenceRun,
  type ReferenceTarget,
  runReference,
  writeReferenceTargets,
} from './reference/run.ts';
import { targetNames } from './target-names.ts';

const PARTS = new Set((process.env.BENCH_PARTS ?? 'review,replica,lease').split(','));
const log = pino({ level: 'warn' });
const here = import.meta.dirname;

// ---------------------------------------------------------------------------------------------
// review

const REVIEW_SIZES = (process.env.REVIEW_SIZES ?? '1,10,50').split(',').map(Number);
const CONCURRENCY = Number(process.env.REVIEW_CONCURRENCY ?? 8);
const ROUND_MS = Number(process.env.REVIEW_ROUND_MS ?? 3_000);
const ROUNDS = Number(process.env.REVIEW_ROUNDS ?? 3);
const TARGET = 'widgets0.example.org';

interface LoadResult {
  requests: number;
  ms: number;
  latencies: number[];
  /** CPU seconds the server process spent over the round (user + system). */
  serverCpu: number;
}

/** A process's CPU seconds so far, from /proc (Linux): what the server itself spent, whatever the load generator took. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** A review of `objects` hub (v3) objects, to be converted to `desiredVersion`. */
function reviewBody(objects: number, desiredVersion: string): string {
  return JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: {
      uid: '00000000-0000-0000-0000-000000000001',
      desiredAPIVersion: `example.org/${desiredVersion}`,
      objects: Array.from({ length: objects }, (_, i) => hubObject(i)),
    },
  });
}

type ReviewServer = Awaited<ReturnType<typeof startServer>>;

/**
 * What each row of the table loads, and with which review. The control is Switchyard asked for
 * the version its objects already have: everything but the conversion (routing, the review
 * check, the answer, metrics), so the rows tell the server's cost from the engine's.
 */
function reviewRuns(floor: ReviewServer, switchyard: ReviewServer, objects: number) {
  return [
    { label: 'floor: parse, rewrite apiVersion', server: floor, body: reviewBody(objects, 'v2') },
    { label: 'switchyard webhook-server', server: switchyard, body: reviewBody(objects, 'v2') },
    {
      label: 'control: switchyard, asked for v3, the version the objects are at',
      server: switchyard,
      body: reviewBody(objects, 'v3'),
    },
  ];
}

async function startServer(mode: 'switchyard' | 'floor', cert: { certPem: string; keyPem: string }) {
  const flags = (process.env.REVIEW_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...flags, join(here, 'webhook-review-server.ts'), mode], {
    env: deployedEnv({ BENCH_CERT: cert.certPem, BENCH_KEY: cert.keyPem }),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
  const pool = new Pool(`https://127.0.0.1:${port}`, {
    connections: CONCURRENCY,
    connect: { rejectUnauthorized: false },
  });
  return { mode, child, pool };
}

/** CONCURRENCY clients, each posting the review as soon as its previous answer is read. */
async function load(
  server: { pool: Pool; child: { pid?: number | undefined } },
  body: string,
  ms: number,
): Promise<LoadResult> {
  const { pool } = server;
  const cpuBefore = cpuSeconds(server.child.pid ?? 0);
  const latencies: number[] = [];
  const until = performance.now() + ms;
  const started = performance.now();
  const client = async () => {
    while (performance.now() < until) {
      const sent = performance.now();
      const res = await pool.request({
        method: 'POST',
        path: `/convert/${TARGET}`,
        headers: { 'content-type': 'application/json' },
        body,
      });
      // Checked, not parsed: parsing every answer here would take the core the servers share.
      const answer = await res.body.text();
      if (res.statusCode !== 200 || !answer.includes('"status":"Success"') || answer.length < body.length / 2)
        throw new Error(`a review failed: ${res.statusCode} ${answer.slice(0, 300)}`);
      latencies.push(performance.now() - sent);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  return {
    requests: latencies.length,
    ms: performance.now() - started,
    latencies,
    serverCpu: cpuSeconds(server.child.pid ?? 0) - cpuBefore,
  };
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? Number.NaN;
}

function summary(results: readonly LoadResult[]) {
  const requests = results.reduce((n, r) => n + r.requests, 0);
  const ms = results.reduce((n, r) => n + r.ms, 0);
  const sorted = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const cpu = results.reduce((n, r) => n + r.serverCpu, 0);
  return {
    rate: (requests * 1000) / ms,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    cpuPerReview: (cpu * 1e6) / requests,
  };
}

/**
 * Floor ÷ this in CPU per review, for each round against the floor's round beside it: how far
 * the machine's load moved the ratio while the bench ran.
 */
function roundByRound(floorRounds: readonly LoadResult[], rounds: readonly LoadResult[]): string {
  const cpuPerReview = (r: LoadResult) => r.serverCpu / r.requests;
  const ratios = rounds
    .map((r, i) => cpuPerReview(floorRounds[i] as LoadResult) / cpuPerReview(r))
    .sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)] ?? Number.NaN;
  return `${median.toFixed(2)}× (${ratios[0]?.toFixed(2)}–${ratios.at(-1)?.toFixed(2)})`;
}

async function reviewBench(): Promise<void> {
  const issuer = x509Issuer();
  const now = Date.now();
  const ca = await issuer.createCa({
    commonName: 'bench',
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3_600_000,
  });
  const cert = await issuer.issueServing({
    ca,
    dnsNames: ['localhost'],
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3_600_000,
  });
  const floorServer = await startServer('floor', cert);
  const switchyardServer = await startServer('switchyard', cert);
  console.log(
    `\n## ConversionReview: ${CONCURRENCY} concurrent clients, ${ROUNDS} alternating rounds of ${ROUND_MS} ms per server and size\n`,
  );
  console.log(
    '| objects per review | server | reviews/s | objects/s | p50 | p99 | vs floor (reviews/s) | server CPU per review | floor ÷ this (CPU) | the same, round by round: median (range) |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  try {
    for (const objects of REVIEW_SIZES) {
      const runs = reviewRuns(floorServer, switchyardServer, objects);
      const results = new Map<string, LoadResult[]>(runs.map((r) => [r.label, []]));
      for (const run of runs) await load(run.server, run.body, 1_000);
      for (let round = 0; round < ROUNDS; round++)
        for (const run of round % 2 === 0 ? runs : [...runs].reverse())
          results.get(run.label)?.push(await load(run.server, run.body, ROUND_MS));
      const floorRounds = results.get(runs[0]?.label ?? '') ?? [];
      const floor = summary(floorRounds);
      for (const { label } of runs) {
        const rounds = results.get(label) ?? [];
        const r = summary(rounds);
        console.log(
          `| ${objects} | ${label} | ${Math.round(r.rate).toLocaleString('en-US')} | ${Math.round(r.rate * objects).toLocaleString('en-US')} | ${r.p50.toFixed(2)} ms | ${r.p99.toFixed(2)} ms | ${(r.rate / floor.rate).toFixed(2)}× | ${Math.round(r.cpuPerReview)} µs | ${(floor.cpuPerReview / r.cpuPerReview).toFixed(2)}× | ${roundByRound(floorRounds, rounds)} |`,
        );
      }
    }
  } finally {
    for (const s of [floorServer, switchyardServer]) {
      await s.pool.close();
      s.child.kill();
    }
  }
}

// ---------------------------------------------------------------------------------------------
// replica

const REPLICA_TARGETS = Number(process.env.REPLICA_TARGETS ?? 1_000);
const REPLICA_RUNS = Number(process.env.REPLICA_RUNS ?? 3);
const INSTANCE = 'bench';

function recorded(kind: string, object: { metadata: { name: string } }, i: number) {
  const full = {
    ...object,
    metadata: { ...object.metadata, uid: `uid-${kind}-${i}`, resourceVersion: String(1000 + i) },
  };
  const event: ObjectEvent = {
    op: 'upsert',
    object: full,
    observedBy: 'list',
    observedAt: new Date().toISOString(),
  };
  return {
    subject: objectSubject({ kind, namespace: '', name: object.metadata.name }),
    data: encodeMessage(objectEventSchema, event),
  };
}

/** The replica's targets, each a CRD and its config's hub and spokes: what both engines compile. */
function fleetTargets(n: number) {
  return Array.from({ length: n }, (_, i) => ({ crd: target(i), config: configSpec(i) }));
}

/** The records `switchyard watch` would hold: the instance, the targets, a pinned config each. */
function fleetRecords(targets: ReturnType<typeof fleetTargets>) {
  const instance = {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name: INSTANCE },
    spec: { replicas: 1 },
  };
  const records = [recorded('webhookserver', instance, 0)];
  for (const [i, { crd, config }] of targets.entries()) {
    records.push(recorded('crd', crd, i));
    records.push(
      recorded(
        'crdconfig',
        {
          apiVersion: API_VERSION,
          kind: 'CRDConversionConfig',
          metadata: { name: `widgets${i}` },
          spec: {
            targetCRD: { name: crd.metadata.name },
            webhookServerRef: { name: INSTANCE },
            ...config,
          },
        } as { metadata: { name: string } },
        i,
      ),
    );
  }
  return records;
}

interface ReplicaRun {
  viewMs: number;
  /** The first sync: what to hold decided, nothing compiled (issue 31). */
  syncMs: number;
  readyMs: number;
  /** From ready to every plan compiled in the background and reported. */
  compileMs: number;
  compiledMs: number;
  heapBytes: number;
  maxRssBytes: number;
}

async function runReplica(url: string, expected: number, mode: 'replica' | 'view'): Promise<ReplicaRun> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      '--expose-gc',
      ...(process.env.REPLICA_NODE_FLAGS ?? '').split(' ').filter(Boolean),
      join(here, 'webhook-replica.ts'),
      url,
      INSTANCE,
      String(expected),
      mode,
    ],
    { maxBuffer: 1 << 20, env: deployedEnv() },
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ReplicaRun;
}

/** How the reference's compile is run beside each replica start: the last is the issue's measure. */
const REFERENCE_CASES = [
  { label: 'GOMAXPROCS=1, serial', gomaxprocs: 1, workers: 1 },
  { label: 'GOMAXPROCS=2, serial (as its InitialSync; GC gets the other core)', gomaxprocs: 2, workers: 1 },
  { label: 'GOMAXPROCS=2, 2 goroutines taking the next target', gomaxprocs: 2, workers: 2 },
] as const;

interface Reference {
  binary: string;
  input: string;
}

/** The reference program built against REFERENCE_DIR and its input written; undefined when unset. */
async function prepareReference(
  dir: string,
  targets: readonly ReferenceTarget[],
): Promise<Reference | undefined> {
  const referenceDir = process.env.REFERENCE_DIR;
  if (!referenceDir) {
    console.log(
      '\nREFERENCE_DIR is not set: the reference side by side is skipped. Point it at a checkout of TeraSky-OSS/declarative-conversion-operator at d92dfe6 to compile the same targets in its engine.',
    );
    return undefined;
  }
  const binary = await buildReference(referenceDir, dir);
  const input = join(dir, 'reference-targets.json');
  await writeReferenceTargets(input, targets);
  return { binary, input };
}

function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const msList = (xs: readonly number[]) => xs.map((x) => Math.round(x).toLocaleString('en-US')).join(', ');

function countsOf(counts: Record<string, number>): string {
  const entries = Object.entries(counts).sort(([, a], [, b]) => b - a);
  return entries.length === 0
    ? 'none'
    : entries.map(([k, n]) => `${k} ${n.toLocaleString('en-US')}`).join(', ');
}

/** Each replica start against the reference runs beside it, run by run, and the issue's target. */
function printSideBySide(runs: readonly ReplicaRun[], reference: ReadonlyMap<string, ReferenceRun[]>): void {
  const first = reference.values().next().value?.[0];
  if (!first) return;
  console.log(
    `\n## Side by side: the reference engine (TeraSky-OSS/declarative-conversion-operator d92dfe6, ${first.goVersion}) compiling the same ${first.targets} targets, a fresh process per run beside each replica start\n`,
  );
  console.log(
    `Rules mapped into the reference's engine: ${countsOf(first.rulesMapped)}; left out: ${countsOf(first.rulesLeftOut)}. Spokes compiled: ${first.compiled} of ${first.spokes}.\n`,
  );
  const ready = runs.map((r) => r.readyMs);
  const compiled = runs.map((r) => r.compiledMs);
  console.log(
    '| measure | median | runs | replica start to ready ÷ this (median of the runs) | start to every plan compiled ÷ this | target |',
  );
  console.log('|---|---|---|---|---|---|');
  console.log(
    `| switchyard replica, start to ready (bus read, configs parsed, what to hold decided; plans compile after, a review compiles its own at once) | ${Math.round(median(ready))} ms | ${msList(ready)} | | | |`,
  );
  console.log(
    `| switchyard replica, start to every plan compiled and reported | ${Math.round(median(compiled))} ms | ${msList(compiled)} | | | |`,
  );
  for (const [i, c] of REFERENCE_CASES.entries()) {
    const compile = (reference.get(c.label) ?? []).map((r) => r.compileMs);
    const ratioOf = (replica: readonly number[]) =>
      median(replica.map((r, run) => r / (compile[run] as number)));
    const ratio = ratioOf(ready);
    const measure = i === REFERENCE_CASES.length - 1;
    const target = measure ? `≤ 0.5× (start to ready): **${ratio <= 0.5 ? 'met' : 'not met'}**` : '';
    const bold = (text: string) => (measure ? `**${text}**` : text);
    console.log(
      `| reference compile, ${c.label} | ${bold(`${Math.round(median(compile))} ms`)} | ${msList(compile)} | ${bold(`${ratio.toFixed(2)}×`)} | ${ratioOf(compiled).toFixed(2)}× | ${target} |`,
    );
  }
  const all = [...reference.values()].flat();
  console.log(
    `| reference, decoding the targets' JSON into its typed CRDs (not in its compile) | ${Math.round(median(all.map((r) => r.decodeMs)))} ms | | | | |`,
  );
  console.log(
    `| reference, heap its compiled reports retain per target (after GC) | ${(median(all.map((r) => r.heapBytes)) / 1024 / first.targets).toFixed(1)} KiB | | | | |`,
  );
  console.log(
    `| reference, peak RSS of the process (the input file and its decode included) | ${(median(all.map((r) => r.maxRssBytes)) / 1024 / 1024).toFixed(0)} MiB | | | | |`,
  );
}

async function replicaBench(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-bench-'));
  const server = await NatsServer.start(dir, log);
  try {
    const targets = fleetTargets(REPLICA_TARGETS);
    const reference = await prepareReference(dir, targets);
    const nc = await connect({ servers: server.url });
    await ensureTopology(await jetstreamManager(nc), DEFAULT_TOPOLOGY);
    const js = jetstream(nc);
    const records = fleetRecords(targets);
    await Promise.all(records.map((r) => js.publish(r.subject, r.data)));
    const recordBytes = records.reduce((n, r) => n + r.data.length, 0);
    await nc.close();
    const runs: ReplicaRun[] = [];
    const views: ReplicaRun[] = [];
    const referenceRuns = new Map<string, ReferenceRun[]>(REFERENCE_CASES.map((c) => [c.label, []]));
    for (let i = 0; i < REPLICA_RUNS; i++) {
      runs.push(await runReplica(server.url, REPLICA_TARGETS, 'replica'));
      views.push(await runReplica(server.url, 0, 'view'));
      if (reference)
        for (const c of REFERENCE_CASES)
          referenceRuns
            .get(c.label)
            ?.push(await runReference(reference.binary, reference.input, c.gomaxprocs, c.workers));
    }
    const med = (xs: ReplicaRun[], f: (r: ReplicaRun) => number) => median(xs.map(f));
    const kib = (bytes: number) => `${(bytes / 1024 / REPLICA_TARGETS).toFixed(1)} KiB`;
    console.log(
      `\n## Replica start: ${REPLICA_TARGETS} targets × 3 versions × 50 leaves, 10-rule configs (records ${(recordBytes / 1024 / 1024).toFixed(1)} MiB on the bus), medians of ${REPLICA_RUNS} processes\n`,
    );
    console.log('| measure | result | reference | target |');
    console.log('|---|---|---|---|');
    console.log(`| read the bus (view start) | ${med(runs, (r) => r.viewMs).toFixed(0)} ms | | |`);
    console.log(`| decide what to hold (first sync) | ${med(runs, (r) => r.syncMs).toFixed(0)} ms | | |`);
    console.log(
      `| **start to ready** | **${med(runs, (r) => r.readyMs).toFixed(0)} ms** | ${reference ? 'side by side below' : 'REFERENCE_DIR not set'} | ≤ 0.5× the reference's compile at GOMAXPROCS=2 |`,
    );
    console.log(
      `| compile and publish in the background, after ready | ${med(runs, (r) => r.compileMs).toFixed(0)} ms | | |`,
    );
    console.log(
      `| start to every plan compiled and reported | ${med(runs, (r) => r.compiledMs).toFixed(0)} ms | | |`,
    );
    console.log(
      `| **heap per target held** (after gc) | **${kib(med(runs, (r) => r.heapBytes))}** | ~18 KiB | ≤ 9 KiB |`,
    );
    console.log(`| of which the view's records | ${kib(med(views, (r) => r.heapBytes))} | | |`);
    console.log(
      `| peak RSS of the process | ${(med(runs, (r) => r.maxRssBytes) / 1024 / 1024).toFixed(0)} MiB | 140 MiB | |`,
    );
    if (reference) printSideBySide(runs, referenceRuns);
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// lease

const LEASE_TARGETS = 50_000;

async function leaseBench(): Promise<void> {
  const names = targetNames(LEASE_TARGETS);
  const writes: { kind: 'apply' | 'patch'; bytes: number }[] = [];
  let rv = 0;
  const writer = {
    async apply(_ref: unknown, body: unknown) {
      writes.push({ kind: 'apply', bytes: Buffer.byteLength(JSON.stringify(body)) });
      return {
        ...(body as object),
        metadata: { ...(body as { metadata: object }).metadata, resourceVersion: String(++rv) },
      };
    },
    async mergePatch(_ref: unknown, _name: string, patch: unknown) {
      writes.push({ kind: 'patch', bytes: Buffer.byteLength(JSON.stringify(patch)) });
      return { metadata: { resourceVersion: String(++rv) } };
    },
  } as unknown as Pick<KubeWriter, 'apply' | 'mergePatch'>;
  const publisher = new LeasePublisher({
    writer,
    namespace: 'switchyard-system',
    instance: INSTANCE,
    pod: { name: 'bench-webhook-server-7d9f8c6b5-x2x4q', uid: '6f1c1f43-6c0e-4c53-9a43-4c1d2b1c0f00' },
    log,
    renewEveryMs: 50,
    leaseDurationSeconds: 1,
  });
  const expected = expectedSetOf(names);
  publisher.publish(new Set(names), expected);
  await new Promise((done) => setTimeout(done, 400));
  await publisher.stop();
  const applies = writes.filter((w) => w.kind === 'apply');
  const patches = writes.filter((w) => w.kind === 'patch');
  const reference = gzipSync([...names].sort().join('\n')).toString('base64');
  const referenceLease = Buffer.byteLength(
    JSON.stringify(
      servedLeaseBody({
        namespace: 'switchyard-system',
        instance: INSTANCE,
        pod: { name: 'bench-webhook-server-7d9f8c6b5-x2x4q', uid: '6f1c1f43-6c0e-4c53-9a43-4c1d2b1c0f00' },
        value: reference.slice(0, DEFAULT_BUDGET_BYTES),
        leaseDurationSeconds: 90,
        renewTimeMs: Date.now(),
      }),
    ),
  );
  const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
  console.log(`\n## Lease writes at ${LEASE_TARGETS.toLocaleString('en-US')} held targets\n`);
  console.log('| write | switchyard | reference (whole Lease, list capped at its 192 KiB budget) | target |');
  console.log('|---|---|---|---|');
  console.log(
    `| **heartbeat** (every 30 s) | **${patches[0]?.bytes ?? 0} B** (${patches.length} measured) | ${kib(referenceLease)} | ≤ 19.2 KiB |`,
  );
  console.log(`| publish (the set changed) | ${kib(applies[0]?.bytes ?? 0)} | ${kib(referenceLease)} | |`);
  console.log(
    `| reference list uncapped | | ${kib(reference.length)} (over its budget: it publishes "truncated") | |`,
  );
}

if (PARTS.has('review')) await reviewBench();
if (PARTS.has('replica')) await replicaBench();
if (PARTS.has('lease')) await leaseBench();
