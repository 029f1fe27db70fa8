import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { DeliverPolicy } from '@nats-io/jetstream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  GROUP,
  servingCertSecretName,
  VERSION,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { decodeMessage, encodeMessage, handoverWorkSchema, objectEventSchema } from '../src/bus/messages.ts';
import { type HandlerRuntime, startHandlerRuntime } from '../src/bus/runtime/index.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { ObjectView } from '../src/bus/view.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { trustBundleReader } from '../src/handlers/handover/trust-bundle.ts';
import { HANDOVER_WORK } from '../src/handlers/handover/wakes.ts';
import { HANDOVER, HANDOVER_VIEW_KINDS, handoverHandler } from '../src/handlers/handover.ts';
import { createKubeClients, type KubeClients } from '../src/kube/clients.ts';
import { type ApplyOptions, fieldManagerFor, KubeWriter } from '../src/kube/writer.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { systemClock } from '../src/runtime/clock.ts';
import { HANDLER_VIEW_PROJECTIONS } from '../src/views/projection.ts';
import { RECORDED_RESOURCES } from '../src/watchers/resources.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { createReadyEndpointSlice, createServingSecret } from './support/data-plane.ts';
import { componentIdentity, componentUser, grantTrustBundleRead } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';
import { startRecording } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'handover-itest' });
const PARTITIONS = 2;
const GRACE_SECONDS = 3;
const suffix = Math.random().toString(36).slice(2, 7);
const GROUP_UNDER_TEST = `hand-${suffix}.x.io`;
const TARGET = `widgets.${GROUP_UNDER_TEST}`;
const CONFIG = `widgets-${suffix}`;
const [A, B, C] = ['a', 'b', 'c'].map((i) => `hand-${i}-${suffix}`) as [string, string, string];

let bus: OwnBus;
let namespace = '';
let clients: KubeClients;
let view: ObjectView;
let runtime: HandlerRuntime;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const stoppers: Array<() => unknown> = [];
const publishers: ServedLeasePublisher[] = [];
/** Every target apply the handler sent, with its options: the precondition is checked on these. */
const targetApplies: Array<{ at: number; opts: ApplyOptions | undefined }> = [];
/** When each Lease was recorded (K8S stream timestamp), by Lease name. */
const leaseRecordedAt = new Map<string, number>();

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'handover');
  for (const resource of RECORDED_RESOURCES) {
    const w = await startRecording(bus, resource, { kubeConfig: admin, log });
    stoppers.push(() => w.stop());
  }
  view = new ObjectView([...HANDOVER_VIEW_KINDS], log, { project: HANDLER_VIEW_PROJECTIONS });
  await view.start(bus.js);
  stoppers.push(() => view.stop());
  clients = createKubeClients({
    kubeConfig: await componentIdentity(cluster.info, admin, HANDOVER),
    component: 'handover-itest',
    kubernetes: defaultConfig().kubernetes,
  });
  const writer = new KubeWriter(clients.writes, fieldManagerFor(HANDOVER));
  const handle = handoverHandler({
    view,
    writer: {
      apply: (ref, obj, opts) => {
        targetApplies.push({ at: Date.now(), opts });
        return writer.apply(ref, obj, opts);
      },
      applyStatus: (ref, obj, opts) => writer.applyStatus(ref, obj, opts),
    },
    trustBundle: trustBundleReader(clients.writes),
    clock: systemClock,
    events: clients.events.recorder,
    policy: { unreportedGraceMs: GRACE_SECONDS * 1000, stallAfterMs: 600_000, confirmMs: 0 },
    defaultNamespace: 'switchyard-system',
  });
  runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern: HANDOVER,
    log,
    consumers: HANDOVER_WORK.consumers(PARTITIONS),
    schema: handoverWorkSchema,
    deadLetterSubject: `dlq.${HANDOVER}`,
    handle,
  });
  await startStandInLeaseAggregate();
  audit = await auditLogFromNow(cluster.info.auditLog);
  await createTarget();
});

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await runtime?.stop();
  for (const stop of stoppers.reverse()) await stop();
  await clients?.close();
  await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  await bus?.stop();
});

const HANDLER_USER = componentUser(HANDOVER);

/** As lease-aggregate would: each recorded Lease of an instance wakes the target waiting on it. */
async function startStandInLeaseAggregate(): Promise<void> {
  const consumer = await bus.js.consumers.get(STREAMS.records, {
    filter_subjects: ['k8s.lease.>'],
    deliver_policy: DeliverPolicy.New,
  });
  const messages = await consumer.consume();
  stoppers.push(() => messages.stop());
  void (async () => {
    for await (const m of messages) {
      const decoded = decodeMessage(objectEventSchema, m.data);
      if (!decoded.ok) continue;
      const meta = decoded.value.object.metadata as { name: string; labels?: Record<string, string> };
      if (meta.labels?.[WEBHOOK_SERVER_LABEL] === undefined) continue;
      if (!leaseRecordedAt.has(meta.name)) leaseRecordedAt.set(meta.name, m.info.timestampNanos / 1e6);
      await publishWork(m.seq);
    }
  })();
}

async function publishWork(seq: number): Promise<void> {
  await bus.js.publish(
    HANDOVER_WORK.workSubject(TARGET, PARTITIONS),
    encodeMessage(handoverWorkSchema, { key: TARGET, seq }),
  );
}

/** As assign would after a move: work at the sequence of the latest record (the move's cause is recorded by then). */
async function publishWorkNow(seen: () => boolean): Promise<void> {
  await waitFor('the view holds the change', async () => (seen() ? true : undefined), {
    timeoutMs: 20_000,
    intervalMs: 100,
  });
  const info = await bus.jsm.streams.info(STREAMS.records);
  await publishWork(info.state.last_seq);
}

const versionSchema = {
  openAPIV3Schema: {
    type: 'object',
    properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
  },
};

async function createTarget(): Promise<void> {
  const api = admin.makeApiClient(ApiextensionsV1Api);
  await api.createCustomResourceDefinition({
    body: {
      metadata: { name: TARGET },
      spec: {
        group: GROUP_UNDER_TEST,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          { name: 'v1', served: true, storage: false, schema: versionSchema },
          { name: 'v2', served: true, storage: true, schema: versionSchema },
        ],
      },
    },
  });
  stoppers.push(() => api.deleteCustomResourceDefinition({ name: TARGET }).catch(() => undefined));
}

const custom = () => admin.makeApiClient(CustomObjectsApi);

async function createInstance(name: string): Promise<void> {
  await custom().createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    body: {
      apiVersion: API_VERSION,
      kind: 'ConversionWebhookServer',
      metadata: { name },
      spec: { namespace },
    },
  });
  stoppers.push(() =>
    custom()
      .deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: 'conversionwebhookservers', name })
      .catch(() => undefined),
  );
  // What the instances handler writes: the handover's read of the serving Secret, and the
  // Secret whose ca.crt targets trust.
  await grantTrustBundleRead(admin, name);
  await createServingSecret(admin, namespace, name);
}

async function createConfig(pin: string): Promise<void> {
  await custom().createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
    body: {
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name: CONFIG },
      spec: {
        targetCRD: { name: TARGET },
        hubVersion: 'v2',
        spokes: [{ version: 'v1' }],
        webhookServerRef: { name: pin },
      },
    },
  });
  stoppers.push(() =>
    custom()
      .deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: CONFIG,
      })
      .catch(() => undefined),
  );
  await recordAssignment(pin);
}

/** A hand-edited webhookServerRef: the move assign would announce. */
async function pinConfig(pin: string): Promise<void> {
  await custom().patchClusterCustomObject(
    {
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      name: CONFIG,
      body: { spec: { webhookServerRef: { name: pin } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
  await recordAssignment(pin);
}

/** As assign records a new instance (assign does not run here): the handover acts only once the status names it. */
async function recordAssignment(instance: string): Promise<void> {
  await custom().patchClusterCustomObjectStatus(
    {
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      name: CONFIG,
      body: { status: { assignedWebhookServer: instance } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** The view holds the config as assigned to `instance`. */
const assignedInView = (instance: string) => () =>
  view
    .list('crdconfig')
    .some(
      (c) =>
        c.metadata.name === CONFIG &&
        (c as { status?: { assignedWebhookServer?: string } }).status?.assignedWebhookServer === instance,
    );

/** What the EndpointSlice controller would write for the instance's Service: these Pods ready. */
async function readyPods(instance: string, pods: string[]): Promise<void> {
  await createReadyEndpointSlice(admin, namespace, instance, pods);
}

async function replica(instance: string, pod: string): Promise<ServedLeasePublisher> {
  const p = await ServedLeasePublisher.start({
    kubeConfig: admin,
    namespace,
    instance,
    pod,
    served: [TARGET],
    leaseDurationSeconds: 60,
    renewEveryMs: 5_000,
  });
  publishers.push(p);
  return p;
}

async function serviceNamed(): Promise<string | undefined> {
  const crd = await admin.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: TARGET });
  return crd.spec.conversion?.webhook?.clientConfig?.service?.name;
}

async function configStatus(): Promise<ConfigStatus | undefined> {
  const o = (await custom().getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
    name: CONFIG,
  })) as { status?: ConfigStatus };
  return o.status;
}

const handoverReady = (s: ConfigStatus | undefined) => s?.conditions?.find((c) => c.type === 'HandoverReady');

async function awaitService(instance: string, timeoutMs = 20_000): Promise<number> {
  await waitFor(
    `${TARGET} names ${instance}`,
    async () => ((await serviceNamed()) === webhookServiceName(instance) ? true : undefined),
    { timeoutMs, intervalMs: 50 },
  );
  return Date.now();
}

const targetPatches = (events: AuditEvent[]) =>
  events.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.objectRef?.resource === 'customresourcedefinitions' &&
      e.objectRef.name === TARGET &&
      e.responseStatus?.code === 200,
  );

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('handover', () => {
  it('a first apply is patched as soon as the destination has a ready Pod', async () => {
    await createInstance(A);
    await createConfig(A);
    await publishWorkNow(assignedInView(A));
    await sleep(1_500);
    expect(await serviceNamed(), 'a Service with no endpoints would fail every conversion').toBeUndefined();
    expect(handoverReady(await configStatus())?.reason).toBe('DestinationNotReady');

    await readyPods(A, [`${A}-1`]);
    await publishWorkNow(() =>
      view.list('endpointslice').some((s) => s.metadata.name.startsWith(webhookServiceName(A))),
    );
    await awaitService(A);
    const crd = await admin.makeApiClient(ApiextensionsV1Api).readCustomResourceDefinition({ name: TARGET });
    expect(crd.spec.conversion).toMatchObject({
      strategy: 'Webhook',
      webhook: {
        clientConfig: { service: { namespace, path: `/convert/${TARGET}`, port: 443 } },
        conversionReviewVersions: ['v1'],
      },
    });
    const secret = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ namespace, name: servingCertSecretName(A) });
    expect(crd.spec.conversion?.webhook?.clientConfig?.caBundle, "the instance's trust bundle").toBe(
      secret.data?.['ca.crt'],
    );
    await waitFor(
      'HandoverReady in the status',
      async () => (handoverReady(await configStatus())?.reason === 'FirstApply' ? true : undefined),
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    expect(handoverReady(await configStatus())).toMatchObject({ status: 'True', reason: 'FirstApply' });
  });

  it('a move waits while one of two ready Pods has not reported, and is patched right after it reports', async () => {
    await createInstance(B);
    await readyPods(B, [`${B}-1`, `${B}-2`]);
    await replica(B, `${B}-1`);
    await pinConfig(B);
    await publishWorkNow(assignedInView(B));
    await sleep(2_000);
    expect(await serviceNamed(), `${B}-2 would receive conversions it has no plan for`).toBe(
      webhookServiceName(A),
    );
    // Written: this test records the assignment without assign's AssignmentChanged reset, so no
    // young wait is quiet here (core/handover-status.ts).
    expect(handoverReady(await configStatus())?.reason).toBe('HandoverPending');

    const second = await replica(B, `${B}-2`);
    const patchedAt = await awaitService(B);
    const recordedAt = leaseRecordedAt.get(second.name);
    expect(recordedAt, 'the Lease record must be seen to time the patch').toBeDefined();
    const applied = targetApplies[targetApplies.length - 1]?.at ?? 0;
    log.warn(
      {
        fromLeaseRecordToApplyMs: applied - (recordedAt ?? 0),
        fromLeaseRecordToObservedMs: patchedAt - (recordedAt ?? 0),
      },
      'handover latency',
    );
    expect(
      applied - (recordedAt ?? 0),
      'the move should follow the last report within a second',
    ).toBeLessThan(1_000);
    await waitFor(
      'HandoverReady',
      async () => (handoverReady(await configStatus())?.reason === 'HandoverReady' ? true : undefined),
      {
        timeoutMs: 10_000,
        intervalMs: 100,
      },
    );
  });

  it('a destination that publishes nothing is moved HandoverUnverified after the grace', async () => {
    await createInstance(C);
    await readyPods(C, [`${C}-1`]);
    await publishWorkNow(() =>
      view.list('endpointslice').some((s) => s.metadata.name.startsWith(webhookServiceName(C))),
    );
    const startedAt = Date.now();
    await pinConfig(C);
    await publishWorkNow(assignedInView(C));
    await sleep(1_000);
    expect(await serviceNamed(), 'moved before the grace ended').toBe(webhookServiceName(B));
    expect(handoverReady(await configStatus())?.reason).toBe('HandoverAwaitingReports');
    const movedAt = await awaitService(C, 20_000);
    expect(movedAt - startedAt).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000);
    await waitFor(
      'HandoverUnverified',
      async () => (handoverReady(await configStatus())?.reason === 'HandoverUnverified' ? true : undefined),
      {
        timeoutMs: 10_000,
        intervalMs: 100,
      },
    );
  });

  it('the target was patched only by the handover identity, and every patch carried its resourceVersion', async () => {
    const patches = await audit.waitFor('the three conversion patches', targetPatches, 3);
    expect(patches.map((e) => e.user.username)).toEqual(patches.map(() => HANDLER_USER));
    for (const e of patches) expect(e.requestURI).toContain(`fieldManager=${fieldManagerFor(HANDOVER)}`);
    expect(targetApplies.length, 'an apply the audit log does not show, or the reverse').toBe(patches.length);
    for (const a of targetApplies)
      expect(a.opts?.resourceVersion, 'an unconditional conversion patch').toMatch(/^\d+$/);
  });
});
