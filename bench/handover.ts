// The handlers end to end on the local stack (etcd, kube-apiserver, NATS JetStream), every
// worker a `switchyard` process as in a Pod:
//
//   SWITCHYARD_BIN_DIR=… SWITCHYARD_BIN_NATS=… node bench/handover.ts      (~20 min)
//
// The handover's confirmation (BENCH_CONFIRM_SECONDS, 0 by default) is a wait the path is
// told to make, so it is left out unless asked for.
//
// 1. Handover latency: from the write of the Lease in which the destination's last ready Pod
//    reports a target, to the patch of that target's spec.conversion (both apiserver times, from
//    its audit log). LAT_BATCHES batches of LAT_BATCH pinned configs are repinned from one
//    instance to another; once all of a batch wait (HandoverPending), one Lease write reports
//    them. Baseline in the same run, its batches alternating with switchyard's: the fewest steps
//    that can do it, a watch on that Lease in this process that decodes the served set and
//    patches each newly reported target at once (no bus, no view, no gate, no status): what the
//    apiserver and one watch cost by themselves. Each report is made with the workers at rest
//    (no write for a second: not the setup's Events, not the batch's repin).
// 2. Assign + handover throughput: THROUGHPUT_CONFIGS unpinned configs all move from one pool
//    member to the other (two instance writes: the other member joins the pool, the first
//    leaves), the destination reporting every target already. From the first instance write to
//    the last handover status write, with 1 and then 2 replicas of every worker; with the writes
//    client unlimited (as deployed by default), and with kubernetes.qps per process (a cluster
//    whose apiserver is not the bottleneck, which APF or a client limit paces per replica).
//    The assign fan-out pacer (fleet-wide, 50/s by default) is raised so that it is not what is
//    measured. CPU seconds of the apiserver, etcd and the workers show where the time goes.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  Watch,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import {
  API_VERSION,
  GROUP,
  SERVED_SET_ANNOTATION,
  servedLeaseName,
  VERSION,
  webhookServiceName,
} from '../src/api/constants.ts';
import { type Bus, connectBus } from '../src/bus/connect.ts';
import { keyOfPartitionedSubject } from '../src/bus/runtime/index.ts';
import { objectSubject, unescapeToken } from '../src/bus/subjects.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { decodeServedSet, expectedSetOf } from '../src/core/served-set-codec.ts';
import { desiredConversion } from '../src/core/target-conversion.ts';
import { createKubeClients } from '../src/kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../src/kube/writer.ts';
import { type LocalCluster, startLocalCluster } from '../src/local-cluster/cluster.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { natsTlsOf } from '../src/local-cluster/nats-client.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type AuditEvent, auditLogFromNow } from '../test/support/audit-log.ts';
import { committedCrds, ensureCrd, gizmoCrd, renameConfigSpec } from '../test/support/crds.ts';
import { createReadyEndpointSlice, createServingSecret } from '../test/support/data-plane.ts';
import { switchyardProcess } from '../test/support/processes.ts';
import { ServedLeasePublisher } from '../test/support/served-lease.ts';

const LAT_BATCH = Number(process.env.LAT_BATCH ?? 10);
const LAT_BATCHES = Number(process.env.LAT_BATCHES ?? 20);
const THROUGHPUT_CONFIGS = Number(process.env.THROUGHPUT_CONFIGS ?? 1000);
const LIMITED_QPS = Number(process.env.LIMITED_QPS ?? 10);
/**
 * The handover's confirmation before a verified repoint (`handover.confirmSeconds`, 10 s as
 * deployed): a deliberate wait, not the path, so 0 unless asked; BENCH_CONFIRM_SECONDS=10
 * measures the deployed setting.
 */
const CONFIRM_SECONDS = Number(process.env.BENCH_CONFIRM_SECONDS ?? 0);
/** `latency` skips the throughput runs (the configs they move still fill the view). */
const PARTS = process.env.BENCH_PARTS ?? 'latency,throughput';
const FANOUT = 1_000;
const CRDS = {
  apiVersion: 'apiextensions.k8s.io/v1',
  resource: 'customresourcedefinitions',
  namespaced: false,
};
const WORKERS = ['router', 'assign', 'lease-aggregate', 'handover', 'config-status'] as const;
const WORKER_FLAGS: Partial<Record<(typeof WORKERS)[number], string[]>> = {
  assign: [`--bus.fanoutRatePerSecond=${FANOUT}`],
  handover: [`--handover.confirmSeconds=${CONFIRM_SECONDS}`],
};
const CPU_COLUMNS = ['apiserver', 'etcd', 'nats', 'watchers', ...WORKERS];

const HOPS = [
  'Lease write → its record on the bus (watcher)',
  'record → lease-aggregate work (router)',
  'lease-aggregate work → handover work (lease-aggregate)',
  'handover work → patch (handover)',
] as const;
type Hop = (typeof HOPS)[number];

/**
 * When each message of the path went by, as a subscriber on the bus sees it (the same clock as
 * the apiserver's audit times): the destination Lease's records, lease-aggregate's work for the
 * destination, handover work by target.
 */
class PathTrace {
  readonly records: number[] = [];
  readonly aggregateWork: number[] = [];
  readonly handoverWork = new Map<string, number[]>();
  private readonly bus: Bus;
  private constructor(bus: Bus) {
    this.bus = bus;
  }

  static async start(lease: string, instanceName: string): Promise<PathTrace> {
    const bus = await connectBus({
      servers: cluster.natsUrl,
      tls: natsTlsOf(cluster),
      name: 'bench-trace',
      log,
      mode: 'none',
    });
    const trace = new PathTrace(bus);
    bus.nc.subscribe(objectSubject({ kind: 'lease', namespace: NS, name: lease }), {
      callback: () => {
        trace.records.push(Date.now());
      },
    });
    bus.nc.subscribe('work.lease-aggregate.>', {
      callback: (_err, m) => {
        if (keyOfPartitionedSubject('work.lease-aggregate', m.subject) === instanceName)
          trace.aggregateWork.push(Date.now());
      },
    });
    bus.nc.subscribe('work.handover.>', {
      callback: (_err, m) => {
        const key = keyOfPartitionedSubject('work.handover', m.subject);
        if (key === undefined) return;
        const target = unescapeToken(key);
        trace.handoverWork.set(target, [...(trace.handoverWork.get(target) ?? []), Date.now()]);
      },
    });
    await bus.nc.flush();
    return trace;
  }

  /** The first time after `since` (ms) in `times`. */
  static firstAfter(times: readonly number[] | undefined, since: number): number | undefined {
    return times?.find((t) => t >= since);
  }

  close(): Promise<void> {
    return this.bus.close();
  }
}

const log = pino({ level: 'warn' });
const cluster: LocalCluster = await startLocalCluster({ log });
const admin = new KubeConfig();
admin.loadFromFile(cluster.kubeConfigs.admin);
const custom = admin.makeApiClient(CustomObjectsApi);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const audit = await auditLogFromNow(cluster.auditLog);
const NS = 'bench';
const baselineClients = createKubeClients({
  kubeConfig: admin,
  component: 'bench-baseline',
  kubernetes: defaultConfig().kubernetes,
});
const writer = new KubeWriter(baselineClients.writes, fieldManagerFor('bench-baseline'));
const processes: ManagedProcess[] = [];
const publishers: ServedLeasePublisher[] = [];
let failed = false;

try {
  await (
    await connectBus({
      servers: cluster.natsUrl,
      tls: natsTlsOf(cluster),
      name: 'bench-setup',
      log,
      mode: 'apply',
    })
  ).close();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NS } } });

  const latTargets = names('lat', LAT_BATCH * LAT_BATCHES);
  const baseTargets = names('base', LAT_BATCH * LAT_BATCHES);
  const tputTargets = names('tput', THROUGHPUT_CONFIGS);
  progress(`creating ${latTargets.length + baseTargets.length + tputTargets.length} target CRDs`);
  await inParallel([...latTargets, ...baseTargets, ...tputTargets], 8, (t) =>
    crdApi.createCustomResourceDefinition({ body: gizmoCrd(t) }),
  );

  // Latency: LA serves every lat target; LB's one ready Pod reports them batch by batch.
  await instance('lat-a', { pods: ['lat-a-1'], served: latTargets });
  const lb = await instance('lat-b', { pods: ['lat-b-1'], served: [] });
  await instance('base-a', { pods: ['base-a-1'], served: baseTargets, create: false });
  const bl = await instance('base-b', { pods: ['base-b-1'], served: [], create: false });
  // Throughput: a pool of one, the other member reporting everything before it joins.
  await instance('tput-a', { pods: ['tput-a-1'], served: tputTargets, sharding: true });
  await instance('tput-b', { pods: ['tput-b-1'], served: tputTargets, sharding: false });

  startWorkers(1, []);
  startWatchers();
  progress(`creating ${latTargets.length + tputTargets.length} configs`);
  await inParallel(latTargets, 8, (t) => createConfig(t, 'lat-a'));
  await inParallel(tputTargets, 8, (t) => createConfig(t, undefined));
  await untilPatched(
    'every config applied',
    [...latTargets, ...tputTargets],
    120_000 + 200 * tputTargets.length,
  );
  await pointAt(baseTargets, 'base-a');

  progress(`latency: ${LAT_BATCHES} batches of ${LAT_BATCH}, switchyard and the baseline`);
  const { ours, baseline } = await latency(
    { targets: latTargets, destination: lb },
    { targets: baseTargets, destination: bl },
  );

  const runs: ThroughputRun[] = [];
  let from = 'tput-a';
  for (const limited of PARTS.includes('throughput') ? [false, true] : []) {
    for (const replicas of [1, 2]) {
      await stopWorkers();
      startWorkers(replicas, limited ? [`--kubernetes.qps=${LIMITED_QPS}`] : []);
      await new Promise((r) => setTimeout(r, 3_000));
      const to = from === 'tput-a' ? 'tput-b' : 'tput-a';
      progress(
        `throughput: ${replicas} replica(s), ${limited ? `qps ${LIMITED_QPS}` : 'unlimited'}, ${from} → ${to}`,
      );
      runs.push({ replicas, limited, ...(await throughput(tputTargets, from, to)) });
      from = to;
    }
  }
  report(ours, baseline, runs);
} catch (err) {
  failed = true;
  throw err;
} finally {
  for (const p of publishers) await p.stop().catch(() => undefined);
  await Promise.all(processes.map((p) => p.stop(5_000)));
  await baselineClients.close();
  await cluster.stop({ keepDir: failed || process.env.BENCH_KEEP_DIR === '1' });
  if (failed) progress(`failed: logs kept in ${cluster.dir}/logs`);
}

function progress(what: string): void {
  process.stderr.write(`[bench] ${new Date().toISOString().slice(11, 19)} ${what}\n`);
}

function names(prefix: string, n: number): string[] {
  return Array.from({ length: n }, (_, i) => `gizmos.${prefix}${i}.bench.switchyard.dev`);
}

async function inParallel<T>(items: T[], width: number, each: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await each(items[next++] as T);
    }),
  );
}

async function instance(
  name: string,
  opts: { pods: string[]; served: string[]; sharding?: boolean; create?: boolean },
): Promise<ServedLeasePublisher> {
  await createServingSecret(admin, NS, name);
  await createReadyEndpointSlice(admin, NS, name, opts.pods);
  let publisher: ServedLeasePublisher | undefined;
  for (const pod of opts.pods) {
    publisher = await ServedLeasePublisher.start({
      kubeConfig: admin,
      namespace: NS,
      instance: name,
      pod,
      served: opts.served,
      leaseDurationSeconds: 600,
      renewEveryMs: 60_000,
    });
    publishers.push(publisher);
  }
  if (opts.create !== false)
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      body: {
        apiVersion: API_VERSION,
        kind: 'ConversionWebhookServer',
        metadata: { name },
        spec: { namespace: NS, sharding: { enabled: opts.sharding ?? false } },
      },
    });
  return publisher as ServedLeasePublisher;
}

function configName(target: string): string {
  return target.split('.')[1] ?? target;
}

function createConfig(target: string, pin: string | undefined): Promise<unknown> {
  return custom.createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
    body: {
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name: configName(target) },
      spec: renameConfigSpec(target, { pin }),
    },
  });
}

function mergePatch(plural: string, name: string, body: object): Promise<unknown> {
  return custom.patchClusterCustomObject(
    { group: GROUP, version: VERSION, plural, name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

function startWorkers(replicas: number, extra: string[]): void {
  for (let r = 1; r <= replicas; r++)
    for (const worker of WORKERS) {
      const args = [worker, ...(WORKER_FLAGS[worker] ?? [])];
      processes.push(
        switchyardProcess({
          name: `${worker}-${r}`,
          args: [...args, ...extra],
          natsUrl: cluster.natsUrl,
          natsCaFile: cluster.natsCaFile,
          natsCredentialsDir: cluster.natsCredentialsDir,
          kubeconfig: cluster.kubeConfigs.admin,
          logFile: join(cluster.dir, 'logs', `bench-${worker}-${r}.log`),
          log,
        }),
      );
    }
}

function startWatchers(): void {
  processes.push(
    switchyardProcess({
      name: 'watchers',
      args: ['watch'],
      natsUrl: cluster.natsUrl,
      natsCaFile: cluster.natsCaFile,
      natsCredentialsDir: cluster.natsCredentialsDir,
      kubeconfig: cluster.kubeConfigs.admin,
      logFile: join(cluster.dir, 'logs', 'bench-watchers.log'),
      log,
    }),
  );
}

async function stopWorkers(): Promise<void> {
  const workers = processes.filter((p) => p.name !== 'watchers');
  await Promise.all(workers.map((p) => p.stop(10_000)));
  for (const p of workers) processes.splice(processes.indexOf(p), 1);
}

/** Successful patches of these targets' CRDs (any writer) seen in the audit log. */
function targetPatches(events: AuditEvent[], targets: ReadonlySet<string>, since: string): AuditEvent[] {
  return events.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.objectRef?.resource === 'customresourcedefinitions' &&
      targets.has(e.objectRef.name ?? '') &&
      (e.responseStatus?.code ?? 0) < 300 &&
      e.stageTimestamp > since,
  );
}

async function untilPatched(
  what: string,
  targets: string[],
  timeoutMs: number,
  since = '',
): Promise<AuditEvent[]> {
  const set = new Set(targets);
  return waitFor(
    what,
    async () => {
      const patches = targetPatches(await audit.all(), set, since);
      return new Set(patches.map((e) => e.objectRef?.name)).size >= set.size ? patches : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  );
}

/**
 * Until the workers have written nothing for QUIET_MS: the Events and status writes of the
 * setup (thousands, drained at the events client's pace) or of a batch's repin must not be what
 * a batch's report competes with. Each measurement is one report, on a machine otherwise at rest.
 */
async function quiet(): Promise<void> {
  const QUIET_MS = 1_000;
  const READS = new Set(['get', 'list', 'watch']);
  await waitFor(
    'the workers quiet',
    async () => {
      const last = (await audit.all()).findLast(
        (e) => e.userAgent?.startsWith('switchyard/') && !READS.has(e.verb ?? ''),
      );
      return last === undefined || Date.now() - Date.parse(last.stageTimestamp) >= QUIET_MS
        ? true
        : undefined;
    },
    { timeoutMs: 600_000, intervalMs: 200 },
  );
}

/** The baseline's targets start where switchyard's do: pointed at the first instance. */
async function pointAt(targets: string[], instanceName: string): Promise<void> {
  const caBundle = await trustBundle(instanceName);
  await inParallel(targets, 8, (t) => writer.apply(CRDS, conversionBody(t, instanceName, caBundle)));
}

function conversionBody(target: string, instanceName: string, caBundle: string) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: target },
    spec: {
      conversion: desiredConversion({
        target,
        instance: instanceName,
        namespace: NS,
        caBundle,
        conversionReviewVersions: ['v1'],
      }),
    },
  };
}

async function trustBundle(instanceName: string): Promise<string> {
  const secret = await admin
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ namespace: NS, name: `${instanceName}-webhook-server-tls` });
  return secret.data?.['ca.crt'] ?? '';
}

/**
 * ms from the Lease write that reported each target to that target's patch, apiserver times;
 * and, for switchyard, to the destination's served status written by lease-aggregate (after it
 * published the batch's handover work): the first stage of the path.
 */
async function latenciesOf(
  batch: string[],
  lease: string,
  since: string,
  instanceName?: string,
): Promise<{ patch: number[]; aggregated?: number; leaseWriteMs: number; patchAtMs: Map<string, number> }> {
  const patches = await untilPatched(`batch patched`, batch, 60_000, since);
  const events = await audit.all();
  const leaseWrite = events.find(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.objectRef?.resource === 'leases' &&
      e.objectRef.name === lease &&
      e.verb === 'patch' &&
      e.stageTimestamp > since,
  );
  if (!leaseWrite) throw new Error(`no audit record of the write of ${lease}`);
  const at = Date.parse(leaseWrite.stageTimestamp);
  const aggregated = events.find(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.objectRef?.resource === 'conversionwebhookservers' &&
      e.objectRef.name === instanceName &&
      e.objectRef.subresource === 'status' &&
      e.userAgent?.startsWith('switchyard/lease-aggregate') &&
      e.stageTimestamp > leaseWrite.stageTimestamp,
  );
  const patchAtMs = new Map(
    batch.map((t) => {
      const first = patches.filter((e) => e.objectRef?.name === t).sort(byStage)[0];
      return [t, Date.parse(first?.stageTimestamp ?? '')];
    }),
  );
  return {
    patch: [...patchAtMs.values()].map((ms) => ms - at),
    ...(aggregated && { aggregated: Date.parse(aggregated.stageTimestamp) - at }),
    leaseWriteMs: at,
    patchAtMs,
  };
}

function byStage(a: AuditEvent, b: AuditEvent): number {
  return a.stageTimestamp.localeCompare(b.stageTimestamp);
}

interface SwitchyardLatency {
  patch: number[];
  /** Lease write → lease-aggregate's status write, one per batch. */
  aggregated: number[];
  /** ms spent in each hop of the path, as the bench sees the bus (HOPS). */
  hops: Record<Hop, number[]>;
  /** CPU seconds over the batches' reports and moves, as in the throughput table. */
  cpu: Cpu;
}

/**
 * Switchyard's batches and the baseline's, alternating: each pair meets the machine in the same
 * state (a slower minute of a shared machine slows both), and each batch starts at rest.
 */
async function latency(
  ours: { targets: string[]; destination: ServedLeasePublisher },
  base: { targets: string[]; destination: ServedLeasePublisher },
): Promise<{ ours: SwitchyardLatency; baseline: number[] }> {
  const out: SwitchyardLatency = {
    patch: [],
    aggregated: [],
    hops: Object.fromEntries(HOPS.map((h) => [h, []])) as unknown as Record<Hop, number[]>,
    cpu: {},
  };
  const baseline: number[] = [];
  const trace = await PathTrace.start(ours.destination.name, 'lat-b');
  const watch = await baselineWatch(base.targets);
  try {
    for (let i = 0; i < LAT_BATCHES; i++) {
      progress(`latency batch ${i + 1}/${LAT_BATCHES}`);
      await switchyardBatch(out, trace, ours.destination, ours.targets.slice(0, (i + 1) * LAT_BATCH), i);
      baseline.push(
        ...(await baselineBatch(base.destination, base.targets.slice(0, (i + 1) * LAT_BATCH), i)),
      );
    }
  } finally {
    watch.abort();
    await trace.close();
  }
  return { ours: out, baseline };
}

/** Batch `i`: repinned, waiting (HandoverPending), then reported with the ones before it. */
async function switchyardBatch(
  out: SwitchyardLatency,
  trace: PathTrace,
  destination: ServedLeasePublisher,
  reported: string[],
  i: number,
): Promise<void> {
  const batch = reported.slice(i * LAT_BATCH);
  await inParallel(batch, 8, (t) =>
    mergePatch('crdconversionconfigs', configName(t), { spec: { webhookServerRef: { name: 'lat-b' } } }),
  );
  await waitFor(
    'the batch waiting for its destination',
    async () => {
      const r = (await custom.listClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
      })) as {
        items: {
          metadata: { name: string };
          status?: { conditions?: { type: string; reason: string }[] };
        }[];
      };
      const waiting = new Set(
        r.items
          .filter((c) =>
            c.status?.conditions?.some((x) => x.type === 'HandoverReady' && x.reason === 'HandoverPending'),
          )
          .map((c) => c.metadata.name),
      );
      return batch.every((t) => waiting.has(configName(t))) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  await quiet();
  const since = new Date().toISOString();
  const cpuBefore = cpuSeconds();
  await destination.publish(reported);
  const latencies = await latenciesOf(batch, destination.name, since, 'lat-b');
  addCpu(out.cpu, cpuBefore, cpuSeconds());
  out.patch.push(...latencies.patch);
  if (latencies.aggregated !== undefined) out.aggregated.push(latencies.aggregated);
  addHops(out.hops, trace, latencies, Date.parse(since));
}

function addHops(
  hops: Record<Hop, number[]>,
  trace: PathTrace,
  latencies: { leaseWriteMs: number; patchAtMs: Map<string, number> },
  sinceMs: number,
): void {
  const record = PathTrace.firstAfter(trace.records, sinceMs);
  const work = record && PathTrace.firstAfter(trace.aggregateWork, record);
  if (record === undefined || work === undefined) return;
  hops[HOPS[0]].push(record - latencies.leaseWriteMs);
  hops[HOPS[1]].push(work - record);
  for (const [target, patchedAt] of latencies.patchAtMs) {
    const handover = PathTrace.firstAfter(trace.handoverWork.get(target), work);
    if (handover === undefined) continue;
    hops[HOPS[2]].push(handover - work);
    hops[HOPS[3]].push(patchedAt - handover);
  }
}

function addCpu(into: Cpu, before: Cpu, after: Cpu): void {
  for (const k of CPU_COLUMNS) into[k] = (into[k] ?? 0) + (after[k] ?? 0) - (before[k] ?? 0);
}

/**
 * A watch on the baseline destination's Lease that patches each newly reported target: nothing
 * else. Watched again whenever the apiserver or the connection ends it, until aborted.
 */
async function baselineWatch(targets: string[]): Promise<AbortController> {
  const caBundle = await trustBundle('base-b');
  const patched = new Set<string>();
  const wanted = new Set(targets);
  const stopped = new AbortController();
  let current: AbortController | undefined;
  const watch = async (): Promise<void> => {
    if (stopped.signal.aborted) return;
    current = await new Watch(admin).watch(
      `/apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
      { fieldSelector: `metadata.name=${servedLeaseName('base-b-1')}` },
      (_phase, lease: { metadata?: { annotations?: Record<string, string> } }) => {
        const value = lease.metadata?.annotations?.[SERVED_SET_ANNOTATION];
        if (value === undefined) return;
        const decoded = decodeServedSet(value, expectedSetOf([]));
        if (decoded.kind !== 'set') return;
        for (const t of decoded.served) {
          if (!wanted.has(t) || patched.has(t)) continue;
          patched.add(t);
          void writer.apply(CRDS, conversionBody(t, 'base-b', caBundle));
        }
      },
      rewatch,
    );
  };
  const rewatch = () => {
    watch().catch(() => setTimeout(rewatch, 500));
  };
  stopped.signal.addEventListener('abort', () => current?.abort());
  await watch();
  return stopped;
}

async function baselineBatch(
  destination: ServedLeasePublisher,
  reported: string[],
  i: number,
): Promise<number[]> {
  await quiet();
  const since = new Date().toISOString();
  await destination.publish(reported);
  return (await latenciesOf(reported.slice(i * LAT_BATCH), destination.name, since)).patch;
}

type Cpu = Record<string, number>;

interface ThroughputResult {
  seconds: number;
  perSecond: number;
  cpu: Cpu;
}
type ThroughputRun = ThroughputResult & { replicas: number; limited: boolean };

async function throughput(targets: string[], from: string, to: string): Promise<ThroughputResult> {
  const cpuBefore = cpuSeconds();
  const since = new Date().toISOString();
  await mergePatch('conversionwebhookservers', to, { spec: { sharding: { enabled: true } } });
  await mergePatch('conversionwebhookservers', from, { spec: { sharding: { enabled: false } } });
  const set = new Set(targets);
  const handoverStatus = (events: AuditEvent[]) =>
    events.filter(
      (e) =>
        e.stage === 'ResponseComplete' &&
        e.verb === 'patch' &&
        e.objectRef?.resource === 'crdconversionconfigs' &&
        e.userAgent?.startsWith('switchyard/handover') &&
        set.has(`gizmos.${e.objectRef.name}.bench.switchyard.dev`) &&
        (e.responseStatus?.code ?? 0) < 300 &&
        e.stageTimestamp > since,
    );
  const first = (await audit.all()).find(
    (e) =>
      e.objectRef?.name === to &&
      e.objectRef.resource === 'conversionwebhookservers' &&
      e.stageTimestamp > since,
  );
  const patches = await untilPatched(`${targets.length} targets moved to ${to}`, targets, 900_000, since);
  const statuses = await waitFor(
    'every handover status written',
    async () => {
      const s = handoverStatus(await audit.all());
      return new Set(s.map((e) => e.objectRef?.name)).size >= targets.length ? s : undefined;
    },
    { timeoutMs: 300_000, intervalMs: 500 },
  );
  const cpuAfter = cpuSeconds();
  const crds = await crdApi.listCustomResourceDefinition();
  const elsewhere = crds.items.filter(
    (c) =>
      set.has(c.metadata?.name ?? '') &&
      c.spec.conversion?.webhook?.clientConfig?.service?.name !== webhookServiceName(to),
  );
  if (elsewhere.length > 0) throw new Error(`${elsewhere.length} targets do not name ${to} after the move`);
  const start = Date.parse(first?.stageTimestamp ?? since);
  const end = Math.max(...[...patches, ...statuses].map((e) => Date.parse(e.stageTimestamp)));
  const seconds = (end - start) / 1000;
  const cpu = Object.fromEntries(CPU_COLUMNS.map((k) => [k, (cpuAfter[k] ?? 0) - (cpuBefore[k] ?? 0)]));
  return { seconds, perSecond: targets.length / seconds, cpu };
}

/** CPU seconds (user + system) so far of the local stack's processes and of each worker kind. */
function cpuSeconds(): Cpu {
  const ticks = 100; // USER_HZ on Linux
  const out: Cpu = {};
  const byPid = new Map(processes.map((p) => [p.pid, p.name.replace(/-\d+$/, '')]));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const role =
        byPid.get(Number(entry)) ?? (cmdline.includes(cluster.dir) ? stackRole(cmdline) : undefined);
      if (!role) continue;
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      out[role] = (out[role] ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticks;
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function stackRole(cmdline: string): string | undefined {
  if (cmdline.includes('kube-apiserver')) return 'apiserver';
  if (cmdline.includes('etcd')) return 'etcd';
  if (cmdline.includes('nats-server')) return 'nats';
  return undefined;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN;
}

function report(ours: SwitchyardLatency, baseline: number[], runs: ThroughputRun[]): void {
  const row = (name: string, xs: number[]) =>
    `| ${name} | ${xs.length} | ${percentile(xs, 50).toFixed(0)} | ${percentile(xs, 90).toFixed(0)} | ${percentile(xs, 99).toFixed(0)} | ${Math.max(...xs).toFixed(0)} |`;
  const lines = [
    '',
    `Handover latency, last report → patch (ms, apiserver audit times; batches of ${LAT_BATCH}):`,
    '| path | samples | p50 | p90 | p99 | max |',
    '|---|---|---|---|---|---|',
    row('switchyard (watch → bus → lease-aggregate → handover → patch)', ours.patch),
    row('… of which: Lease write → lease-aggregate status write (per batch)', ours.aggregated),
    row('baseline (one watch → decode → patch, in-process)', baseline),
    '',
    'Each hop of the path (ms; bus times as a subscriber in the bench sees them):',
    '| hop | samples | p50 | p90 | p99 | max |',
    '|---|---|---|---|---|---|',
    ...HOPS.map((h) => row(h, ours.hops[h])),
    '',
    `CPU seconds over switchyard's ${LAT_BATCHES} reports and moves: ` +
      CPU_COLUMNS.map((k) => `${k} ${(ours.cpu[k] ?? 0).toFixed(1)}`).join(', '),
    '',
    `Assign + handover throughput, ${THROUGHPUT_CONFIGS} configs moving between pool members ` +
      '(CPU seconds over the run; a worker column sums its replicas):',
    `| writes client | replicas | seconds | targets/s | vs 1 replica | ${CPU_COLUMNS.join(' | ')} |`,
    `|---|---|---|---|---|${CPU_COLUMNS.map(() => '---').join('|')}|`,
  ];
  for (const r of runs) {
    const one = runs.find((x) => x.limited === r.limited && x.replicas === 1);
    const ratio = one ? `${(r.perSecond / one.perSecond).toFixed(2)}×` : '-';
    const cpu = CPU_COLUMNS.map((k) => (r.cpu[k] ?? 0).toFixed(1)).join(' | ');
    lines.push(
      `| ${r.limited ? `qps ${LIMITED_QPS} per process` : 'unlimited'} | ${r.replicas} | ${r.seconds.toFixed(1)} | ` +
        `${r.perSecond.toFixed(1)} | ${ratio} | ${cpu} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
