import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GROUP, VERSION } from '../src/api/constants.ts';
import type { WebhookServerStatus } from '../src/api/webhook-server.ts';
import { decodeMessage, workItemSchema } from '../src/bus/messages.ts';
import { type HandlerRuntime, startHandlerRuntime } from '../src/bus/runtime/index.ts';
import { ObjectView } from '../src/bus/view.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { SERVED_TARGETS_KNOWN } from '../src/core/instance-aggregate.ts';
import { LEASE_AGGREGATE_WORK } from '../src/handlers/lease-aggregate/wakes.ts';
import {
  LEASE_AGGREGATE,
  LEASE_AGGREGATE_VIEW_KINDS,
  leaseAggregateHandler,
} from '../src/handlers/lease-aggregate.ts';
import { createKubeClients, type KubeClients } from '../src/kube/clients.ts';
import { fieldManagerFor, KubeWriter } from '../src/kube/writer.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { systemClock } from '../src/runtime/clock.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { createReadyEndpointSlice } from './support/data-plane.ts';
import { componentIdentity, componentUser } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { createWebhookServer, deleteWebhookServer } from './support/records.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';
import { startRecordingAndRouting } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'lease-aggregate-itest' });
const PARTITIONS = 4;
const suffix = Math.random().toString(36).slice(2, 7);

let bus: OwnBus;
let namespace = '';
let clients: KubeClients;
let view: ObjectView;
let runtime: HandlerRuntime;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const stoppers: Array<() => unknown> = [];
const publishers: ServedLeasePublisher[] = [];
/** Every handler run: which instance, and whether it was a fired re-check. */
const runs: Array<{ key: string; recheck: boolean; at: number }> = [];
/** Work items the stand-in router published, per instance. */
const routed = new Map<string, number>();

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'lease-agg');
  view = new ObjectView([...LEASE_AGGREGATE_VIEW_KINDS], log, { project: HANDLER_VIEW_PROJECTIONS });
  await view.start(bus.js);
  stoppers.push(() => view.stop());
  clients = createKubeClients({
    kubeConfig: await componentIdentity(cluster.info, admin, LEASE_AGGREGATE),
    component: 'lease-aggregate-itest',
    kubernetes: defaultConfig().kubernetes,
  });
  const handle = leaseAggregateHandler({
    view,
    writer: new KubeWriter(clients.writes, fieldManagerFor(LEASE_AGGREGATE)),
    js: bus.js,
    clock: systemClock,
    handoverPartitions: PARTITIONS,
    defaultNamespace: 'switchyard-system',
  });
  runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: LEASE_AGGREGATE,
    log,
    consumers: LEASE_AGGREGATE_WORK.consumers(PARTITIONS),
    schema: workItemSchema,
    deadLetterSubject: `dlq.${LEASE_AGGREGATE}`,
    handle: (item, ctx) => {
      runs.push({ key: item.key, recheck: ctx.recheckDueAtMs !== undefined, at: Date.now() });
      return handle(item, ctx);
    },
  });
  await startCountedRouter();
  audit = await auditLogFromNow(cluster.info.auditLog);
});

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await runtime?.stop();
  for (const stop of stoppers) await stop();
  await clients?.close();
  await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  await bus?.stop();
});

const HANDLER_USER = componentUser(LEASE_AGGREGATE);

/**
 * The watchers and the real router on the test's bus (records → work), and a count of the
 * lease-aggregate work it publishes per instance, seen on a plain subscription.
 */
async function startCountedRouter(): Promise<void> {
  bus.nc.subscribe('work.lease-aggregate.>', {
    callback: (_err, m) => {
      const decoded = decodeMessage(workItemSchema, m.data);
      if (decoded.ok) routed.set(decoded.value.key, (routed.get(decoded.value.key) ?? 0) + 1);
    },
  });
  stoppers.push(await startRecordingAndRouting(bus, { kubeConfig: admin, log, partitions: PARTITIONS }));
}

/** The instance's routed work once nothing more was routed for it for a second. */
async function routedOnceQuiet(instance: string): Promise<number> {
  let last = routed.get(instance) ?? 0;
  let quietSince = Date.now();
  for (;;) {
    await sleep(200);
    const now = routed.get(instance) ?? 0;
    if (now !== last) {
      last = now;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= 1_000) return now;
  }
}

async function createInstance(name: string): Promise<void> {
  await createWebhookServer(admin, name, { namespace });
  stoppers.push(() => deleteWebhookServer(admin, name));
}

/** What the EndpointSlice controller would write for the instance's Service: these Pods (`<instance>-<pod>`) ready. */
async function readyPods(instance: string, pods: string[]): Promise<void> {
  await createReadyEndpointSlice(
    admin,
    namespace,
    instance,
    pods.map((pod) => `${instance}-${pod}`),
  );
}

async function replica(
  instance: string,
  pod: string,
  served: string[],
  leaseDurationSeconds: number,
): Promise<ServedLeasePublisher> {
  const p = await ServedLeasePublisher.start({
    kubeConfig: admin,
    namespace,
    instance,
    pod: `${instance}-${pod}`,
    served,
    leaseDurationSeconds,
    renewEveryMs: 1_000,
  });
  publishers.push(p);
  return p;
}

async function statusOf(instance: string): Promise<WebhookServerStatus | undefined> {
  const o = (await admin.makeApiClient(CustomObjectsApi).getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    name: instance,
  })) as { status?: WebhookServerStatus };
  return o.status;
}

const conditionOf = (s: WebhookServerStatus | undefined) =>
  s?.conditions?.find((c) => c.type === SERVED_TARGETS_KNOWN);

async function awaitStatus(
  instance: string,
  what: string,
  ok: (s: WebhookServerStatus | undefined) => boolean,
) {
  return waitFor(
    `${instance}: ${what}`,
    async () => {
      const s = await statusOf(instance);
      return ok(s) ? (s ?? {}) : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

const statusWrites = (instance: string) => (events: AuditEvent[]) =>
  events.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.requestURI.includes(`/conversionwebhookservers/${instance}/status`) &&
      e.requestURI.includes(`fieldManager=${fieldManagerFor(LEASE_AGGREGATE)}`),
  );

const runsOf = (instance: string) => runs.filter((r) => r.key === instance);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('lease-aggregate', () => {
  it('writes the intersection of two live replicas, and heartbeats alone cost no write and no run', async () => {
    const instance = `agg-a-${suffix}`;
    await createInstance(instance);
    await readyPods(instance, ['pod-1', 'pod-2']);
    const p1 = await replica(instance, 'pod-1', ['a.x.io', 'b.x.io', 'c.x.io'], 60);
    const p2 = await replica(instance, 'pod-2', ['b.x.io', 'c.x.io', 'd.x.io'], 60);

    const status = await awaitStatus(instance, 'both replicas aggregated', (s) => s?.reportingReplicas === 2);
    expect(status.servedTargets).toEqual(['b.x.io', 'c.x.io']);
    expect(conditionOf(status)?.reason).toBe('AllReported');

    // Let the creations settle (every record routed and handled), then only heartbeats.
    await sleep(3_000);
    const writesBefore = statusWrites(instance)(await audit.all()).length;
    const runsBefore = runsOf(instance).length;
    const routedBefore = routed.get(instance) ?? 0;
    const renewalsBefore = p1.renewals.length + p2.renewals.length;
    await sleep(8_000);
    const renewals = p1.renewals.length + p2.renewals.length - renewalsBefore;
    const writes = statusWrites(instance)(await audit.all()).length - writesBefore;
    log.warn({ renewals, writes, writesBefore, runsBefore, routedBefore }, 'heartbeat window');
    expect(renewals, 'the checker must see heartbeats to prove anything').toBeGreaterThanOrEqual(10);
    expect(writesBefore, 'the first aggregation must have been seen in the audit log').toBeGreaterThanOrEqual(
      1,
    );
    expect(routed.get(instance) ?? 0, 'a heartbeat reached the record stream and would wake the router').toBe(
      routedBefore,
    );
    expect(runsOf(instance).length, 'a heartbeat ran the handler').toBe(runsBefore);
    expect(writes, 'a heartbeat rewrote the status').toBe(0);
  });

  it('drops a Lease that stops renewing at its expiry, with no other event', async () => {
    const instance = `agg-c-${suffix}`;
    const durationSeconds = 5;
    await createInstance(instance);
    await readyPods(instance, ['pod-1', 'pod-2']);
    await replica(instance, 'pod-1', ['a.x.io', 'b.x.io'], durationSeconds);
    const wedged = await replica(instance, 'pod-2', ['a.x.io'], durationSeconds);
    await awaitStatus(instance, 'both replicas aggregated', (s) => s?.reportingReplicas === 2);

    await wedged.stop();
    const lastRenewal = Date.parse(wedged.renewals.at(-1) ?? '');
    // The records of the writes before the stop may still be on their way through the router.
    const routedAtStop = await routedOnceQuiet(instance);
    const status = await awaitStatus(
      instance,
      'the wedged replica dropped out',
      (s) => s?.reportingReplicas === 1,
    );
    const droppedAt = Date.now();
    const expiry = lastRenewal + durationSeconds * 1000;
    log.warn({ lateMs: droppedAt - expiry }, 'stale Lease dropped');
    expect(droppedAt, 'dropped before it expired').toBeGreaterThanOrEqual(expiry);
    expect(droppedAt - expiry, 'dropped well after its expiry').toBeLessThan(5_000);
    expect(status.servedTargets).toEqual(['a.x.io', 'b.x.io']);
    expect(conditionOf(status)).toMatchObject({ reason: 'AwaitingReports', status: 'False' });
    expect(conditionOf(status)?.message).toContain('pod-2');
    // Nothing but the record of its own status write (which wakes it once more: status-echo.ts)
    // may have been routed since the stop: the drop came from the re-check alone.
    await sleep(1_000);
    const routedAfterDrop = routed.get(instance) ?? 0;
    expect(routedAfterDrop, 'no record of the instance but its own write was routed after the stop').toBe(
      routedAtStop + 1,
    );
    expect(runsOf(instance).some((r) => r.recheck && r.at >= expiry)).toBe(true);

    // It recovers: its first renewal after the gap is a record, not a heartbeat, so the router wakes.
    wedged.resumeRenewing();
    const back = await awaitStatus(instance, 'the replica counted again', (s) => s?.reportingReplicas === 2);
    expect(back.servedTargets).toEqual(['a.x.io']);
    expect(
      routed.get(instance) ?? 0,
      'the revival must be a record the router sees, not a heartbeat',
    ).toBeGreaterThan(routedAfterDrop);
  });

  it('shows a truncated or undecodable report with its reason and never publishes a list meanwhile', async () => {
    const instance = `agg-d-${suffix}`;
    await createInstance(instance);
    await readyPods(instance, ['pod-1', 'pod-2']);
    await replica(instance, 'pod-1', ['a.x.io', 'b.x.io'], 60);
    const p2 = await replica(instance, 'pod-2', ['a.x.io', 'b.x.io'], 60);
    await awaitStatus(instance, 'both replicas aggregated', (s) => s?.servedTargets?.length === 2);

    await p2.truncate(['a.x.io', 'b.x.io']);
    const truncated = await awaitStatus(
      instance,
      'truncated',
      (s) => conditionOf(s)?.reason === 'ReportTruncated',
    );
    expect(truncated.servedTargets, 'a truncated report must not leave a list behind').toBeUndefined();
    expect(truncated.servedTargetCount).toBeUndefined();
    expect(conditionOf(truncated)).toMatchObject({ status: 'False' });
    expect(conditionOf(truncated)?.message).toContain('pod-2 (truncated');

    await p2.garbage();
    const garbage = await awaitStatus(
      instance,
      'undecodable',
      (s) => conditionOf(s)?.reason === 'ReportUndecodable',
    );
    expect(garbage.servedTargets).toBeUndefined();
    expect(conditionOf(garbage)?.message).toContain('pod-2 (undecodable');

    await p2.publish(['a.x.io']);
    const healed = await awaitStatus(
      instance,
      'readable again',
      (s) => conditionOf(s)?.reason === 'AllReported',
    );
    expect(healed.servedTargets).toEqual(['a.x.io']);
  });

  it('runs with exactly its manifest: no request denied, and nothing beyond status writes', async () => {
    const denied = (await audit.all()).filter(
      (e) =>
        e.user.username === HANDLER_USER && e.stage === 'ResponseComplete' && e.responseStatus?.code === 403,
    );
    expect(
      denied.map((e) => `${e.verb} ${e.requestURI}`),
      'the manifest lacks a permission the handler uses',
    ).toEqual([]);
    const writes = (await audit.all()).filter(
      (e) => e.user.username === HANDLER_USER && e.stage === 'ResponseComplete',
    );
    expect(writes.length, 'the checker must see the handler identity at work').toBeGreaterThan(0);

    const instance = `agg-a-${suffix}`;
    const kc = await componentIdentity(cluster.info, admin, LEASE_AGGREGATE);
    const custom = kc.makeApiClient(CustomObjectsApi);
    const cws = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers', name: instance };
    await expect(
      custom.getClusterCustomObject(cws),
      'it reads from the bus, never the apiserver',
    ).rejects.toMatchObject({
      code: 403,
    });
    await expect(
      custom.patchClusterCustomObject(
        { ...cws, body: { spec: { replicas: 5 } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
      'it must never write an instance spec',
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      kc.makeApiClient(CoordinationV1Api).patchNamespacedLease(
        {
          name: `switchyard-served-${instance}-pod-1`,
          namespace,
          body: { metadata: { annotations: { x: 'y' } } },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      ),
      'it must never speak for a replica',
    ).rejects.toMatchObject({ code: 403 });
  });
});
