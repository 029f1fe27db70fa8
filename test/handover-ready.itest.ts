// Issue 27, finding 6: the config's status never says two things at once. A True HandoverReady
// describes the instance `status.assignedWebhookServer` names and the instance the target's
// spec.conversion names, at every version of the config, not only once things settle.
//
// First, against the apiserver alone: the writes of assign (a merge patch that records a new
// instance and resets HandoverReady, then its server-side applies of `Assigned`) and of the
// handover (server-side applies of HandoverReady) keep every condition whole, whatever order they
// land in, so a reset entry is never removed half-way by field ownership.
//
// Then every handler a process (`watch`, `router`, `assign`, `lease-aggregate`, `handover`,
// `config-status`, each under its manifest's ServiceAccount; the test plays the data plane, as
// test/gate-processes.itest.ts does), while Kubernetes watches follow every version of the
// configs and of their CRDs: a pin, an unpin, an instance joining the pool, the instance leaving
// it, and a CRD deleted and created again under its name. On every config version observed,
// HandoverReady=True implies assignedWebhookServer == handoverDestination, and the CRD at that
// revision (one etcd: resourceVersions order both, test/support/object-versions.ts) names that
// instance's Service. And the waits docs/handover.md gives users return only once the move is
// made: `kubectl wait --for=condition=HandoverReady` after a pin or unpin, and
// `--for=jsonpath='{.status.assignedWebhookServer}'=<instance> --for=condition=HandoverReady`
// after a pool change.
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION, webhookServiceName } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { verdictOf } from '../src/api/handover-verdict.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { defaultConfig } from '../src/config/schema.ts';
import { decideConfigAssignment } from '../src/core/assign-decision.ts';
import { fleetOf, type InstanceLike, resolveIn } from '../src/core/assignment.ts';
import { createKubeClients, type KubeClients } from '../src/kube/clients.ts';
import { isConflict, isNotFound } from '../src/kube/errors.ts';
import { fieldManagerFor, KubeWriter } from '../src/kube/writer.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd, gizmoCrd, renameConfigSpec } from './support/crds.ts';
import { createReadyEndpointSlice, createServingSecret } from './support/data-plane.ts';
import { componentIdentityFile, grantTrustBundleRead, RBAC_NAMESPACE } from './support/identities.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { followVersions, type VersionFollower, versionAt } from './support/object-versions.ts';
import { switchyardProcess } from './support/processes.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const logger = pino({ level: 'warn' });
const COMPONENTS = ['assign', 'lease-aggregate', 'handover', 'config-status'];
const WORKERS = ['router', ...COMPONENTS];
const CONFIGS = 'crdconversionconfigs';
const N = 3;

const names = (run: string) => ({
  instances: ['a', 'b', 'c'].map((n) => `hr-${run}-${n}`) as [string, string, string],
  targets: Array.from({ length: N }, (_, i) => `gizmos.t${i}x${run}.ready.switchyard.dev`),
});
const member = (name: string, isDefault = false): InstanceLike => ({
  metadata: { name },
  spec: { default: isDefault, sharding: { enabled: true } },
});
/** A run suffix whose targets the pool {a, b} spreads over both, and the pool {a, b, c} gives all to c. */
function pickRun(): string {
  for (let k = 0; ; k++) {
    const run = `${Date.now().toString(36)}${k}`;
    const { instances, targets } = names(run);
    const [a, b, c] = instances;
    const pick = (fleet: ReturnType<typeof fleetOf>) =>
      targets.map((target) => {
        const r = resolveIn(fleet, { target });
        return r.ok ? r.instance : '';
      });
    const two = pick(fleetOf([member(a, true), member(b)]));
    const three = pick(fleetOf([member(a, true), member(b), member(c)]));
    if (new Set(two).size === 2 && three.every((i) => i === c)) return run;
  }
}
const run = pickRun();
const {
  instances: [A, B, C],
  targets: TARGETS,
} = names(run);
const configName = (i: number) => `hr-${run}-${i}`;
const TARGET_OF = new Map(TARGETS.map((t, i) => [configName(i), t]));
/** Where the pool {a, b} puts each target. */
const HOME = new Map(
  TARGETS.map((t) => {
    const r = resolveIn(fleetOf([member(A, true), member(B)]), { target: t });
    return [t, r.ok ? r.instance : ''];
  }),
);
const other = (instance: string | undefined) => (instance === A ? B : A);

type Config = { metadata: { name: string; generation?: number }; status?: ConfigStatus };
type Crd = V1CustomResourceDefinition;

let namespace = '';
let bus: OwnBus;
const processes = new Map<string, ManagedProcess>();
const publishers: ServedLeasePublisher[] = [];
const cleanups: Array<() => Promise<unknown>> = [];
let configVersions: VersionFollower<Config>;
let crdVersions: VersionFollower<Crd>;
/** Per config, the revisions between its CRD's deletion and the handover saying so: the reaction window. */
const reacting = new Map<string, Array<{ from: number; to: number }>>();
const kubeconfigs: Record<string, string> = {};

const handoverReady = (s: ConfigStatus | undefined) => s?.conditions?.find((c) => c.type === 'HandoverReady');

function start(name: string, args: string[], kubeconfig?: string): void {
  processes.set(
    name,
    switchyardProcess({
      name,
      args,
      natsUrl: bus.server.url,
      natsCredentialsDir: bus.natsCredentialsDir,
      kubeconfig,
      logFile: join(cluster.info.dir, 'logs', `handover-ready-${name}.log`),
      log: logger,
    }),
  );
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
}

/** An instance in the pool whose one ready Pod reports every target, with what the instances handler would write. */
async function createInstance(name: string, spec: Record<string, unknown>): Promise<void> {
  await createServingSecret(admin, namespace, name);
  await createReadyEndpointSlice(admin, namespace, name, [`${name}-1`]);
  publishers.push(
    await ServedLeasePublisher.start({
      kubeConfig: admin,
      namespace,
      instance: name,
      pod: `${name}-1`,
      served: TARGETS,
      leaseDurationSeconds: 60,
      renewEveryMs: 5_000,
    }),
  );
  await createCustom('conversionwebhookservers', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec: { namespace, sharding: { enabled: true }, ...spec },
  } as { metadata: { name: string } });
  await grantTrustBundleRead(admin, name);
}

async function patchCustom(plural: string, name: string, body: object): Promise<void> {
  await custom.patchClusterCustomObject(
    { group: GROUP, version: VERSION, plural, name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

async function serviceOf(target: string): Promise<string | undefined> {
  const crd = await crdApi.readCustomResourceDefinition({ name: target });
  return crd.spec.conversion?.webhook?.clientConfig?.service?.name;
}

async function configStatus(name: string): Promise<ConfigStatus | undefined> {
  const o = (await custom.getClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: CONFIGS,
    name,
  })) as {
    status?: ConfigStatus;
  };
  return o.status;
}

/** Every config settled: its target names `where(target)`'s Service and its HandoverReady is True about it. */
async function settled(what: string, where: (target: string) => string): Promise<void> {
  await waitFor(
    what,
    async () => {
      for (const [i, t] of TARGETS.entries()) {
        const s = await configStatus(configName(i));
        if ((await serviceOf(t)) !== webhookServiceName(where(t))) return undefined;
        if (s?.assignedWebhookServer !== where(t) || handoverReady(s)?.status !== 'True') return undefined;
      }
      return true;
    },
    { timeoutMs: 60_000, intervalMs: 200 },
  );
}

/**
 * `kubectl wait` as docs/handover.md gives it (`timeout` 0: look once), then what the config and
 * its target say the moment it returns.
 */
async function kubectlWait(config: string, conditions: string[], timeout = '60s') {
  const startedAt = Date.now();
  const r = await cluster.kubectl(
    ['wait', `${CONFIGS}.${GROUP}/${config}`, ...conditions.map((c) => `--for=${c}`), `--timeout=${timeout}`],
    { timeoutMs: 70_000 },
  );
  const returnedAt = Date.now();
  const target = TARGET_OF.get(config) ?? '';
  const [status, service] = [await configStatus(config), await serviceOf(target)];
  return { ...r, ms: returnedAt - startedAt, status, service };
}

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  namespace = await createNamespace(admin, 'handover-ready');
  cleanups.push(() => core.deleteNamespace({ name: namespace }));
  for (const c of COMPONENTS)
    kubeconfigs[c] = await componentIdentityFile(
      cluster.info,
      admin,
      c,
      join(cluster.info.dir, `handover-ready-${c}-${run}.kubeconfig`),
      cleanups,
    );
}, 120_000);

afterAll(async () => {
  configVersions?.stop();
  crdVersions?.stop();
  for (const p of publishers) await p.stop();
  await Promise.all([...processes.values()].map((p) => p.stop(5_000)));
  for (const t of TARGETS) await crdApi.deleteCustomResourceDefinition({ name: t }).catch(() => undefined);
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await bus?.stop();
}, 120_000);

describe('assign and the handover share HandoverReady on the apiserver without losing any of it', () => {
  /** As the component itself writes: its field manager, under its manifest's ServiceAccount. */
  const writerOf = (component: string, clients: KubeClients[]) => {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigs[component] ?? '');
    const c = createKubeClients({ kubeConfig: kc, component, kubernetes: defaultConfig().kubernetes });
    clients.push(c);
    return new KubeWriter(c.writes, fieldManagerFor(component));
  };
  const ref = { apiVersion: API_VERSION, resource: CONFIGS, namespaced: false };

  it('a reset by merge patch survives assign’s next apply of Assigned alone, and the handover states it back', async () => {
    const clients: KubeClients[] = [];
    const assign = writerOf('assign', clients);
    const handover = writerOf('handover', clients);
    const name = `hr-${run}-writes`;
    const target = `gizmos.w${run}.ready.switchyard.dev`;
    const read = async () =>
      (await custom.getClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: CONFIGS,
        name,
      })) as Config & {
        metadata: { resourceVersion: string; managedFields?: Array<{ manager: string; operation: string }> };
      };
    try {
      await createCustom(CONFIGS, {
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name },
        spec: renameConfigSpec(target),
      } as { metadata: { name: string } });
      const status = (s: object) => ({
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name },
        status: s,
      });
      const assignApply = async (instance: string, decidedBy: 'Pool' | 'Pinned') => {
        const o = await read();
        const d = decideConfigAssignment(
          o.status,
          target,
          { ok: true, instance, decidedBy },
          new Date().toISOString(),
          1,
          { ready: () => true },
        );
        if (d.write?.via !== 'apply') throw new Error(`expected an apply, got ${JSON.stringify(d.write)}`);
        await assign.applyStatus(ref, status(d.write.status), {
          resourceVersion: o.metadata.resourceVersion,
        });
      };
      const handoverApply = async (instance: string) => {
        const o = await read();
        const verdict = {
          type: 'HandoverReady',
          status: 'True',
          observedGeneration: 1,
          lastTransitionTime: new Date().toISOString(),
          reason: 'HandoverReady',
          message: `moved to ${instance}`,
        };
        await handover.applyStatus(ref, status({ conditions: [verdict], handoverDestination: instance }), {
          resourceVersion: o.metadata.resourceVersion,
        });
      };
      const reassign = async (instance: string) => {
        const o = await read();
        const d = decideConfigAssignment(
          o.status,
          target,
          { ok: true, instance, decidedBy: 'Pool' },
          new Date().toISOString(),
          1,
          { ready: () => true },
        );
        if (d.write?.via !== 'mergePatch')
          throw new Error(`expected a merge patch, got ${JSON.stringify(d.write)}`);
        await assign.mergePatch(
          ref,
          { name, resourceVersion: o.metadata.resourceVersion },
          { status: d.write.status },
          { subresource: 'status' },
        );
        return o.metadata.resourceVersion;
      };
      const conditions = async () => (await read()).status?.conditions ?? [];
      const whole = (c: Record<string, unknown> | undefined) =>
        ['type', 'status', 'lastTransitionTime', 'reason', 'message'].every((k) => c?.[k] !== undefined);

      // The first assignment (a merge patch: it resets HandoverReady), then the handover's verdict.
      await reassign('a');
      await handoverApply('a');
      // A move to b: one write says b and HandoverReady False about b.
      const readBefore = await reassign('b');
      let s = (await read()).status;
      expect(s?.assignedWebhookServer).toBe('b');
      expect(s?.handoverDestination).toBe('b');
      expect(handoverReady(s)).toMatchObject({
        status: 'False',
        reason: 'AssignmentChanged',
        observedGeneration: 1,
      });
      // Before the handover states it again, assign applies Assigned alone (the pin's reason).
      await assignApply('b', 'Pinned');
      const afterApply = await conditions();
      expect(afterApply.map((c) => c.type).sort()).toEqual(['Assigned', 'HandoverReady']);
      expect(whole(afterApply.find((c) => c.type === 'HandoverReady')), JSON.stringify(afterApply)).toBe(
        true,
      );
      expect(handoverReady((await read()).status)?.reason).toBe('AssignmentChanged');
      // The handover states it; assign applies again; the verdict stays whole.
      await handoverApply('b');
      await assignApply('b', 'Pool');
      s = (await read()).status;
      expect(handoverReady(s)).toMatchObject({
        status: 'True',
        reason: 'HandoverReady',
        message: 'moved to b',
      });
      expect(s?.handoverDestination).toBe('b');
      expect(s?.conditions?.map((c) => c.type).sort()).toEqual(['Assigned', 'HandoverReady']);
      // A merge patch decided on an older version loses with 409: it would replace the list read then.
      const stale = await assign
        .mergePatch(
          ref,
          { name, resourceVersion: readBefore },
          { status: { assignedWebhookServer: 'c' } },
          { subresource: 'status' },
        )
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(isConflict(stale), String(stale)).toBe(true);
      const managers = (await read()).metadata.managedFields?.map((m) => `${m.manager}/${m.operation}`) ?? [];
      console.log(`[handover-ready] managers of the config after the writes: ${managers.join(', ')}`);
    } finally {
      await custom
        .deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: CONFIGS, name })
        .catch(() => undefined);
      for (const c of clients) await c.close({ timeoutMs: 1_000 });
    }
  });
});

describe('the status never says two things at once, every handler a process', () => {
  beforeAll(async () => {
    bus = await startOwnBus();
    // Followed from before anything of this run exists: every version written after is seen.
    const configList = (await custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: CONFIGS,
    })) as {
      metadata: { resourceVersion: string };
    };
    configVersions = await followVersions<Config>(
      admin,
      `/apis/${GROUP}/${VERSION}/${CONFIGS}`,
      configList.metadata.resourceVersion,
      (n) => TARGET_OF.has(n),
    );
    const crdList = await crdApi.listCustomResourceDefinition();
    crdVersions = await followVersions<Crd>(
      admin,
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
      crdList.metadata?.resourceVersion ?? '',
      (n) => TARGETS.includes(n),
    );
    start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
    start('router', ['router']);
    start('assign', ['assign'], kubeconfigs.assign);
    start('lease-aggregate', ['lease-aggregate'], kubeconfigs['lease-aggregate']);
    start('handover', ['handover'], kubeconfigs.handover);
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
    await createInstance(A, { default: true });
    await createInstance(B, {});
    for (const t of TARGETS) await createTarget(t);
    for (const [i, t] of TARGETS.entries())
      await createCustom(CONFIGS, {
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name: configName(i) },
        spec: renameConfigSpec(t),
      } as { metadata: { name: string } });
    await settled('every target first applied where the pool {a, b} puts it', (t) => HOME.get(t) ?? '');
  }, 180_000);

  it('a pin: `kubectl wait --for=condition=HandoverReady` returns once the target names the pinned instance', async () => {
    const [first] = TARGETS;
    const pin = other(HOME.get(first ?? ''));
    // Assign paused: the pin is made and no handler has recorded anything about it yet.
    const assign = processes.get('assign');
    assign?.kill('SIGSTOP');
    try {
      for (const [i, t] of TARGETS.entries())
        await patchCustom(CONFIGS, configName(i), {
          spec: { webhookServerRef: { name: other(HOME.get(t)) } },
        });
      const now = await kubectlWait(configName(0), ['condition=HandoverReady'], '0');
      expect(now.code, `the status claimed the move done before it began: ${now.stdout}`).not.toBe(0);
      expect(now.service).toBe(webhookServiceName(HOME.get(first ?? '') ?? ''));
    } finally {
      assign?.kill('SIGCONT');
    }
    const waited = await kubectlWait(configName(0), ['condition=HandoverReady']);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.service, 'kubectl wait returned before the move').toBe(webhookServiceName(pin));
    expect(waited.status?.assignedWebhookServer).toBe(pin);
    console.log(
      `[handover-ready] pin: kubectl wait returned after ${waited.ms} ms, the target naming ${pin}`,
    );
    await settled('every pinned target moved', (t) => other(HOME.get(t)));
  }, 120_000);

  it('an unpin: the same wait returns once the target is back where the pool puts it', async () => {
    for (const i of TARGETS.keys())
      await patchCustom(CONFIGS, configName(i), { spec: { webhookServerRef: null } });
    const waited = await kubectlWait(configName(0), ['condition=HandoverReady']);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.service, 'kubectl wait returned before the move').toBe(
      webhookServiceName(HOME.get(TARGETS[0] ?? '') ?? ''),
    );
    console.log(`[handover-ready] unpin: kubectl wait returned after ${waited.ms} ms`);
    await settled('every unpinned target back home', (t) => HOME.get(t) ?? '');
  }, 120_000);

  it('an instance joins the pool: waiting for the assignment, then for HandoverReady, returns once the target names it', async () => {
    // Rendered outside the pool first (its trust-bundle grant in place), then it joins.
    await createInstance(C, { sharding: { enabled: false } });
    const assignedC = `jsonpath={.status.assignedWebhookServer}=${C}`;
    // The handover paused: assign records the new instance, and nothing has moved yet.
    const handover = processes.get('handover');
    handover?.kill('SIGSTOP');
    try {
      await patchCustom('conversionwebhookservers', C, { spec: { sharding: { enabled: true } } });
      await waitFor('assign records the newcomer', async () =>
        (await configStatus(configName(0)))?.assignedWebhookServer === C ? true : undefined,
      );
      const now = await kubectlWait(configName(0), [assignedC, 'condition=HandoverReady'], '0');
      expect(now.code, `the status claimed the move done before it began: ${now.stdout}`).not.toBe(0);
      expect(now.service).not.toBe(webhookServiceName(C));
    } finally {
      handover?.kill('SIGCONT');
    }
    const waited = await kubectlWait(configName(0), [assignedC, 'condition=HandoverReady']);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.service, 'kubectl wait returned before the move').toBe(webhookServiceName(C));
    console.log(`[handover-ready] pool change: kubectl wait returned after ${waited.ms} ms`);
    await settled('every target moved to the newcomer', () => C);
  }, 120_000);

  it('the instance leaves the pool: every target moves back', async () => {
    await patchCustom('conversionwebhookservers', C, { spec: { sharding: { enabled: false } } });
    await settled('every target back where the pool {a, b} puts it', (t) => HOME.get(t) ?? '');
  }, 120_000);

  it('a CRD deleted and created again: HandoverReady says TargetNotFound, then a verdict about the new one', async () => {
    const [target] = TARGETS;
    const config = configName(0);
    if (!target) throw new Error('no target');
    await crdApi.deleteCustomResourceDefinition({ name: target });
    const deleted = await waitFor('the deletion seen', async () =>
      crdVersions.versions.find((v) => v.type === 'DELETED' && v.object.metadata.name === target),
    );
    const said = await waitFor('TargetNotFound', async () =>
      configVersions.versions.find(
        (v) =>
          v.object.metadata.name === config &&
          v.rv > deleted.rv &&
          handoverReady(v.object.status)?.reason === 'TargetNotFound',
      ),
    );
    expect(handoverReady(said.object.status)?.status).toBe('False');
    reacting.set(config, [{ from: deleted.rv, to: said.rv }]);
    const between = configVersions.versions.filter(
      (v) => v.object.metadata.name === config && v.rv > deleted.rv && v.rv < said.rv,
    );
    console.log(
      `[handover-ready] deleted CRD: TargetNotFound ${said.rv - deleted.rv} revisions later, ${between.length} config versions between`,
    );

    await waitFor('the CRD gone', async () =>
      crdApi.readCustomResourceDefinition({ name: target }).then(
        () => undefined,
        (err: unknown) => (isNotFound(err) ? true : undefined),
      ),
    );
    await createTarget(target);
    await settled('the new CRD first applied', (t) => HOME.get(t) ?? '');
    const fresh = await crdApi.readCustomResourceDefinition({ name: target });
    expect(fresh.metadata?.uid).not.toBe(deleted.object.metadata.uid);
    expect(verdictOf(fresh), 'the repoint of the new CRD records its verdict on it').toMatchObject({
      instance: HOME.get(target),
      reason: 'FirstApply',
    });
    expect(handoverReady(await configStatus(config))).toMatchObject({ status: 'True', reason: 'FirstApply' });
  }, 120_000);

  it('on every config version the watch saw, HandoverReady=True named the assigned instance, and the CRD named its Service', () => {
    expect(configVersions.broken).toBeUndefined();
    expect(crdVersions.broken).toBeUndefined();
    const seen = configVersions.versions.filter((v) => v.type !== 'DELETED');
    const judged: string[] = [];
    let trueVersions = 0;
    let inWindow = 0;
    for (const v of seen) {
      const s = v.object.status;
      const ready = handoverReady(s);
      if (ready?.status !== 'True') continue;
      if ((reacting.get(v.object.metadata.name) ?? []).some((w) => v.rv > w.from && v.rv < w.to)) {
        inWindow++;
        continue;
      }
      trueVersions++;
      const target = TARGET_OF.get(v.object.metadata.name) ?? '';
      const crd = versionAt(crdVersions.versions, target, v.rv);
      const named =
        crd?.type === 'DELETED'
          ? '(deleted)'
          : crd?.object.spec.conversion?.webhook?.clientConfig?.service?.name;
      const at = `${v.object.metadata.name}@${v.rv}: HandoverReady True ${ready.reason} "${ready.message}"`;
      if (s?.assignedWebhookServer !== s?.handoverDestination)
        judged.push(
          `${at} beside assignedWebhookServer ${s?.assignedWebhookServer}, handoverDestination ${s?.handoverDestination}`,
        );
      else if (named !== webhookServiceName(s?.assignedWebhookServer ?? ''))
        judged.push(`${at}, assigned ${s?.assignedWebhookServer}, while ${target}@${crd?.rv} named ${named}`);
    }
    // Each config: first assigned, pinned, unpinned, to the newcomer and back: five new instances.
    const moves = [...TARGET_OF.keys()].map(
      (config) =>
        seen
          .filter((v) => v.object.metadata.name === config)
          .map((v) => v.object.status?.assignedWebhookServer)
          .filter((x, i, xs) => x !== undefined && x !== xs[i - 1]).length,
    );
    console.log(
      `[handover-ready] ${seen.length} config versions and ${crdVersions.versions.length} CRD versions observed; ` +
        `${trueVersions} with HandoverReady True judged (${inWindow} in a deletion's reaction window), ${judged.length} saying two things`,
    );
    expect(judged, 'a True HandoverReady about another instance than the status or the target names').toEqual(
      [],
    );
    expect(moves, 'the moves did not happen').toEqual(TARGETS.map(() => 5));
    expect(trueVersions, 'nothing was judged').toBeGreaterThanOrEqual(N * 5);
  });
});
