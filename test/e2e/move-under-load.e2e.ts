import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api, type KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Agent, fetch as undiciFetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATS_IDENTITIES, NATS_OPERATOR_IDENTITIES } from '../../src/access/nats-permissions.ts';
import { webhookServiceName } from '../../src/api/constants.ts';
import { poolMember, rendezvousWinner } from '../../src/core/assignment.ts';
import type { LocalCluster } from '../../src/local-cluster/cluster.ts';
import { PROJECT_ROOT } from '../../src/local-cluster/cluster.ts';
import { SWITCHYARD_NAMESPACE } from '../../src/local-cluster/install.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import {
  EXTERNAL_METRICS,
  metricReferences,
  monitoringQueries,
} from '../../src/metrics/monitoring-queries.ts';
import { type MonitorGate, startMonitorGate } from '../../src/nats-pod/monitor-gate.ts';
import { apiserverConversions, type Conversions, totalOf } from '../../src/scenario/apiserver-conversions.ts';
import { ConversionLoad, type LoadSummary } from '../../src/scenario/conversion-load.ts';
import {
  allowExtraArgKeys,
  configStatus,
  createInstance,
  createRenameConfig,
  createTwoVersionTarget,
  handoverReady,
  patchConfig,
  patchInstance,
  SERVED_FIELD,
  servingInstances,
} from '../../src/scenario/fleet.ts';
import type { HandoverWitness } from './support/handover-witness.ts';
import { useInstalledCluster } from './support/installed-cluster.ts';
import {
  NATS_JOB,
  type ScrapeTarget,
  startPrometheus,
  WEBHOOK_SERVERS_JOB,
  WORKERS_JOB,
} from './support/prometheus.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'move-e2e' });
const A = 'e2e-a';
const B = 'e2e-b';
const NC_A = 'e2e-nc-a';
const NC_B = 'e2e-nc-b';
const TARGET_GROUP = 'e2e.switchyard.dev';
const TARGET = `widgets.${TARGET_GROUP}`;
const NC_TARGET = `gadgets.${TARGET_GROUP}`;
const CONFIG = 'widgets';
const NC_CONFIG = 'gadgets';
const OBJECTS_NAMESPACE = 'e2e-load';
/** Load after each move before the next starts: the source's drain and the storage rebuild happen here. */
const SETTLE_MS = 5_000;
const MOVE_TIMEOUT_MS = 90_000;

const e2e = useInstalledCluster('move-e2e', { instances: [A, B, NC_A, NC_B], log });
let admin: KubeConfig;
let cluster: LocalCluster;
let witness: HandoverWitness;
let load: ConversionLoad;
let summary: LoadSummary | undefined;
const moves: { name: string; from: string; to: string; latencyMs: number }[] = [];
/** The local NATS runs outside the node agent: its monitoring gate runs here, as a NATS Pod's sidecar would. */
let natsGate: MonitorGate;

beforeAll(async () => {
  ({ admin, witness, cluster } = await e2e.start());
  natsGate = await startMonitorGate(
    {
      port: 0,
      host: '127.0.0.1',
      upstream: cluster.natsMonitorUrl,
      passwordFile: join(cluster.dir, 'no-monitor-password'),
    },
    log,
  );
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: OBJECTS_NAMESPACE } } });

  await createInstance(admin, A, { default: true, replicas: 2 });
  await createInstance(admin, B, { replicas: 2 });
  await createTwoVersionTarget(admin, TARGET, 'Widget');
  await createRenameConfig(admin, CONFIG, TARGET);
  await moveDone(CONFIG, TARGET, A, 'FirstApply');

  load = new ConversionLoad(loadTarget('widgets', 'Widget'), {
    run: 'main',
    workers: 4,
    objectsPerWorker: 3,
    pauseMs: 20,
  });
  await load.start();
  await sleep(SETTLE_MS);
}, 600_000);

describe('a target moves between instances under sustained load', () => {
  it('pinned to B: moves A → B through a verified handover', async () => {
    await move('pin A→B', CONFIG, TARGET, A, B, () =>
      patchConfig(admin, CONFIG, { webhookServerRef: { name: B } }),
    );
  });

  it('unpinned: moves back B → A, the default', async () => {
    await move('unpin B→A', CONFIG, TARGET, B, A, () =>
      patchConfig(admin, CONFIG, { webhookServerRef: null }),
    );
  });

  it('admission refuses sharding on B alone while A, the default, is outside the pool', async () => {
    const res = await patchInstance(admin, B, { sharding: { enabled: true, weight: 1 } });
    expect(res.status).toBe(422);
    expect(res.message).toContain('denied the request');
    expect(res.message).toContain(A);
    expect(await resolvedInstance(CONFIG)).toBe(A);
  });

  it('by the pool: sharding on A moves nothing; B joining with a winning weight moves A → B', async () => {
    expect((await patchInstance(admin, A, { sharding: { enabled: true, weight: 1 } })).status).toBe(200);
    await sleep(SETTLE_MS);
    expect(await resolvedInstance(CONFIG), 'A alone in the pool keeps the target').toBe(A);
    const weight = winningWeight(TARGET, A, B);
    await move('pool A→B', CONFIG, TARGET, A, B, async () => {
      const res = await patchInstance(admin, B, { sharding: { enabled: true, weight } });
      if (res.status !== 200) throw new Error(`B could not join the pool: ${res.status} ${res.message}`);
    });
  });

  it('no request failed and no value was wrong, and the apiserver converted every time', async () => {
    summary = await load.stop();
    const conversions = totalOf(await apiserverConversions(admin), [TARGET]);
    console.log(summaryLine('moves', summary, conversions));
    expect(summary.requests).toBeGreaterThan(500);
    expect(summary.watchEvents).toBeGreaterThan(100);
    expect(summary.failures).toEqual([]);
    expect(summary.wrongValues).toEqual([]);
    expect(conversions.failed).toBe(0);
    expect(conversions.succeeded).toBeGreaterThan(summary.requests);
  });

  it('each repoint came after every ready destination Pod had reported the target', () => {
    const repoints = witness.repoints.filter((r) => r.target === TARGET);
    expect(repoints.map((r) => `${r.from}→${r.to}`)).toEqual([
      `undefined→${A}`,
      `${A}→${B}`,
      `${B}→${A}`,
      `${A}→${B}`,
    ]);
    // The first repoint is a first apply (nothing served the target before): not a move.
    for (const r of repoints.slice(1)) {
      expect(r.readyPods.length, `${r.from}→${r.to}: the destination's ready Pods`).toBe(2);
      expect(
        r.readyPods.filter((p) => !p.reported),
        `${r.from}→${r.to}`,
      ).toEqual([]);
    }
  });
});

afterAll(async () => {
  await natsGate?.close();
});

describe('least privilege on the bus', () => {
  it('every component, and every webhook-server replica, is connected as its own NATS user', async () => {
    const res = await fetch(`${cluster.natsMonitorUrl}/connz?auth=true&limit=1024`);
    const { connections } = (await res.json()) as {
      connections: { name?: string; authorized_user?: string }[];
    };
    const components = connections.filter((c) => !c.name?.startsWith('move-e2e'));
    const users = new Set(components.map((c) => c.authorized_user));
    // bus-setup is a Job that is done by now; the operator's commands (dlq, replay) are not running.
    expect(users).toEqual(
      new Set(NATS_IDENTITIES.filter((id) => id !== 'bus-setup' && !NATS_OPERATOR_IDENTITIES.includes(id))),
    );
    for (const c of components) {
      const expected = c.name?.startsWith('webhook-server-') ? 'webhook-server' : c.name;
      expect(c.authorized_user, `connection ${c.name}`).toBe(expected);
    }
  });
});

describe('metrics', () => {
  it('every worker and webhook-server replica serves /metrics, and every series the alerts and the dashboard query is emitted', async () => {
    const targets = await scrapeTargets([A, B]);
    const endpoints = targets
      .filter((t) => t.job === WORKERS_JOB)
      .map((t) => ({ pod: t.labels.pod, port: t.port }));
    // Every worker Deployment: the components with a NATS user of their own but the setup Job, the
    // instances' replicas and the operator's commands.
    const components = NATS_IDENTITIES.filter(
      (id) => id !== 'bus-setup' && id !== 'webhook-server' && !NATS_OPERATOR_IDENTITIES.includes(id),
    );
    for (const component of components)
      expect(
        endpoints.filter((e) => e.pod.startsWith(`switchyard-${component}-`)),
        `${component} Pods behind the metrics Service`,
      ).toHaveLength(2);
    const emitted = new Set<string>();
    for (const { pod, port } of endpoints) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`);
      expect(res.status, `${pod} /metrics`).toBe(200);
      const text = await res.text();
      expect(text, pod).toContain('process_cpu_seconds_total');
      for (const line of text.split('\n'))
        if (line !== '' && !line.startsWith('#')) emitted.add(line.split(/[{ ]/, 1)[0] as string);
    }
    const replicas = targets
      .filter((t) => t.job === WEBHOOK_SERVERS_JOB)
      .map((t) => ({ pod: t.labels.pod, port: t.port }));
    expect(replicas, 'the replicas of both instances').toHaveLength(4);
    const unverified = new Agent({ connect: { rejectUnauthorized: false } });
    for (const { pod, port } of replicas) {
      const res = await undiciFetch(`https://127.0.0.1:${port}/metrics`, { dispatcher: unverified });
      expect(res.status, `${pod} /metrics`).toBe(200);
      for (const line of (await res.text()).split('\n'))
        if (line !== '' && !line.startsWith('#')) emitted.add(line.split(/[{ ]/, 1)[0] as string);
    }
    await unverified.close();
    const gate = targets.find((t) => t.job === NATS_JOB);
    const gateRes = await fetch(`http://127.0.0.1:${gate?.port}/metrics`);
    expect(gateRes.status, 'the NATS monitoring gate /metrics').toBe(200);
    for (const line of (await gateRes.text()).split('\n'))
      if (line !== '' && !line.startsWith('#')) emitted.add(line.split(/[{ ]/, 1)[0] as string);
    // Prometheus's own `up` and the apiserver's metrics come from elsewhere.
    for (const { name } of EXTERNAL_METRICS) emitted.add(name);
    const missing = monitoringQueries(PROJECT_ROOT).flatMap(({ where, expr }) =>
      metricReferences(expr)
        .filter((r) => !emitted.has(r.series))
        .map((r) => `${where}: ${r.series}`),
    );
    expect(missing).toEqual([]);
  });
});

describe('negative control: the same move with replicas that drop a plan at once', () => {
  it('sees failed conversions', async () => {
    const unsafe = ['--webhook.unsafeDropPlanOnReassign=true'];
    await allowExtraArgKeys(admin, SWITCHYARD_NAMESPACE, ['webhook.unsafeDropPlanOnReassign']);
    await createInstance(admin, NC_A, { replicas: 1, extraArgs: unsafe });
    await createTwoVersionTarget(admin, NC_TARGET, 'Gadget');
    await createRenameConfig(admin, NC_CONFIG, NC_TARGET, NC_A);
    await moveDone(NC_CONFIG, NC_TARGET, NC_A, 'FirstApply');
    const control = new ConversionLoad(loadTarget('gadgets', 'Gadget'), {
      run: 'control',
      workers: 4,
      objectsPerWorker: 3,
      pauseMs: 20,
    });
    await control.start();
    await sleep(SETTLE_MS);
    const before = totalOf(await apiserverConversions(admin), [NC_TARGET]);
    // B is created with the move, so the gate waits seconds for its replica to start: a window
    // in which A has already dropped the plan that the target still names A for. With replicas
    // already running the repoint follows in a few hundred milliseconds, and the clients may
    // send nothing in that window; the apiserver's own counter alone would then see it.
    await createInstance(admin, NC_B, { replicas: 1, extraArgs: unsafe });
    await patchConfig(admin, NC_CONFIG, { webhookServerRef: { name: NC_B } });
    await moveDone(NC_CONFIG, NC_TARGET, NC_B);
    await sleep(SETTLE_MS);
    const result = await control.stop();
    const after = totalOf(await apiserverConversions(admin), [NC_TARGET]);
    const failedConversions = after.failed - before.failed;
    console.log(summaryLine('negative control', result, { ...after, failed: failedConversions }));
    expect(failedConversions, 'the apiserver counted failed conversions').toBeGreaterThan(0);
    expect(result.failures.length + result.wrongValues.length, 'the clients saw them').toBeGreaterThan(0);
  });
});

describe('a real Prometheus scraping the local stack', () => {
  it('scrapes every worker and replica, evaluates every alert rule without an error, and every dashboard query returns series', async () => {
    const targets = await scrapeTargets([A, B, NC_A, NC_B]);
    const prometheus = await startPrometheus({ dir: join(cluster.dir, 'prometheus'), targets, log });
    try {
      await waitFor(
        `all ${targets.length} targets scraped`,
        async () => {
          const t = await prometheus.targetsUp();
          return t.total === targets.length && t.up === t.total ? t : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      // A rate needs two samples in its window: the panels get a few scrapes before they are read.
      const panels = monitoringQueries(PROJECT_ROOT).filter((q) => q.where.startsWith('panel'));
      let empty: string[] = [];
      for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(1_000)) {
        empty = [];
        for (const { where, expr } of panels)
          if ((await prometheus.query(withoutHealthyFilter(expr))).length === 0)
            empty.push(`${where}: ${expr}`);
        if (empty.length === 0) break;
      }
      expect(empty).toEqual([]);
      const rules = await waitFor(
        'every alert rule evaluated',
        async () => {
          const all = await prometheus.rules();
          return all.length > 0 && all.every((r) => r.health !== 'unknown') ? all : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 500 },
      );
      expect(rules.map((r) => r.name).sort()).toEqual(
        monitoringQueries(PROJECT_ROOT)
          .filter((q) => q.where.startsWith('alert'))
          .map((q) => q.where.replace(/^alert /, ''))
          .sort(),
      );
      expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
      console.log(
        `[move-e2e] Prometheus: ${targets.length} targets up, ${panels.length} dashboard queries with series, ${rules.length} alert rules evaluated`,
      );
    } finally {
      await prometheus.stop();
    }
  }, 180_000);
});

/**
 * A panel that shows only what is wrong (`… > 0`) is empty on a healthy stack; what it filters
 * must still be there, so the query is read without that filter.
 */
function withoutHealthyFilter(expr: string): string {
  return expr.replace(/\s*>\s*0\s*$/, '');
}

/**
 * What deploy/monitoring's ServiceMonitor and PodMonitors scrape: each ready endpoint of the
 * workers' metrics Service, each webhook-server replica of `instances` on its HTTPS port
 * (one per Pod on the local node agent, on that Pod's own port), and the NATS server's
 * monitoring gate.
 */
async function scrapeTargets(instances: readonly string[]): Promise<ScrapeTarget[]> {
  const discovery = admin.makeApiClient(DiscoveryV1Api);
  const workers = await discovery.listNamespacedEndpointSlice({
    namespace: SWITCHYARD_NAMESPACE,
    labelSelector: 'kubernetes.io/service-name=switchyard-worker-metrics',
  });
  const servers = await discovery.listNamespacedEndpointSlice({ namespace: SWITCHYARD_NAMESPACE });
  const byService = new Map(instances.map((i) => [webhookServiceName(i), i]));
  return [
    ...workers.items.flatMap((slice) =>
      (slice.endpoints ?? []).map((e) => ({
        job: WORKERS_JOB,
        port: slice.ports?.[0]?.port ?? 0,
        labels: { namespace: SWITCHYARD_NAMESPACE, pod: e.targetRef?.name ?? '' },
      })),
    ),
    ...servers.items.flatMap((slice) => {
      const instance = byService.get(slice.metadata?.labels?.['kubernetes.io/service-name'] ?? '');
      if (instance === undefined) return [];
      return (slice.endpoints ?? []).map((e) => ({
        job: WEBHOOK_SERVERS_JOB,
        port: slice.ports?.[0]?.port ?? 0,
        labels: { namespace: SWITCHYARD_NAMESPACE, pod: e.targetRef?.name ?? '', webhook_server: instance },
      }));
    }),
    { job: NATS_JOB, port: natsGate.port, labels: { namespace: SWITCHYARD_NAMESPACE, pod: 'nats-0' } },
  ] as ScrapeTarget[];
}

function loadTarget(plural: string, kind: string) {
  return {
    kc: admin,
    group: TARGET_GROUP,
    version: 'v2',
    plural,
    kind,
    namespace: OBJECTS_NAMESPACE,
    field: SERVED_FIELD,
  };
}

/** Runs `change` and waits for the move it causes; records its latency, change to repoint. */
async function move(
  name: string,
  config: string,
  target: string,
  from: string,
  to: string,
  change: () => Promise<unknown>,
): Promise<void> {
  expect(await servingInstance(target)).toBe(from);
  const started = Date.now();
  await change();
  await moveDone(config, target, to);
  const repoint = witness.repoints.find((r) => r.target === target && r.to === to && r.atMs >= started);
  moves.push({ name, from, to, latencyMs: (repoint?.atMs ?? Date.now()) - started });
  const progress = load.progress();
  expect(progress.failures, `failures so far, after ${name}`).toBe(0);
  expect(progress.wrongValues, `wrong values so far, after ${name}`).toBe(0);
  await sleep(SETTLE_MS);
}

/**
 * The target names `to`'s Service and the config's HandoverReady says why: verified for a move,
 * FirstApply for a target that was served by no instance before.
 */
async function moveDone(
  config: string,
  target: string,
  to: string,
  reason: 'HandoverReady' | 'FirstApply' = 'HandoverReady',
): Promise<void> {
  const status = await waitFor(
    `${target} served by ${to}`,
    async () => {
      const s = await configStatus(admin, config);
      const ready = handoverReady(s);
      if (s?.handoverDestination !== to || ready?.status !== 'True') return undefined;
      return (await servingInstance(target)) === to ? s : undefined;
    },
    { timeoutMs: MOVE_TIMEOUT_MS, intervalMs: 250 },
  );
  expect(handoverReady(status)).toMatchObject({ status: 'True', reason });
}

async function resolvedInstance(config: string): Promise<string | undefined> {
  return (await configStatus(admin, config))?.assignedWebhookServer;
}

/** A weight for `b` that makes it win `target` over `a` (weight 1) in the pool. */
function winningWeight(target: string, a: string, b: string): number {
  for (let weight = 1; weight <= 1000; weight++) {
    if (rendezvousWinner([poolMember(a, 1), poolMember(b, weight)], target)?.name === b) return weight;
  }
  throw new Error(`no weight up to 1000 makes ${b} win ${target}`);
}

async function servingInstance(target: string): Promise<string | undefined> {
  return (await servingInstances(admin, [A, B, NC_A, NC_B])).get(target);
}

function summaryLine(what: string, s: LoadSummary, conversions: Conversions): string {
  const ops = Object.entries(s.byOp)
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');
  const latencies =
    what === 'moves' ? moves.map((m) => `${m.name} ${(m.latencyMs / 1000).toFixed(1)} s`).join(', ') : '';
  return (
    `[move-e2e] ${what}: ${s.requests} requests in ${(s.durationMs / 1000).toFixed(0)} s (${ops}), ` +
    `failures ${s.failures.length}, wrong values ${s.wrongValues.length}, ` +
    `429s retried ${s.throttledRetries}, watch resumes ${s.watchResumes}, relists after 410 ${s.relists}; ` +
    `apiserver conversions ${conversions.succeeded} ok, ${conversions.failed} failed` +
    (latencies ? `; change → repoint: ${latencies}` : '') +
    (s.failures.length > 0 ? `; failures by kind: ${JSON.stringify(failureKinds(s))}` : '')
  );
}

/** Failures grouped by operation, status and message (object names left out). */
function failureKinds(s: LoadSummary): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const f of s.failures) {
    const key = `${f.op} ${f.status ?? '-'} ${f.message.replace(/[a-z0-9-]+-w\d+-o\d+/g, '<object>').slice(0, 160)}`;
    kinds[key] = (kinds[key] ?? 0) + 1;
  }
  return kinds;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
