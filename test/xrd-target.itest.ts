// The acceptance check "an XRD target is gated and patched like a CRD target", with a real
// Crossplane core (src/local-cluster/crossplane.ts) turning each XRD into the CRDs the apiserver
// routes by, and an XRDConversionConfig converting an XRD. Every handler is a real process, as in
// test/pool-move.itest.ts: `switchyard watch` (started after Crossplane's API is served, though
// it would find it later too: src/watchers/xrd-discovery.itest.ts), `router`, and `assign`,
// `lease-aggregate`, `handover`, `config-status`, each (the watchers too) under the
// ServiceAccount token of its deploy/rbac manifest. The test plays the data plane: serving
// Secrets, EndpointSlices naming ready Pods, served-set Leases.
//
// As test/handover.itest.ts asserts for a CRD: the first apply waits for a ready destination
// replica and then points the XRD's spec.conversion at the instance's Service with its CA, and
// states its verdict once Crossplane has copied that into the generated CRDs (the composite's
// and the claim's); a move waits while a ready destination Pod has not reported the target and
// follows its report (HandoverReady); of Switchyard's identities only the handover patches the
// XRD, as field manager switchyard-handover, and only spec.conversion.
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION, webhookServiceName } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { isNotFound } from '../src/kube/errors.ts';
import {
  type RunningCrossplane,
  startCrossplane,
  uninstallCrossplane,
} from '../src/local-cluster/crossplane.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { XRD_GROUP, XRD_PLURAL, XRD_VERSION, xrdVersion } from './support/crossplane-xrd-crd.ts';
import { createReadyEndpointSlice, createServingSecret } from './support/data-plane.ts';
import { componentIdentityFile, componentUser, grantTrustBundleRead } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';
import { followTargetRecords, type TargetRecord } from './support/records.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const logger = pino({ level: 'warn' });
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
const XRD_OBJECT_GROUP = `x${run}.xrd.switchyard.dev`;
const XRD = `xgizmos.${XRD_OBJECT_GROUP}`;
const CONFIG = `xrd-${run}`;
const [A, B] = ['a', 'b'].map((n) => `xrd-${run}-${n}`) as [string, string];
const HANDOVER_MANAGER = 'switchyard-handover';
const CROSSPLANE_USER = 'switchyard:admin';
const COMPONENTS = ['watchers', 'assign', 'lease-aggregate', 'handover', 'config-status'];

let namespace = '';
let bus: OwnBus;
let crossplane: RunningCrossplane | undefined;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const processes: ManagedProcess[] = [];
const publishers: ServedLeasePublisher[] = [];
/** What this file created, deleted afterwards in reverse order: later files share the cluster. */
const cleanups: Array<() => Promise<unknown>> = [];
/** The ca.crt of each instance's serving Secret (base64). */
const caBundles = new Map<string, string>();

/** Records of the targets and Leases, in stream order. */
const records: TargetRecord[] = [];

function start(name: string, args: string[], kubeconfig?: string): void {
  processes.push(
    switchyardProcess({
      name,
      args,
      natsUrl: bus.server.url,
      natsCredentialsDir: bus.natsCredentialsDir,
      kubeconfig,
      logFile: join(cluster.info.dir, 'logs', `xrd-target-${name}.log`),
      log: logger,
    }),
  );
}

async function createCustom(group: string, version: string, plural: string, body: object): Promise<void> {
  const name = (body as { metadata: { name: string } }).metadata.name;
  await custom.createClusterCustomObject({ group, version, plural, body });
  cleanups.push(() =>
    custom.deleteClusterCustomObject({ group, version, plural, name }).catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    }),
  );
}

/**
 * The XRD under test: v2 (referenceable, the version composites are stored at) has spec.size
 * where v1 has spec.replicas, so the config's FieldRename compiles only if the XRD's version
 * schemas are read. Crossplane renders the composite's and the claim's CRDs from it.
 */
const XRD_VERSIONS = [xrdVersion('v2', 'size', true), xrdVersion('v1', 'replicas', false)];

async function createXrd(name = XRD): Promise<void> {
  await createCustom(XRD_GROUP, XRD_VERSION, XRD_PLURAL, {
    apiVersion: `${XRD_GROUP}/${XRD_VERSION}`,
    kind: 'CompositeResourceDefinition',
    metadata: { name },
    spec: {
      group: name.slice(name.indexOf('.') + 1),
      names: { kind: 'XGizmo', plural: 'xgizmos' },
      claimNames: { kind: 'Gizmo', plural: 'gizmos' },
      versions: XRD_VERSIONS,
    },
  });
}

async function createConfig(pin: string, name = CONFIG, target = XRD): Promise<void> {
  await createCustom(GROUP, VERSION, 'xrdconversionconfigs', {
    apiVersion: API_VERSION,
    kind: 'XRDConversionConfig',
    metadata: { name },
    spec: {
      targetXRD: { name: target },
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
  });
}

/** A hand-edited webhookServerRef: the move assign announces. */
async function pinConfig(pin: string): Promise<void> {
  await custom.patchClusterCustomObject(
    {
      group: GROUP,
      version: VERSION,
      plural: 'xrdconversionconfigs',
      name: CONFIG,
      body: { spec: { webhookServerRef: { name: pin } } },
    },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

/** An instance in the test's namespace with its serving Secret, and the EndpointSlice of these ready Pods if any. */
async function createInstance(name: string, readyPods: string[]): Promise<void> {
  caBundles.set(name, await createServingSecret(admin, namespace, name));
  if (readyPods.length > 0) await createReadyEndpointSlice(admin, namespace, name, readyPods);
  await createCustom(GROUP, VERSION, 'conversionwebhookservers', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec: { namespace },
  });
  // As the instances handler renders it with the instance: the handover may read its serving Secret.
  await grantTrustBundleRead(admin, name);
}

/** One replica of the instance reporting the XRD in its served-set Lease. */
async function replica(instance: string, pod: string): Promise<ServedLeasePublisher> {
  const p = await ServedLeasePublisher.start({
    kubeConfig: admin,
    namespace,
    instance,
    pod,
    served: [XRD],
    leaseDurationSeconds: 60,
    renewEveryMs: 5_000,
  });
  publishers.push(p);
  return p;
}

interface XrdObject {
  metadata: {
    managedFields?: Array<{ manager?: string; operation?: string; fieldsV1?: Record<string, unknown> }>;
  };
  spec: {
    conversion?: {
      strategy?: string;
      webhook?: {
        clientConfig?: {
          service?: { name?: string; namespace?: string; path?: string; port?: number };
          caBundle?: string;
        };
        conversionReviewVersions?: string[];
      };
    };
  };
}

async function readXrd(name = XRD): Promise<XrdObject> {
  return (await custom.getClusterCustomObject({
    group: XRD_GROUP,
    version: XRD_VERSION,
    plural: XRD_PLURAL,
    name,
  })) as XrdObject;
}

const serviceNamed = async () => (await readXrd()).spec.conversion?.webhook?.clientConfig?.service?.name;

async function configStatus(): Promise<ConfigStatus | undefined> {
  const o = (await custom.getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'xrdconversionconfigs',
    name: CONFIG,
  })) as { status?: ConfigStatus };
  return o.status;
}

const condition = (s: ConfigStatus | undefined, type: string) => s?.conditions?.find((c) => c.type === type);

async function awaitCondition(type: string, reason: string, timeoutMs = 30_000): Promise<ConfigStatus> {
  let last: ConfigStatus | undefined;
  return waitFor(
    `${CONFIG} ${type} ${reason}`,
    async () => {
      last = await configStatus();
      return condition(last, type)?.reason === reason ? last : undefined;
    },
    { timeoutMs, intervalMs: 200 },
  ).catch((err: unknown) => {
    throw new Error(`${String(err)}; the status says ${JSON.stringify(last)}`);
  });
}

async function awaitService(instance: string): Promise<void> {
  await waitFor(
    `${XRD} names the Service of ${instance}`,
    async () => ((await serviceNamed()) === webhookServiceName(instance) ? true : undefined),
    { timeoutMs: 30_000, intervalMs: 100 },
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  // First pushed, so last run: once the XRDs are gone (Crossplane removes its finalizers), Crossplane
  // stops and its API goes.
  cleanups.push(async () => {
    await waitFor('the XRDs deleted', async () => ((await xrdsOfThisRun()).length === 0 ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 250,
    });
    await crossplane?.stop();
    await uninstallCrossplane(admin);
  });
  crossplane = await startCrossplane({
    kubeConfigPath: cluster.info.kubeConfigs.admin,
    dir: join(cluster.info.dir, `xrd-target-crossplane-${run}`),
    log: logger,
  });
  namespace = await createNamespace(admin, 'xrd-target');
  cleanups.push(() => core.deleteNamespace({ name: namespace }));

  const kubeconfigs: Record<string, string> = {};
  for (const c of COMPONENTS)
    kubeconfigs[c] = await componentIdentityFile(
      cluster.info,
      admin,
      c,
      join(cluster.info.dir, `xrd-target-${c}-${run}.kubeconfig`),
      cleanups,
    );
  bus = await startOwnBus();
  const stopRecords = await followTargetRecords(bus.js, ['xrd', 'lease'], records, 'all');
  cleanups.push(async () => stopRecords());
  start('watchers', ['watch'], kubeconfigs.watchers);
  start('router', ['router']);
  start('assign', ['assign'], kubeconfigs.assign);
  start('lease-aggregate', ['lease-aggregate'], kubeconfigs['lease-aggregate']);
  start('handover', ['handover'], kubeconfigs.handover);
  start('config-status', ['config-status'], kubeconfigs['config-status']);
  await waitFor(
    'every handler consuming',
    async () => {
      const names: string[] = [];
      for await (const c of bus.jsm.consumers.list(STREAMS.work)) names.push(c.name);
      for await (const c of bus.jsm.consumers.list(STREAMS.records)) names.push(c.name);
      const has = (p: string) => names.some((n) => n.startsWith(p));
      return ['router', 'assign', 'lease-aggregate', 'handover', 'config-status'].every(has)
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}, 180_000);

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await Promise.all(processes.map((p) => p.stop(5_000)));
  const failures: unknown[] = [];
  for (const cleanup of cleanups.reverse()) await cleanup().catch((err: unknown) => failures.push(err));
  await bus?.stop();
  // A default instance left behind would make a later file's default a second one; an XRD API
  // left behind would have a later file's watchers record XRDs.
  const left = (
    (await custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
    })) as { items: Array<{ metadata: { name: string } }> }
  ).items.filter((i) => i.metadata.name.startsWith(`xrd-${run}-`));
  if (left.length > 0) throw new Error(`instances left behind: ${left.map((i) => i.metadata.name)}`);
  if (failures.length > 0) throw new AggregateError(failures, 'cleanup failed');
}, 180_000);

describe('an XRD target', () => {
  it("the watchers record XRDs: they found Crossplane's API", async () => {
    await createXrd();
    const rec = await waitFor(
      `a record of ${XRD}`,
      () => records.find((r) => r.kind === 'xrd' && r.name === XRD),
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    expect(rec.service, 'a new XRD names no conversion webhook').toBeUndefined();
    const stored = (await readXrd()) as unknown as { spec: { versions: unknown } };
    expect(
      stored.spec.versions,
      "the XRD's version schemas are stored unpruned, as Crossplane's CRD keeps them",
    ).toEqual(XRD_VERSIONS);
  });

  it('the config compiles against the XRD, and the first apply waits for a ready replica', async () => {
    await createInstance(A, []);
    await createConfig(A);
    const validated = await awaitCondition('Validated', 'Compiled');
    expect(
      condition(validated, 'Validated')?.status,
      "the rules compile against the XRD's version schemas",
    ).toBe('True');
    await awaitCondition('HandoverReady', 'DestinationNotReady');
    expect(await serviceNamed(), 'a Service with no endpoints would fail every conversion').toBeUndefined();

    await createReadyEndpointSlice(admin, namespace, A, [`${A}-1`]);
    await awaitService(A);
    const xrd = await readXrd();
    expect(xrd.spec.conversion).toEqual({
      strategy: 'Webhook',
      webhook: {
        clientConfig: {
          service: { name: webhookServiceName(A), namespace, path: `/convert/${XRD}`, port: 443 },
          caBundle: caBundles.get(A),
        },
        conversionReviewVersions: ['v1'],
      },
    });
    const s = await awaitCondition('HandoverReady', 'FirstApply');
    expect(condition(s, 'HandoverReady')?.status).toBe('True');
    expect(s.assignedWebhookServer).toBe(A);
  });

  it('a config created before its XRD is applied as soon as the XRD exists', async () => {
    const late = `xgizmos.late${run}.xrd.switchyard.dev`;
    await createConfig(A, `xrd-late-${run}`, late);
    await sleep(2_000);
    await createXrd(late);
    const named = await waitFor(
      `${late} naming ${A}'s Service`,
      async () => {
        const service = (await readXrd(late)).spec.conversion?.webhook?.clientConfig?.service?.name;
        return service === webhookServiceName(A) ? service : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
    expect(named, 'nothing but the XRD appearing woke the handover').toBe(webhookServiceName(A));
  });

  it('a move waits while a ready destination Pod has not reported the XRD, and follows its report', async () => {
    await createInstance(B, [`${B}-1`, `${B}-2`]);
    await replica(B, `${B}-1`);
    await pinConfig(B);
    await awaitCondition('HandoverReady', 'AssignmentChanged');
    await sleep(2_000);
    expect(await serviceNamed(), `${B}-2 would receive conversions it has no plan for`).toBe(
      webhookServiceName(A),
    );
    // A young wait on the destination's replicas is not written (core/handover-status.ts).
    expect(condition(await configStatus(), 'HandoverReady')?.reason).toBe('AssignmentChanged');

    const second = await replica(B, `${B}-2`);
    await awaitService(B);
    const xrd = await readXrd();
    expect(xrd.spec.conversion?.webhook?.clientConfig).toEqual({
      service: { name: webhookServiceName(B), namespace, path: `/convert/${XRD}`, port: 443 },
      caBundle: caBundles.get(B),
    });
    const s = await awaitCondition('HandoverReady', 'HandoverReady');
    expect(condition(s, 'HandoverReady')?.status).toBe('True');

    // On the recorded stream: the XRD named B's Service only after B-2's Lease was recorded.
    const lease = await waitFor('the record of the second Lease', () =>
      records.find((r) => r.kind === 'lease' && r.name === second.name),
    );
    const moved = await waitFor('the record of the move', () =>
      records.find((r) => r.kind === 'xrd' && r.name === XRD && r.service === webhookServiceName(B)),
    );
    expect(moved.seq, `${XRD} recorded naming ${B} before ${B}-2 reported it`).toBeGreaterThan(lease.seq);
  });

  it('only the handover identity patched the XRD, as switchyard-handover, and only spec.conversion', async () => {
    const patches = await audit.waitFor('the first apply and the move', xrdPatches, 2);
    expect(patches, 'one patch per repoint').toHaveLength(2);
    expect(patches.map((e) => e.user.username)).toEqual([
      componentUser('handover'),
      componentUser('handover'),
    ]);
    for (const e of patches) expect(e.requestURI).toContain(`fieldManager=${HANDOVER_MANAGER}`);

    const managed = (await readXrd()).metadata.managedFields ?? [];
    const handover = managed.filter((m) => m.manager === HANDOVER_MANAGER);
    expect(handover.map((m) => m.operation)).toEqual(['Apply']);
    const spec = handover[0]?.fieldsV1?.['f:spec'] as Record<string, unknown> | undefined;
    expect(Object.keys(spec ?? {}), 'the handover owns spec.conversion and nothing else of the spec').toEqual(
      ['f:conversion'],
    );
    const others = managed.filter((m) => m.manager !== HANDOVER_MANAGER);
    for (const m of others)
      expect(
        (m.fieldsV1?.['f:spec'] as Record<string, unknown> | undefined)?.['f:conversion'],
        `${m.manager} owns spec.conversion`,
      ).toBeUndefined();

    const users = new Set(COMPONENTS.map(componentUser));
    const refused = (await audit.all()).filter(
      (e) => users.has(e.user.username) && e.stage === 'ResponseComplete' && e.responseStatus?.code === 403,
    );
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});

/** Crossplane runs as the cluster's admin here: its own writes of the XRD (finalizers, status) are not Switchyard's. */
const xrdPatches = (events: AuditEvent[]) =>
  events.filter(
    (e) =>
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.user.username !== CROSSPLANE_USER &&
      e.objectRef?.apiGroup === XRD_GROUP &&
      e.objectRef.resource === XRD_PLURAL &&
      e.objectRef.name === XRD &&
      e.responseStatus?.code === 200,
  );

/** The XRDs this file created that still exist. */
async function xrdsOfThisRun(): Promise<string[]> {
  const list = (await custom.listClusterCustomObject({
    group: XRD_GROUP,
    version: XRD_VERSION,
    plural: XRD_PLURAL,
  })) as {
    items: Array<{ metadata: { name: string } }>;
  };
  return list.items.map((x) => x.metadata.name).filter((n) => n.includes(run));
}
