// One handler worker of bench/simulated-cluster.ts, as its own process: its view started on the
// bus the bench recorded, its handler built as `switchyard <concern>` builds it but with a
// RecordingWriter (no apiserver), then handed work items straight from this process, one at a
// time. Prints one JSON line: the view's start, the heap after gc (view alone, then after the
// decisions), the peak RSS, and each decision's wall time over two passes of the sampled keys
// (the first pays V8's warm-up; the second is the steady state the issue's p99 target is about).
// For assign, also the planning of an instance joining the pool (see `joinPlan`).
//
//   node --expose-gc bench/simulated-worker.ts <nats url> <worker> <samples>
//
// <worker>: router | assign | handover | lease-aggregate | config-status | instances.

import type { KubernetesObject } from '@kubernetes/client-node';
import { jetstream, jetstreamManager, type StoredMsg } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { servingCaSecretName } from '../src/api/constants.ts';
import { KINDS } from '../src/api/resources.ts';
import { decodeObjectEvent, type ObjectEvent, type WorkItem } from '../src/bus/messages.ts';
import { NOTHING_STORED, RecordWriter } from '../src/bus/records/record-writer.ts';
import type { HandlerContext, Outcome } from '../src/bus/runtime/index.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { defaultConfig } from '../src/config/schema.ts';
import type { AssignHandler } from '../src/handlers/assign.ts';
import { systemClock } from '../src/runtime/clock.ts';
import {
  CONFIG_SUBJECT_VIEW_PROJECTIONS,
  HANDLER_VIEW_PROJECTIONS,
  type ViewProjections,
} from '../src/views/projection.ts';
import { heapAfterGc } from './heap.ts';
import { RecordingWriter } from './recording-writer.ts';
import { endpointSliceObject, instanceObject, OPERATOR_NAMESPACE } from './simulated-objects.ts';

const [url = '', worker = '', samplesArg = '2000'] = process.argv.slice(2);
const SAMPLES = Number(samplesArg);
/** Concerns with few keys (one per instance) are decided this many times per pass. */
const MIN_DECISIONS = 200;
const log = pino({ level: 'warn' });
const config = defaultConfig();
const partitions = config.bus.partitions;

function cpuMs(since?: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/** Every `keys.length / n`-th key, so a sample spans the whole key space; repeated up to `min`. */
function sampled<T>(keys: readonly T[], n: number, min: number): T[] {
  if (keys.length === 0) return [];
  const step = Math.max(1, keys.length / n);
  const picked: T[] = [];
  for (let i = 0; i < keys.length && picked.length < n; i += step) picked.push(keys[Math.floor(i)] as T);
  while (picked.length < Math.min(n, min)) picked.push(...picked.slice(0, min - picked.length));
  return picked;
}

function contextFor(key: string, seq: number, subject = key, headers?: StoredMsg['header']): HandlerContext {
  const now = Date.now();
  return {
    subject,
    seq,
    deliveryCount: 1,
    key,
    headers,
    log,
    signal: new AbortController().signal,
    deadline: now + 60_000,
    publishedAtMs: now,
  };
}

interface Pass {
  ms: number[];
  cpuMs: number;
}

async function pass<T>(items: readonly T[], decide: (item: T) => Promise<unknown>): Promise<Pass> {
  const ms: number[] = [];
  const cpu = process.cpuUsage();
  for (const item of items) {
    const started = performance.now();
    await decide(item);
    ms.push(performance.now() - started);
  }
  return { ms, cpuMs: cpuMs(cpu) };
}

const nc = await connect({ servers: url });
const js = jetstream(nc);
const jsm = await jetstreamManager(nc);
const writer = new RecordingWriter(`switchyard-${worker}`);
let events = 0;
const eventSink = {
  record: () => {
    events++;
    return true;
  },
};

/** What each worker reads, which keys it decides, and how one decision is made. */
interface WorkerSpec {
  /** The work items of one pass, prepared untimed. */
  items(view: ObjectView): Promise<unknown[]>;
  decide(item: unknown): Promise<Outcome>;
}

function handlerSpec(
  resyncKeys: (view: ObjectView) => string[],
  build: (view: ObjectView) => (item: WorkItem, ctx: HandlerContext) => Promise<Outcome>,
): (view: ObjectView) => WorkerSpec {
  return (view) => {
    const handle = build(view);
    return {
      items: async () => sampled(resyncKeys(view), SAMPLES, MIN_DECISIONS),
      decide: (key) =>
        handle({ key: key as string, seq: view.sequence }, contextFor(key as string, view.sequence)),
    };
  };
}

const caBundle = Buffer.from('bench trust bundle').toString('base64');

interface Loaded {
  viewKinds: readonly string[];
  /** What its view keeps, as its `switchyard <concern>` process has it keep (the handlers' unless said). */
  projections?: ViewProjections;
  spec: (view: ObjectView) => WorkerSpec;
}

/**
 * Each worker's modules, loaded only in its own process (as `switchyard <concern>` loads only
 * its subcommand's): the RSS measured is that worker's, not every concern's.
 */
const SPECS: Record<string, () => Promise<Loaded>> = {
  router: async () => {
    const [{ ROUTED_VIEW_KINDS }, { Router }] = await Promise.all([
      import('../src/handlers/concern.ts'),
      import('../src/handlers/router.ts'),
    ]);
    return {
      viewKinds: ROUTED_VIEW_KINDS,
      projections: CONFIG_SUBJECT_VIEW_PROJECTIONS,
      spec: (view) => {
        const router = new Router({ js, jsm, view, partitions });
        return {
          // Records spread over the whole stream, read untimed; routing reads each one's previous record itself.
          items: async () => {
            const last = (await jsm.streams.info(STREAMS.records)).state.last_seq;
            const seqs = sampled(
              Array.from({ length: last }, (_, i) => i + 1),
              SAMPLES,
              MIN_DECISIONS,
            );
            const stored: StoredMsg[] = [];
            for (const seq of seqs) {
              const m = await jsm.streams.getMessage(STREAMS.records, { seq });
              if (m) stored.push(m);
            }
            return stored;
          },
          decide: (item) => {
            const m = item as StoredMsg;
            const decoded = decodeObjectEvent(m.data);
            if (!decoded.ok) throw new Error(decoded.reason);
            return router.route(decoded.value, contextFor(m.subject, m.seq, m.subject, m.header));
          },
        };
      },
    };
  },
  assign: async () => {
    const [{ ASSIGN_WORK }, { ASSIGN_VIEW_KINDS }] = await Promise.all([
      import('../src/handlers/assign/wakes.ts'),
      import('../src/handlers/assign/world.ts'),
    ]);
    const handler = await assignHandlerOf();
    return {
      viewKinds: ASSIGN_VIEW_KINDS,
      projections: CONFIG_SUBJECT_VIEW_PROJECTIONS,
      spec: handlerSpec(ASSIGN_WORK.resyncKeys, (view) => handler(view).handle),
    };
  },
  handover: async () => {
    const [{ HANDOVER_WORK }, { HANDOVER_VIEW_KINDS, handoverHandler }, { DEFAULT_HANDOVER_POLICY }] =
      await Promise.all([
        import('../src/handlers/handover/wakes.ts'),
        import('../src/handlers/handover.ts'),
        import('../src/core/handover.ts'),
      ]);
    return {
      viewKinds: HANDOVER_VIEW_KINDS,
      spec: handlerSpec(HANDOVER_WORK.resyncKeys, (view) =>
        handoverHandler({
          view,
          writer,
          trustBundle: () => Promise.resolve({ kind: 'found', caBundle }),
          clock: systemClock,
          events: eventSink,
          policy: DEFAULT_HANDOVER_POLICY,
          defaultNamespace: OPERATOR_NAMESPACE,
        }),
      ),
    };
  },
  'lease-aggregate': async () => {
    const [{ LEASE_AGGREGATE_WORK }, { LEASE_AGGREGATE_VIEW_KINDS, leaseAggregateHandler }] =
      await Promise.all([
        import('../src/handlers/lease-aggregate/wakes.ts'),
        import('../src/handlers/lease-aggregate.ts'),
      ]);
    return {
      viewKinds: LEASE_AGGREGATE_VIEW_KINDS,
      spec: handlerSpec(LEASE_AGGREGATE_WORK.resyncKeys, (view) =>
        leaseAggregateHandler({
          view,
          writer,
          js,
          clock: systemClock,
          handoverPartitions: partitions.handover,
          defaultNamespace: OPERATOR_NAMESPACE,
        }),
      ),
    };
  },
  'config-status': async () => {
    const [{ CONFIG_STATUS_WORK }, { CONFIG_STATUS_VIEW_KINDS, configStatusHandler }] = await Promise.all([
      import('../src/handlers/config-status/wakes.ts'),
      import('../src/handlers/config-status.ts'),
    ]);
    return {
      viewKinds: CONFIG_STATUS_VIEW_KINDS,
      spec: handlerSpec(CONFIG_STATUS_WORK.resyncKeys, (view) =>
        configStatusHandler({ view, writer, clock: systemClock }),
      ),
    };
  },
  instances: async () => {
    const [
      { INSTANCES_WORK },
      { INSTANCES_VIEW_KINDS, instancesHandler },
      { AppliedRenderings },
      { projectImage },
      { x509Issuer },
      { SECRETS },
    ] = await Promise.all([
      import('../src/handlers/instances/wakes.ts'),
      import('../src/handlers/instances.ts'),
      import('../src/handlers/instances/applied-renderings.ts'),
      import('../src/handlers/instances/project-image.ts'),
      import('../src/tls/x509-issuer.ts'),
      import('../src/handlers/instances/secrets.ts'),
    ]);
    return {
      viewKinds: INSTANCES_VIEW_KINDS,
      projections: CONFIG_SUBJECT_VIEW_PROJECTIONS,
      spec: handlerSpec(INSTANCES_WORK.resyncKeys, (view) => {
        seedCaSecrets(view, SECRETS);
        return instancesHandler({
          view,
          writer,
          secrets: writer.secrets,
          issuer: x509Issuer(),
          clock: systemClock,
          handover: { js: countedPublishes, partitions: partitions.handover },
          applied: new AppliedRenderings(),
          settings: () => ({
            defaultNamespace: OPERATOR_NAMESPACE,
            image: projectImage(),
            env: { SWITCHYARD_NATS_URL: url },
            handoverServiceAccount: { name: 'switchyard-handover', namespace: OPERATOR_NAMESPACE },
          }),
        });
      }),
    };
  },
};

/**
 * Each instance's CA Secret as the cluster holds it: the CA whose certificate every target
 * publishes as its caBundle (BENCH_CA_CERT, BENCH_CA_KEY from bench/simulated-cluster.ts), so the
 * instances handler finds every target trusting its bundle, as in a settled cluster, and wakes no
 * handover (`publishes` stays 0). Without them it wakes the handover for every target.
 */
function seedCaSecrets(view: ObjectView, secrets: Parameters<RecordingWriter['seed']>[0]): void {
  const { BENCH_CA_CERT: cert, BENCH_CA_KEY: key } = process.env;
  if (!cert || !key) return;
  const data = {
    'tls.crt': Buffer.from(cert).toString('base64'),
    'tls.key': Buffer.from(key).toString('base64'),
  };
  for (const instance of view.list(KINDS.webhookserver.viewKind))
    writer.seed(secrets, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: servingCaSecretName(instance.metadata.name),
        namespace: OPERATOR_NAMESPACE,
        resourceVersion: '1',
      },
      data,
    } as KubernetesObject);
}

/** Work the handlers publish (the instances handler's trust wakes): counted, then published. */
let publishes = 0;
const countedPublishes: Pick<typeof js, 'publish'> = {
  publish: (...args) => {
    publishes++;
    return js.publish(...args);
  },
};

async function assignHandlerOf(): Promise<(view: ObjectView) => AssignHandler> {
  const { AssignHandler } = await import('../src/handlers/assign.ts');
  return (view) =>
    new AssignHandler({
      view,
      writer,
      js,
      clock: systemClock,
      events: eventSink,
      partitions: { handover: partitions.handover },
      defaultNamespace: OPERATOR_NAMESPACE,
    });
}

const JOINER = 'joiner';
/** The joiner's weight: the pool's middle (weights 1…20), so it wins about 10/220 of the targets. */
const JOINER_WEIGHT = 10;

/**
 * An instance joining the pool, planned as Switchyard plans it: `simulate` (what the operator
 * runs first), the router's trigger for the new instance's record (the configs whose resolution
 * changes: assign's paced fan-out), then assign deciding every key of that fan-out on a view that
 * holds the new instance and its ready replicas (their records published here, as the watchers
 * would). CPU of this process.
 */
async function joinPlan(view: ObjectView) {
  const [{ simulate }, { assignTriggers }, { assignWorldOf, instanceOf }, { formatWorkKey }, handler] =
    await Promise.all([
      import('../src/core/simulate.ts'),
      import('../src/handlers/assign/triggers.ts'),
      import('../src/handlers/assign/world.ts'),
      import('../src/handlers/work-keys.ts'),
      assignHandlerOf(),
    ]);
  const world = assignWorldOf(view);
  const joiner = instanceObject(JOINER, JOINER_WEIGHT, 0, new Date().toISOString());
  // A settled assign has decided its instances' lists (its start's resync wakes every key, and
  // each assignment wakes its instance): one of them decided here, untimed, as it would have been.
  const [settled] = view.list(KINDS.webhookserver.viewKind);
  if (settled) {
    const key = formatWorkKey({ kind: KINDS.webhookserver.viewKind, name: settled.metadata.name });
    await handler(view).handle({ key, seq: view.sequence }, contextFor(key, view.sequence));
  }
  let cpu = process.cpuUsage();
  const simulation = simulate({
    subjects: world.configs,
    before: world.instances,
    after: [...world.instances, instanceOf(joiner)],
    fanoutRatePerSecond: config.bus.fanoutRatePerSecond,
  });
  const simulateCpuMs = cpuMs(cpu);
  cpu = process.cpuUsage();
  const triggers = assignTriggers(
    { kind: KINDS.webhookserver.viewKind, op: 'upsert', object: joiner },
    undefined,
    world,
  );
  const triggerCpuMs = cpuMs(cpu);
  const records = new RecordWriter({ js, jsm, maxPayload: nc.info?.max_payload ?? 0, tombstoneTtl: '3600s' });
  const event: ObjectEvent = {
    op: 'upsert',
    object: joiner,
    observedBy: 'watch',
    observedAt: new Date().toISOString(),
  };
  const written = await records.write(
    objectSubject({ kind: KINDS.webhookserver.viewKind, namespace: '', name: JOINER }),
    event,
    NOTHING_STORED,
  );
  // Its replicas ready: assign holds moves onto an instance with none, so what is timed is the
  // wave its readiness releases, every move recorded.
  const slice = endpointSliceObject(JOINER, event.observedAt);
  const ready = await records.write(
    objectSubject({
      kind: KINDS.endpointslice.viewKind,
      namespace: OPERATOR_NAMESPACE,
      name: slice.metadata.name,
    }),
    { ...event, object: slice },
    NOTHING_STORED,
  );
  await view.waitFor(Math.max(written.stored.seq, ready.stored.seq));
  const handle = handler(view).handle;
  const keys = [...triggers.now, ...triggers.paced].map(formatWorkKey);
  const decided = await pass(keys, (key) =>
    handle({ key, seq: ready.stored.seq }, contextFor(key, ready.stored.seq)),
  );
  return {
    moves: simulation.moves.length,
    simulateCpuMs,
    fanout: triggers.paced.length,
    triggerCpuMs,
    decideCpuMs: decided.cpuMs,
    decideWallMs: decided.ms.reduce((a, b) => a + b, 0),
  };
}

const load = SPECS[worker];
if (!load) throw new Error(`no worker ${worker}: one of ${Object.keys(SPECS).join(', ')}`);
const entry = await load();
const heapBefore = heapAfterGc();
const rssBeforeViewBytes = process.memoryUsage().rss;
const view = new ObjectView(entry.viewKinds, log, {
  project: entry.projections ?? HANDLER_VIEW_PROJECTIONS,
});
const cpuStart = process.cpuUsage();
const started = performance.now();
await view.start(js);
const viewMs = performance.now() - started;
const viewCpuMs = cpuMs(cpuStart);
const viewHeapBytes = heapAfterGc() - heapBefore;
const spec = entry.spec(view);
const items = await spec.items(view);
const first = await pass(items, (item) => spec.decide(item));
const second = await pass(items, (item) => spec.decide(item));
const join = worker === 'assign' ? await joinPlan(view) : undefined;
const heapBytes = heapAfterGc() - heapBefore;
console.log(
  JSON.stringify({
    worker,
    viewMs,
    viewCpuMs,
    viewHeapBytes,
    rssBeforeViewBytes,
    heapBytes,
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    first: first.ms,
    second: second.ms,
    secondCpuMs: second.cpuMs,
    writes: writer.writeCount,
    events,
    publishes,
    join,
  }),
);
view.stop();
await nc.close();
