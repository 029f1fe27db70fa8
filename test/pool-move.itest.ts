// The acceptance check of issue 11, every handler a real process: `switchyard watch` (admin)
// records, `router` turns records into work, and `assign`, `lease-aggregate`, `handover` and
// `config-status` act, each under the ServiceAccount token of its deploy/rbac manifest. The test
// plays the data plane (no webhook-server exists yet, so `instances` does not run): per instance
// the serving Secret with the ca.crt the handover reads (and the Role letting it, rendered as the
// instances handler renders it), an EndpointSlice naming its ready Pods,
// and per Pod a served-set Lease (test/support/served-lease.ts).
//
// A pool of three instances and 24 unpinned targets: every target's conversion names the Service
// of the instance the pure resolver picks. A fourth member then moves exactly the targets it
// wins, each through a verified handover (HandoverReady), and the recorded stream shows no moved
// target naming the new Service before the last of its ready Pods reported.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { DeliverPolicy } from '@nats-io/jetstream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  GROUP,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  servedLeaseName,
  servingCertSecretName,
  VERSION,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { decodeMessage, objectEventSchema } from '../src/bus/messages.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { fleetOf, type InstanceLike, resolveIn } from '../src/core/assignment.ts';
import { isConflict, isNotFound } from '../src/kube/errors.ts';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';
import { writeKubeConfig } from '../src/local-cluster/kubeconfig.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { componentUser, grantTrustBundleRead, RBAC_NAMESPACE } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const logger = pino({ level: 'warn' });
const N = 24;
const D2_DELAY_MS = 3_000;
const instanceNames = (run: string) =>
  ['a', 'b', 'c', 'd'].map((n) => `pm-${run}-${n}`) as [string, string, string, string];
const targetNames = (run: string) =>
  Array.from({ length: N }, (_, i) => `gizmos.g${i}x${run}.pool.switchyard.dev`);
/**
 * A run suffix whose names give every member of the pool of three some target and the fourth
 * more than one but not all (the resolver is pure: this is what the handlers will compute).
 */
function pickRun(): string {
  const member = (name: string, isDefault = false): InstanceLike => ({
    metadata: { name },
    spec: { default: isDefault, sharding: { enabled: true } },
  });
  for (let k = 0; ; k++) {
    const run = `${Date.now().toString(36)}${k}`;
    const [a, b, c, d] = instanceNames(run);
    const three = fleetOf([member(a, true), member(b), member(c)]);
    const four = fleetOf([member(a, true), member(b), member(c), member(d)]);
    const pick = (fleet: typeof three) =>
      targetNames(run).map((target) => {
        const r = resolveIn(fleet, { target });
        return r.ok ? r.instance : '';
      });
    const won = pick(four).filter((i) => i === d).length;
    if (new Set(pick(three)).size === 3 && won > 1 && won < N) return run;
  }
}
const run = pickRun();
const [A, B, C, D] = instanceNames(run);
const TARGETS = targetNames(run);
const configName = (i: number) => `pm-${run}-${i}`;

let namespace = '';
let bus: OwnBus;
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
const COMPONENTS = ['assign', 'lease-aggregate', 'handover', 'config-status'];
const processes: ManagedProcess[] = [];
const publishers: ServedLeasePublisher[] = [];
/** What this file created, deleted afterwards: later files share the cluster. */
const cleanups: Array<() => Promise<unknown>> = [];

/** A recorded CRD or Lease, as the K8S stream holds it. */
interface Rec {
  seq: number;
  atMs: number;
  kind: 'crd' | 'lease';
  name: string;
  service?: string;
}
const records: Rec[] = [];

function start(name: string, args: string[], kubeconfig?: string): void {
  const p = switchyardProcess({
    name,
    args,
    natsUrl: bus.server.url,
    kubeconfig,
    logFile: join(cluster.info.dir, 'logs', `pool-move-${name}.log`),
    log: logger,
  });
  processes.push(p);
}

/**
 * deploy/rbac/<component>.yaml applied (what it creates is deleted afterwards: a later file may
 * create it unconditionally), and a kubeconfig file with a token of its ServiceAccount.
 */
async function identityFile(component: string): Promise<string> {
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const text = await readFile(join(PROJECT_ROOT, 'deploy', 'rbac', `${component}.yaml`), 'utf8');
  for (const o of loadAllYaml(text) as KubernetesObject[]) {
    const created = await objects.create(o).then(
      () => true,
      (err: unknown) => {
        if (!isConflict(err)) throw err;
        return false;
      },
    );
    if (created) cleanups.push(() => objects.delete(o).catch(() => undefined));
  }
  const token = await core.createNamespacedServiceAccountToken({
    name: `switchyard-${component}`,
    namespace: RBAC_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const path = join(cluster.info.dir, `pool-move-${component}-${run}.kubeconfig`);
  await writeKubeConfig(path, cluster.info.endpoint, componentUser(component), token.status?.token ?? '');
  return path;
}

/** Records of CRDs and Leases from now on, with their stream sequence and timestamp. */
async function recordStream(): Promise<void> {
  const js = bus.js;
  const consumer = await js.consumers.get(STREAMS.records, {
    filter_subjects: ['k8s.crd.>', 'k8s.lease.>'],
    deliver_policy: DeliverPolicy.New,
  });
  const messages = await consumer.consume();
  cleanups.push(async () => messages.stop());
  void (async () => {
    for await (const m of messages) {
      const decoded = decodeMessage(objectEventSchema, m.data);
      if (!decoded.ok || decoded.value.op !== 'upsert') continue;
      const o = decoded.value.object as {
        metadata: { name: string };
        spec?: { conversion?: { webhook?: { clientConfig?: { service?: { name?: string } } } } };
      };
      const kind = m.subject.startsWith('k8s.crd.') ? 'crd' : 'lease';
      records.push({
        seq: m.seq,
        atMs: m.info.timestampNanos / 1e6,
        kind,
        name: o.metadata.name,
        service: kind === 'crd' ? o.spec?.conversion?.webhook?.clientConfig?.service?.name : undefined,
      });
    }
  })();
}

/** v2 (stored) has spec.size where v1 has spec.replicas: the config's FieldRename compiles. */
function targetCrd(name: string): V1CustomResourceDefinition {
  const version = (v: string, field: string, storage: boolean) => ({
    name: v,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } },
      },
    },
  });
  const [plural, ...group] = name.split('.');
  return {
    metadata: { name },
    spec: {
      group: group.join('.'),
      scope: 'Namespaced',
      names: { plural: plural ?? '', singular: 'gizmo', kind: 'Gizmo' },
      versions: [version('v2', 'size', true), version('v1', 'replicas', false)],
    },
  };
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

let sliceCount = 0;

/** What the instances handler and the data plane would write: the serving Secret, the ready Pods' slice. */
async function dataPlane(instance: string, pods: string[]): Promise<void> {
  const now = Date.now();
  const ca = await x509Issuer().createCa({
    commonName: instance,
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3_600_000,
  });
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name: servingCertSecretName(instance) },
      data: { 'ca.crt': Buffer.from(ca.certPem).toString('base64') },
    },
  });
  await admin.makeApiClient(DiscoveryV1Api).createNamespacedEndpointSlice({
    namespace,
    body: {
      metadata: {
        name: `${webhookServiceName(instance)}-x1`,
        labels: {
          [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
          [WEBHOOK_SERVER_LABEL]: instance,
          'kubernetes.io/service-name': webhookServiceName(instance),
        },
      },
      addressType: 'IPv4',
      endpoints: pods.map((pod, i) => ({
        addresses: [`10.9.${++sliceCount}.${i + 1}`],
        conditions: { ready: true },
        targetRef: { kind: 'Pod', name: pod, namespace },
      })),
    },
  });
}

/** One replica reporting every target. */
async function replica(instance: string, pod: string): Promise<ServedLeasePublisher> {
  const p = await ServedLeasePublisher.start({
    kubeConfig: admin,
    namespace,
    instance,
    pod,
    served: TARGETS,
    leaseDurationSeconds: 60,
    renewEveryMs: 5_000,
  });
  publishers.push(p);
  return p;
}

async function instance(name: string, spec: Record<string, unknown>, pods: string[]): Promise<void> {
  await dataPlane(name, pods);
  for (const pod of pods) await replica(name, pod);
  await createInstance(name, spec);
}

async function listInstances(): Promise<InstanceLike[]> {
  const r = (await custom.listClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
  })) as { items: InstanceLike[] };
  return r.items;
}

/** What the pure resolver says each target's instance is, over the live fleet. */
async function resolved(): Promise<Map<string, string>> {
  const fleet = fleetOf(await listInstances());
  const out = new Map<string, string>();
  for (const target of TARGETS) {
    const r = resolveIn(fleet, { target });
    if (!r.ok) throw new Error(`${target} does not resolve: ${JSON.stringify(r)}`);
    out.set(target, r.instance);
  }
  return out;
}

async function servicesNow(): Promise<Map<string, string | undefined>> {
  const out = new Map<string, string | undefined>();
  for (const target of TARGETS) {
    const crd = await crdApi.readCustomResourceDefinition({ name: target });
    out.set(target, crd.spec.conversion?.webhook?.clientConfig?.service?.name);
  }
  return out;
}

async function statuses(): Promise<Map<string, ConfigStatus | undefined>> {
  const r = (await custom.listClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'crdconversionconfigs',
  })) as { items: { metadata: { name: string }; status?: ConfigStatus }[] };
  const byName = new Map(r.items.map((c) => [c.metadata.name, c.status]));
  return new Map(TARGETS.map((t, i) => [t, byName.get(configName(i))]));
}

const handoverReady = (s: ConfigStatus | undefined) => s?.conditions?.find((c) => c.type === 'HandoverReady');

/** Waits until every target names the Service of the instance the resolver picks; returns the picks. */
async function everyTargetWhereResolved(what: string): Promise<Map<string, string>> {
  return waitFor(
    what,
    async () => {
      const want = await resolved();
      const have = await servicesNow();
      for (const t of TARGETS) if (have.get(t) !== webhookServiceName(want.get(t) ?? '')) return undefined;
      return want;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
};

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  namespace = await createNamespace(admin, 'pool-move');
  cleanups.push(() => core.deleteNamespace({ name: namespace }));

  const kubeconfigs: Record<string, string> = {};
  for (const c of COMPONENTS) kubeconfigs[c] = await identityFile(c);
  // A NATS server of the file's own: its durable consumers (a work queue admits one per subject) stay here.
  bus = await startOwnBus();
  await recordStream();

  start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
  start('router', ['router']);
  start('assign', ['assign', '--bus.fanoutRatePerSecond=50'], kubeconfigs.assign);
  start('lease-aggregate', ['lease-aggregate'], kubeconfigs['lease-aggregate']);
  start('handover', ['handover'], kubeconfigs.handover);
  start('config-status', ['config-status'], kubeconfigs['config-status']);
  const jsm = bus.jsm;
  await waitFor(
    'every handler consuming',
    async () => {
      const names: string[] = [];
      for await (const c of jsm.consumers.list(STREAMS.work)) names.push(c.name);
      for await (const c of jsm.consumers.list(STREAMS.records)) names.push(c.name);
      const has = (p: string) => names.some((n) => n.startsWith(p));
      return ['router', 'assign', 'lease-aggregate', 'handover', 'config-status'].every(has)
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}, 120_000);

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await Promise.all(processes.map((p) => p.stop(5_000)));
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await bus?.stop();
  // A default instance left behind would make a later file's default a second one.
  const left = (await listInstances()).filter((i) => i.metadata.name.startsWith(`pm-${run}-`));
  if (left.length > 0) throw new Error(`instances left behind: ${left.map((i) => i.metadata.name)}`);
}, 120_000);

let before = new Map<string, string>();
let movedCount = 0;

describe('a pool moves without a failed conversion', () => {
  it(`a pool of 3 and ${N} targets: every target names the Service of the instance the resolver picks`, async () => {
    await instance(A, { default: true }, [`${A}-1`, `${A}-2`]);
    await instance(B, {}, [`${B}-1`, `${B}-2`]);
    await instance(C, {}, [`${C}-1`, `${C}-2`]);
    for (const t of TARGETS) {
      await crdApi.createCustomResourceDefinition({ body: targetCrd(t) });
      cleanups.push(() => crdApi.deleteCustomResourceDefinition({ name: t }).catch(() => undefined));
    }
    for (const [i, t] of TARGETS.entries())
      await createCustom('crdconversionconfigs', {
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name: configName(i) },
        spec: {
          targetCRD: { name: t },
          hubVersion: 'v2',
          spokes: [
            {
              version: 'v1',
              rules: [
                {
                  strategy: 'FieldRename',
                  fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
                },
              ],
            },
          ],
        },
      } as { metadata: { name: string } });
    before = await everyTargetWhereResolved(`${N} targets where the resolver says`);
    expect(new Set(before.values()), 'every pool member wins some target').toEqual(new Set([A, B, C]));
    await waitFor(
      'every config Applied with HandoverReady True',
      async () => {
        const s = await statuses();
        return [...s.values()].every((x) => x?.phase === 'Applied' && handoverReady(x)?.status === 'True')
          ? true
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
  }, 180_000);

  it('a 4th member moves only the targets it wins, each after its last ready Pod reported it', async () => {
    const D1 = `${D}-1`;
    const D2 = `${D}-2`;
    await dataPlane(D, [D1, D2]);
    await replica(D, D1);
    const fleetBefore = fleetOf(await listInstances());
    const seqBefore = (await bus.jsm.streams.info(STREAMS.records)).state.last_seq;
    await createInstance(D);
    const after = await resolved();
    const won = TARGETS.filter((t) => after.get(t) !== before.get(t));
    for (const t of won) expect(after.get(t), `${t} moved to another than the new member`).toBe(D);
    for (const t of TARGETS)
      expect(resolveIn(fleetBefore, { target: t })).toMatchObject({ instance: before.get(t) });
    expect(won.length, 'the new member wins some targets').toBeGreaterThan(0);
    expect(won.length).toBeLessThan(N);
    movedCount = won.length;

    // d2 is ready and has not reported: nothing moves, however long assign has been done.
    await new Promise((r) => setTimeout(r, D2_DELAY_MS));
    const waiting = await servicesNow();
    for (const t of won)
      expect(waiting.get(t), `${t} moved before ${D2} reported`).toBe(
        webhookServiceName(before.get(t) ?? ''),
      );
    const pending = await statuses();
    for (const t of won) expect(handoverReady(pending.get(t))?.reason, t).toBe('HandoverPending');

    const d2 = await replica(D, D2);
    await everyTargetWhereResolved('the won targets moved to the new member');
    const d2Lease = await waitFor('the record of the last Lease', async () =>
      records.find((r) => r.kind === 'lease' && r.name === d2.name && r.seq > seqBefore),
    );
    expect(d2.name).toBe(servedLeaseName(D2));

    const finalServices = await servicesNow();
    for (const t of TARGETS)
      expect(finalServices.get(t), t).toBe(webhookServiceName(won.includes(t) ? D : (before.get(t) ?? '')));

    await waitFor(
      'every moved target HandoverReady (verified)',
      async () => {
        const s = await statuses();
        return won.every((t) => handoverReady(s.get(t))?.reason === 'HandoverReady') ? s : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    const s = await statuses();
    for (const t of won)
      expect(handoverReady(s.get(t)), t).toMatchObject({ status: 'True', reason: 'HandoverReady' });

    // Against the recorded stream: no moved target named d's Service before d2's Lease record.
    const latencies: number[] = [];
    const crdRecords = await waitFor('a record of every move', async () => {
      const rs = records.filter((r) => r.kind === 'crd' && r.seq > seqBefore);
      return won.every((t) => rs.some((r) => r.name === t && r.service === webhookServiceName(D)))
        ? rs
        : undefined;
    });
    for (const t of won) {
      const naming = crdRecords.filter((r) => r.name === t && r.service === webhookServiceName(D));
      const first = naming[0];
      if (!first) throw new Error(`no record of ${t} naming ${D}`);
      expect(first.seq, `${t} recorded naming ${D} before ${D2} reported it`).toBeGreaterThan(d2Lease.seq);
      expect(first.atMs).toBeGreaterThanOrEqual(d2Lease.atMs);
      latencies.push(first.atMs - d2Lease.atMs);
    }
    // The others were never recorded naming another Service.
    for (const r of crdRecords.filter((r) => !won.includes(r.name) && TARGETS.includes(r.name)))
      expect(r.service, `${r.name} was repointed`).toBe(webhookServiceName(before.get(r.name) ?? ''));
    console.log(
      `[pool-move] ${won.length}/${N} targets moved to ${D}; from ${D2}'s Lease record to each move's record: ` +
        `min ${Math.min(...latencies).toFixed(0)} ms, median ${median(latencies).toFixed(0)} ms, max ${Math.max(...latencies).toFixed(0)} ms`,
    );
  }, 180_000);

  it('every target was patched by the handover identity only, and no handler was refused a request', async () => {
    const users = new Set(COMPONENTS.map(componentUser));
    const events = await audit.waitFor(
      'the conversion patches',
      (all) => all.filter(targetPatch),
      N + movedCount,
    );
    expect([...new Set(events.map((e) => e.user.username))]).toEqual([componentUser('handover')]);
    const refused = (await audit.all()).filter(
      (e) => users.has(e.user.username) && e.stage === 'ResponseComplete' && e.responseStatus?.code === 403,
    );
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  });
});

const targetPatch = (e: AuditEvent) =>
  e.stage === 'ResponseComplete' &&
  e.verb === 'patch' &&
  e.objectRef?.resource === 'customresourcedefinitions' &&
  TARGETS.includes(e.objectRef.name ?? '') &&
  e.responseStatus?.code === 200;

async function createInstance(name: string, spec: Record<string, unknown> = {}): Promise<void> {
  await createCustom('conversionwebhookservers', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec: { namespace, sharding: { enabled: true }, ...spec },
  } as { metadata: { name: string } });
  // As the instances handler renders it with the instance: the handover may read its serving Secret.
  await grantTrustBundleRead(admin, name);
}
