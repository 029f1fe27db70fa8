// Issue 11's acceptance for the gate's exceptions, every handler a real process: what
// test/handover.itest.ts and test/lease-aggregate.itest.ts check with the handler function run
// in-process, checked here with `switchyard watch` (admin) recording, `router` turning records
// into work, and `assign`, `lease-aggregate`, `handover` (with a 4 s grace) and `config-status`
// acting, each under the ServiceAccount token of its deploy/rbac manifest, as in
// test/pool-move.itest.ts. The test plays the data plane: serving Secrets (and the Role letting
// the handover read them), EndpointSlices naming ready Pods, served-set Leases.
//
// Configs are pinned (spec.webhookServerRef), so each move's destination is explicit:
//  (a) a destination with a ready Pod and no Lease at all: the move waits HandoverAwaitingReports,
//      then proceeds HandoverUnverified once the grace has run, woken by the handover's durable
//      re-check;
//  (b) a destination one of whose ready Pods publishes a truncated report, then an undecodable
//      one: the move is blocked (HandoverUnknown, the report's state named in the message) for
//      as long as the report is unreadable, and follows the first readable one (HandoverReady);
//  (c) a Lease that stops renewing drops out of its instance's status (reportingReplicas,
//      ServedTargetsKnown) at renewTime + leaseDurationSeconds, woken by nothing but
//      lease-aggregate's durable re-check: no work item for the instance is routed meanwhile.
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION, webhookServiceName } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import type { WebhookServerStatus } from '../src/api/webhook-server.ts';
import { decodeMessage, workItemSchema } from '../src/bus/messages.ts';
import { RECHECK_HEADERS } from '../src/bus/runtime/index.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { SERVED_TARGETS_KNOWN } from '../src/core/instance-aggregate.ts';
import { workIdPrefix } from '../src/handlers/enqueue-work.ts';
import { LEASE_AGGREGATE_WORK } from '../src/handlers/lease-aggregate/wakes.ts';
import { isConflict, isNotFound } from '../src/kube/errors.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd, gizmoCrd } from './support/crds.ts';
import { createReadyEndpointSlice, createServingSecret } from './support/data-plane.ts';
import {
  componentIdentityFile,
  componentUser,
  grantTrustBundleRead,
  RBAC_NAMESPACE,
} from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const logger = pino({ level: 'warn' });
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
const PREFIX = `gp-${run}-`;
/** The handover's unreportedGraceSeconds: short, so (a) proceeds within the test. */
const GRACE_SECONDS = 4;
/** The wedged Lease's duration in (c). */
const LEASE_SECONDS = 4;
/** A: the source of every move. B: (b)'s destination. C: (a)'s silent destination. E: (c)'s instance. */
const [A, B, C, E] = ['a', 'b', 'c', 'e'].map((n) => `${PREFIX}${n}`) as [string, string, string, string];
/** (b)'s target and config; (a)'s. */
const T_UNREADABLE = `gizmos.u${run}.gate.switchyard.dev`;
const T_SILENT = `gizmos.s${run}.gate.switchyard.dev`;
const CONFIG_UNREADABLE = `${PREFIX}unreadable`;
const CONFIG_SILENT = `${PREFIX}silent`;
const COMPONENTS = ['assign', 'lease-aggregate', 'handover', 'config-status'];
const WORKERS = ['router', ...COMPONENTS];

let namespace = '';
let bus: OwnBus;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const processes = new Map<string, ManagedProcess>();
const publishers: ServedLeasePublisher[] = [];
/** What this file created, deleted afterwards in reverse order: later files share the cluster. */
const cleanups: Array<() => Promise<unknown>> = [];

/** Work items published to lease-aggregate (by the router: records only), and re-checks it scheduled. */
const leaseAggregateWork: Array<{ key: string; atMs: number }> = [];
const leaseAggregateRechecks: Array<{ key: string; atMs: number; dueMs: number }> = [];

function start(name: string, args: string[], kubeconfig?: string): void {
  processes.set(
    name,
    switchyardProcess({
      name,
      args,
      natsUrl: bus.server.url,
      natsCredentialsDir: bus.natsCredentialsDir,
      kubeconfig,
      logFile: join(cluster.info.dir, 'logs', `gate-processes-${name}.log`),
      log: logger,
    }),
  );
}

/**
 * Plain subscriptions on the bus: the router's lease-aggregate work items, and the durable
 * re-checks lease-aggregate schedules (a schedule is published to `recheck.<…>`; its fired copy
 * is stored by the server, not published, so it is not seen here).
 */
function watchLeaseAggregateTraffic(): void {
  const sub = bus.nc.subscribe('work.lease-aggregate.>', {
    callback: (_err, m) => {
      const decoded = decodeMessage(workItemSchema, m.data);
      const id = m.headers?.get('Nats-Msg-Id') ?? '';
      // The look its own status write wakes (status-echo.ts) follows a write; it causes none.
      const echo = id.startsWith(`${workIdPrefix(LEASE_AGGREGATE_WORK, 'echo')}:`);
      // Nor is a resync round routed: every key again on the half hour of the wall clock
      // (core/resync.ts), which a run crossing it met once.
      const resync = id.startsWith(`resync:${LEASE_AGGREGATE_WORK.concern}:`);
      if (decoded.ok && !echo && !resync)
        leaseAggregateWork.push({ key: decoded.value.key, atMs: Date.now() });
    },
  });
  const schedules = bus.nc.subscribe('recheck.lease-aggregate.>', {
    callback: (_err, m) => {
      const decoded = decodeMessage(workItemSchema, m.data);
      const due = Date.parse(m.headers?.get(RECHECK_HEADERS.due) ?? '');
      if (decoded.ok && !Number.isNaN(due))
        leaseAggregateRechecks.push({ key: decoded.value.key, atMs: Date.now(), dueMs: due });
    },
  });
  cleanups.push(async () => {
    sub.unsubscribe();
    schedules.unsubscribe();
  });
}

async function createCustom(plural: string, body: { metadata: { name: string } }): Promise<void> {
  await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });
  cleanups.push(() =>
    custom
      .deleteClusterCustomObject({ group: GROUP, version: VERSION, plural, name: body.metadata.name })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      }),
  );
}

async function createTarget(name: string): Promise<void> {
  await crdApi.createCustomResourceDefinition({ body: gizmoCrd(name) });
  cleanups.push(() =>
    crdApi.deleteCustomResourceDefinition({ name }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    }),
  );
}

async function createConfig(name: string, target: string, pin: string): Promise<void> {
  await createCustom('crdconversionconfigs', {
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name },
    spec: {
      targetCRD: { name: target },
      hubVersion: 'v2',
      spokes: [
        {
          version: 'v1',
          rules: [
            { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' } },
          ],
        },
      ],
      webhookServerRef: { name: pin },
    },
  } as { metadata: { name: string } });
}

/** A hand-edited webhookServerRef: the move assign announces. */
async function pinConfig(name: string, pin: string): Promise<void> {
  await custom.patchClusterCustomObject(
    {
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      name,
      body: { spec: { webhookServerRef: { name: pin } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/**
 * An instance in the test's namespace, with what the instances handler and the data plane would
 * write: its serving Secret, the Role letting the handover read it, and the EndpointSlice of
 * these ready Pods.
 */
async function createInstance(name: string, readyPods: string[]): Promise<void> {
  await createServingSecret(admin, namespace, name);
  await createReadyEndpointSlice(admin, namespace, name, readyPods);
  await createCustom('conversionwebhookservers', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec: { namespace },
  } as { metadata: { name: string } });
  await grantTrustBundleRead(admin, name);
}

async function replica(
  instance: string,
  pod: string,
  served: string[],
  leaseDurationSeconds = 60,
  renewEveryMs = 5_000,
): Promise<ServedLeasePublisher> {
  const p = await ServedLeasePublisher.start({
    kubeConfig: admin,
    namespace,
    instance,
    pod,
    served,
    leaseDurationSeconds,
    renewEveryMs,
  });
  publishers.push(p);
  return p;
}

async function serviceOf(target: string): Promise<string | undefined> {
  const crd = await crdApi.readCustomResourceDefinition({ name: target });
  return crd.spec.conversion?.webhook?.clientConfig?.service?.name;
}

async function configStatus(name: string): Promise<ConfigStatus | undefined> {
  const o = (await custom.getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
    name,
  })) as { status?: ConfigStatus };
  return o.status;
}

const handoverReady = (s: ConfigStatus | undefined) => s?.conditions?.find((c) => c.type === 'HandoverReady');

async function instanceStatus(name: string): Promise<WebhookServerStatus | undefined> {
  const o = (await custom.getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    name,
  })) as { status?: WebhookServerStatus };
  return o.status;
}

const servedTargetsKnown = (s: WebhookServerStatus | undefined) =>
  s?.conditions?.find((c) => c.type === SERVED_TARGETS_KNOWN);

/** Polls the config's HandoverReady until `ok`; resolves to the condition and when it was seen. */
async function awaitHandover(
  config: string,
  what: string,
  ok: (c: ReturnType<typeof handoverReady>) => boolean,
  timeoutMs = 30_000,
) {
  return waitFor(
    `${config}: ${what}`,
    async () => {
      const c = handoverReady(await configStatus(config));
      return c && ok(c) ? { condition: c, atMs: Date.now() } : undefined;
    },
    { timeoutMs, intervalMs: 100 },
  );
}

async function awaitInstance(instance: string, what: string, ok: (s: WebhookServerStatus) => boolean) {
  return waitFor(
    `${instance}: ${what}`,
    async () => {
      const s = await instanceStatus(instance);
      return s && ok(s) ? { status: s, atMs: Date.now() } : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

async function awaitService(target: string, instance: string, timeoutMs = 30_000): Promise<number> {
  await waitFor(
    `${target} names ${instance}`,
    async () => ((await serviceOf(target)) === webhookServiceName(instance) ? true : undefined),
    { timeoutMs, intervalMs: 100 },
  );
  return Date.now();
}

async function listOurInstances(): Promise<string[]> {
  const r = (await custom.listClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
  })) as { items: { metadata: { name: string } }[] };
  return r.items.map((i) => i.metadata.name).filter((n) => n.startsWith(PREFIX));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  namespace = await createNamespace(admin, 'gate-processes');
  cleanups.push(() => core.deleteNamespace({ name: namespace }));

  const kubeconfigs: Record<string, string> = {};
  for (const c of COMPONENTS)
    kubeconfigs[c] = await componentIdentityFile(
      cluster.info,
      admin,
      c,
      join(cluster.info.dir, `gate-processes-${c}-${run}.kubeconfig`),
      cleanups,
    );
  // A NATS server of the file's own: its durable consumers and re-check schedules stay here.
  bus = await startOwnBus();
  watchLeaseAggregateTraffic();

  start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
  start('router', ['router']);
  start('assign', ['assign'], kubeconfigs.assign);
  start('lease-aggregate', ['lease-aggregate'], kubeconfigs['lease-aggregate']);
  start('handover', ['handover', `--handover.unreportedGraceSeconds=${GRACE_SECONDS}`], kubeconfigs.handover);
  start('config-status', ['config-status'], kubeconfigs['config-status']);
  await waitFor(
    'every worker pulling',
    async () => {
      const consumers: { name: string; num_waiting: number }[] = [];
      for await (const c of bus.jsm.consumers.list(STREAMS.work)) consumers.push(c);
      for await (const c of bus.jsm.consumers.list(STREAMS.records)) consumers.push(c);
      const pulling = (p: string) => consumers.some((c) => c.name.startsWith(p) && c.num_waiting >= 1);
      return WORKERS.every(pulling) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );

  // The source of every move: A, one ready Pod reporting both targets; each target first applied there.
  await createInstance(A, [`${A}-1`]);
  await replica(A, `${A}-1`, [T_UNREADABLE, T_SILENT]);
  for (const [config, target] of [
    [CONFIG_UNREADABLE, T_UNREADABLE],
    [CONFIG_SILENT, T_SILENT],
  ] as const) {
    await createTarget(target);
    await createConfig(config, target, A);
  }
  for (const [config, target] of [
    [CONFIG_UNREADABLE, T_UNREADABLE],
    [CONFIG_SILENT, T_SILENT],
  ] as const) {
    await awaitService(target, A, 60_000);
    await awaitHandover(config, 'FirstApply', (c) => c?.reason === 'FirstApply');
  }
}, 180_000);

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await Promise.all([...processes.values()].map((p) => p.stop(5_000)));
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await bus?.stop();
  // An instance left behind would change what a later file's resolver picks.
  const left = await waitFor(
    'the instances deleted',
    async () => {
      const names = await listOurInstances();
      return names.length === 0 ? names : undefined;
    },
    { timeoutMs: 20_000, intervalMs: 500 },
  ).catch(async () => listOurInstances());
  if (left.length > 0) throw new Error(`instances left behind: ${left.join(', ')}`);
}, 120_000);

describe('the gate, every handler a process under its own ServiceAccount', () => {
  it('(b) a truncated, then an undecodable report blocks the move with its reason; the first readable one lets it through', async () => {
    await createInstance(B, [`${B}-1`, `${B}-2`]);
    await replica(B, `${B}-1`, [T_UNREADABLE]);
    const b2 = await replica(B, `${B}-2`, [T_UNREADABLE]);
    await b2.truncate([T_UNREADABLE]);
    // Recorded and aggregated before the move: the handover's view holds it at the pin's record.
    const truncated = await awaitInstance(
      B,
      'ReportTruncated',
      (s) => servedTargetsKnown(s)?.reason === 'ReportTruncated',
    );
    expect(truncated.status.servedTargets, 'a truncated report must leave no list').toBeUndefined();
    expect(servedTargetsKnown(truncated.status)?.message).toContain(`${B}-2 (truncated`);

    await pinConfig(CONFIG_UNREADABLE, B);
    // The handover's first verdict after the pin, whatever it is: a move would show as
    // HandoverReady. AssignmentChanged is assign's reset of the condition in the same write as
    // the new assignment, not a verdict: it may or may not be seen before the handover's.
    const blocked = await awaitHandover(
      CONFIG_UNREADABLE,
      'a verdict on the move',
      (c) => c?.reason !== 'FirstApply' && c?.reason !== 'AssignmentChanged',
    );
    expect(blocked.condition).toMatchObject({ status: 'False', reason: 'HandoverUnknown' });
    expect(blocked.condition.message).toContain(`cannot read what ${B} serves`);
    expect(blocked.condition.message).toContain(`${B}-2 (truncated:`);
    expect(blocked.condition.message).not.toContain(`${B}-1 (`);
    // Blocked, not slow: B-1 reports the target, and time passes.
    await sleep(3_000);
    expect(await serviceOf(T_UNREADABLE), 'moved on a truncated report').toBe(webhookServiceName(A));
    expect(handoverReady(await configStatus(CONFIG_UNREADABLE))?.reason).toBe('HandoverUnknown');

    await b2.garbage();
    await awaitInstance(B, 'ReportUndecodable', (s) => servedTargetsKnown(s)?.reason === 'ReportUndecodable');
    const undecodable = await awaitHandover(CONFIG_UNREADABLE, 'undecodable in the message', (c) =>
      Boolean(c?.message.includes(`${B}-2 (undecodable:`)),
    );
    expect(undecodable.condition).toMatchObject({ status: 'False', reason: 'HandoverUnknown' });
    expect(undecodable.condition.message).not.toContain('truncated');
    await sleep(3_000);
    expect(await serviceOf(T_UNREADABLE), 'moved on an undecodable report').toBe(webhookServiceName(A));
    expect(handoverReady(await configStatus(CONFIG_UNREADABLE))?.reason).toBe('HandoverUnknown');

    // The block was the report: readable again, the move follows, verified.
    await b2.publish([T_UNREADABLE]);
    await awaitService(T_UNREADABLE, B);
    const ready = await awaitHandover(
      CONFIG_UNREADABLE,
      'HandoverReady',
      (c) => c?.reason === 'HandoverReady',
    );
    expect(ready.condition).toMatchObject({ status: 'True', reason: 'HandoverReady' });
    expect(ready.condition.message).toContain(`all 2 ready Pods of ${B} serve it`);
  }, 120_000);

  it(`(a) a silent destination (ready Pods, no Lease) is moved HandoverUnverified after the ${GRACE_SECONDS} s grace`, async () => {
    await createInstance(C, [`${C}-1`]);
    // C's slice recorded and aggregated (no Lease: AwaitingReports) before the move.
    await awaitInstance(
      C,
      'ready Pods without a report',
      (s) => servedTargetsKnown(s)?.reason === 'AwaitingReports',
    );
    const pinnedAt = Date.now();
    await pinConfig(CONFIG_SILENT, C);
    const waiting = await awaitHandover(
      CONFIG_SILENT,
      'HandoverAwaitingReports or a verdict',
      (c) => c?.reason === 'HandoverAwaitingReports' || (c?.status === 'True' && c.reason !== 'FirstApply'),
    );
    expect(waiting.condition, 'the wait is not shown before the grace ends').toMatchObject({
      status: 'False',
      reason: 'HandoverAwaitingReports',
    });
    expect(waiting.condition.message).toContain(`waiting for ${C}'s ready Pods to publish`);
    expect(await serviceOf(T_SILENT), 'moved before the grace ended').toBe(webhookServiceName(A));
    // The clock of the grace is stored where any replica resumes it.
    expect((await configStatus(CONFIG_SILENT))?.handover).toMatchObject({
      destination: C,
      silentSince: expect.any(String),
    });

    const movedAt = await awaitService(T_SILENT, C, 30_000);
    const elapsed = movedAt - pinnedAt;
    console.log(
      `[gate-processes] silent destination: moved ${elapsed} ms after the pin (grace ${GRACE_SECONDS} s)`,
    );
    expect(elapsed, 'moved before the grace ended').toBeGreaterThanOrEqual(GRACE_SECONDS * 1000);
    // Woken by its re-check at the grace's end, not by some later event (the trust-bundle retry is 10 s).
    expect(elapsed, 'the grace re-check did not wake the move').toBeLessThan(GRACE_SECONDS * 1000 + 5_000);
    const verdict = await awaitHandover(
      CONFIG_SILENT,
      'HandoverUnverified',
      (c) => c?.reason === 'HandoverUnverified',
    );
    expect(verdict.condition).toMatchObject({ status: 'True', reason: 'HandoverUnverified' });
    // The process's configured grace, not the 90 s default.
    expect(verdict.condition.message).toContain(`for ${GRACE_SECONDS}s`);
    expect(verdict.condition.message).toContain(`no Pod of ${C} published a served set`);
    const after = await configStatus(CONFIG_SILENT);
    expect(after?.handover, 'nothing waits any more').toBeUndefined();
    expect(after?.handoverDestination).toBe(C);
  }, 120_000);

  it(`(c) a Lease that stops renewing drops out of the aggregate at its expiry (${LEASE_SECONDS} s), by the re-check alone`, async () => {
    await createInstance(E, [`${E}-1`, `${E}-2`]);
    await replica(E, `${E}-1`, ['a.x.io', 'b.x.io'], LEASE_SECONDS, 1_000);
    const wedged = await replica(E, `${E}-2`, ['a.x.io'], LEASE_SECONDS, 1_000);
    const both = await awaitInstance(E, 'both replicas aggregated', (s) => s.reportingReplicas === 2);
    expect(both.status.servedTargets).toEqual(['a.x.io']);
    expect(servedTargetsKnown(both.status)?.reason).toBe('AllReported');
    // Let the creations settle (every record routed and handled); from then on only heartbeats.
    await sleep(2_000);
    expect((await instanceStatus(E))?.reportingReplicas, 'a live Lease dropped early').toBe(2);

    await wedged.stop();
    const stoppedAt = Date.now();
    const lastRenewal = Date.parse(wedged.renewals.at(-1) ?? '');
    const expiry = lastRenewal + LEASE_SECONDS * 1000;
    const dropped = await awaitInstance(
      E,
      'the wedged replica dropped out',
      (s) => s.reportingReplicas === 1,
    );
    console.log(`[gate-processes] stale Lease dropped ${dropped.atMs - expiry} ms after its expiry`);
    expect(dropped.atMs, 'dropped before it expired').toBeGreaterThanOrEqual(expiry);
    expect(dropped.atMs - expiry, 'dropped well after its expiry').toBeLessThan(4_000);
    expect(dropped.status.servedTargets, 'the live replica alone').toEqual(['a.x.io', 'b.x.io']);
    expect(servedTargetsKnown(dropped.status)).toMatchObject({ status: 'False', reason: 'AwaitingReports' });
    expect(servedTargetsKnown(dropped.status)?.message).toContain(`${E}-2`);

    // Nothing but time: no record of the instance was routed to lease-aggregate meanwhile, and
    // the run that dropped it was the re-check scheduled for exactly the Lease's expiry.
    const routed = leaseAggregateWork.filter(
      (w) => w.key === E && w.atMs >= stoppedAt && w.atMs <= dropped.atMs,
    );
    expect(routed, 'a routed work item woke lease-aggregate').toEqual([]);
    const atExpiry = leaseAggregateRechecks.filter((r) => r.key === E && Math.abs(r.dueMs - expiry) <= 1);
    expect(atExpiry.length, "no re-check was scheduled for the Lease's expiry").toBeGreaterThan(0);
    expect(atExpiry[0]?.atMs ?? Number.POSITIVE_INFINITY).toBeLessThan(dropped.atMs);
  }, 120_000);

  it('the targets were patched by the handover identity only, and no handler was refused a request', async () => {
    // First applies of both targets, and one move each.
    await audit.waitFor('the conversion patches', (all) => all.filter(targetPatch), 4);
    await sleep(1_000);
    const patches = (await audit.all()).filter(targetPatch);
    expect(patches.length, 'a patch the target already said, or one missing').toBe(4);
    expect([...new Set(patches.map((e) => e.user.username))]).toEqual([componentUser('handover')]);
    const users = new Set(COMPONENTS.map(componentUser));
    const used = (await audit.all()).filter(
      (e) => users.has(e.user.username) && e.stage === 'ResponseComplete',
    );
    expect(
      new Set(used.map((e) => e.user.username)),
      'every handler spoke to the apiserver as itself',
    ).toEqual(users);
    const refused = used.filter((e) => e.responseStatus?.code === 403);
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});

const targetPatch = (e: AuditEvent) =>
  e.stage === 'ResponseComplete' &&
  e.verb === 'patch' &&
  e.objectRef?.resource === 'customresourcedefinitions' &&
  [T_UNREADABLE, T_SILENT].includes(e.objectRef.name ?? '') &&
  e.responseStatus?.code === 200;
