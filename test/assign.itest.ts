// Assignment acting end to end: `switchyard watch` records, two `switchyard router` processes
// turn records into work, two `switchyard assign` processes (under the ServiceAccount and RBAC
// of deploy/rbac/assign.yaml) write status and emit handover work. A pool of three instances and
// 60 unpinned configs; then a fourth member, a change that touches nothing, a SIGKILL mid-work.
// Handover work is read by a test consumer on work.handover.> (no handover handler runs yet, so
// this consumer is the only one on those subjects).
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION } from '../src/api/constants.ts';
import type { HandoverWork } from '../src/bus/messages.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { fleetOf, type InstanceLike, resolveIn } from '../src/core/assignment.ts';
import { ASSIGN_WORK } from '../src/handlers/assign/wakes.ts';
import { workIdPrefix } from '../src/handlers/enqueue-work.ts';
import { isNotFound } from '../src/kube/errors.ts';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';
import { kubeConfigFromToken, writeKubeConfig } from '../src/local-cluster/kubeconfig.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { natsConnectOptions } from '../src/local-cluster/nats-client.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type AuditEvent, auditLogFromNow } from './support/audit-log.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { createReadyEndpointSlice } from './support/data-plane.ts';
import { useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';

const NAMESPACE = 'switchyard-system';
const ASSIGN_USER = `system:serviceaccount:${NAMESPACE}:switchyard-assign`;
const RATE = 10;
const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const run = randomBytes(3).toString('hex');
const [A, B, C, D] = ['a', 'b', 'c', 'd'].map((n) => `pool-${run}-${n}`) as [string, string, string, string];
const CONFIGS = Array.from({ length: 60 }, (_, i) => ({
  name: `cfg-${run}-${i}`,
  target: `w${i}-${run}.example.com`,
}));
const PINNED = { name: `pinned-${run}`, target: `pinned-${run}.example.com`, pin: B };
const logger = pino({ level: 'warn' });
const processes: Record<string, ManagedProcess> = {};
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;
let nc: NatsConnection;
const handoverWork: Array<{ work: HandoverWork; atMs: number }> = [];
/** Config work as the pacer releases it into WORK (seen on a plain subscription, as it is published). */
const releasedConfigWork: Array<{ key: string; atMs: number }> = [];
/** Every assign work item published, any key. */
let assignWorkPublished = 0;

function start(name: string, args: string[], kubeconfig?: string): ManagedProcess {
  const p = switchyardProcess({
    name,
    args,
    natsUrl: cluster.info.natsUrl,
    natsCaFile: cluster.info.natsCaFile,
    natsCredentialsDir: cluster.info.natsCredentialsDir,
    kubeconfig,
    logFile: join(cluster.info.dir, 'logs', `${name}.log`),
    log: logger,
  });
  processes[name] = p;
  return p;
}

const instanceBody = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'ConversionWebhookServer',
  metadata: { name },
  spec: { namespace: 'default', ...spec },
});
const configBody = (name: string, target: string, pin?: string) => ({
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
    ...(pin && { webhookServerRef: { name: pin } }),
  },
});
/** What this file created, deleted afterwards: later files share the cluster (a default instance left here would make theirs a second one). */
const created: { plural: string; name: string }[] = [];
const create = async (plural: string, body: { metadata: { name: string } }) => {
  const result = await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });
  created.push({ plural, name: body.metadata.name });
  return result;
};

interface Listed {
  metadata: { name: string };
  spec: InstanceLike['spec'] & { targetCRD?: { name: string }; webhookServerRef?: { name: string } };
  status?: {
    assignedWebhookServer?: string;
    assignedTargetCount?: number;
    assignedTargets?: string[];
    conditions?: { type: string; reason: string }[];
  };
}
async function list(plural: string): Promise<Listed[]> {
  const r = (await custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural })) as {
    items: Listed[];
  };
  return r.items;
}

/** Configs whose status does not name what the pure resolver says over the live fleet. */
async function misassigned(): Promise<string[]> {
  const fleet = fleetOf(await list('conversionwebhookservers'));
  const wrong: string[] = [];
  for (const c of await list('crdconversionconfigs')) {
    const r = resolveIn(fleet, {
      target: c.spec.targetCRD?.name ?? '',
      pinnedTo: c.spec.webhookServerRef?.name,
    });
    if (!r.ok || c.status?.assignedWebhookServer !== r.instance) wrong.push(c.metadata.name);
  }
  return wrong;
}
const allAssigned = (what: string, timeoutMs = 60_000) =>
  waitFor(what, async () => ((await misassigned()).length === 0 ? true : undefined), {
    timeoutMs,
    intervalMs: 500,
  });

const statusWrites = (events: AuditEvent[]) =>
  events.filter(
    (e) =>
      e.user.username === ASSIGN_USER &&
      e.stage === 'ResponseComplete' &&
      e.verb === 'patch' &&
      e.requestURI.includes('/status'),
  );

async function lastRecordSeq(subject: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  return waitFor(
    `a record on ${subject}`,
    async () => (await jsm.streams.getMessage(STREAMS.records, { last_by_subj: subject }))?.seq,
  );
}

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const file of ['rbac/assign.yaml', 'rbac/router.yaml']) {
    const docs = loadAllYaml(
      await readFile(join(PROJECT_ROOT, 'deploy', file), 'utf8'),
    ) as KubernetesObject[];
    for (const o of docs) await objects.create(o);
  }
  const token = await core.createNamespacedServiceAccountToken({
    name: 'switchyard-assign',
    namespace: NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const assignKubeconfig = join(cluster.info.dir, `assign-${run}.kubeconfig`);
  await writeKubeConfig(assignKubeconfig, cluster.info.endpoint, ASSIGN_USER, token.status?.token ?? '');

  nc = await connect(natsConnectOptions(cluster.info));
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(STREAMS.work, {
    durable_name: 'test-handover',
    filter_subject: 'work.handover.>',
    ack_policy: AckPolicy.Explicit,
  });
  const messages = await (await jetstream(nc).consumers.get(STREAMS.work, 'test-handover')).consume();
  void (async () => {
    for await (const m of messages) {
      handoverWork.push({ work: m.json<HandoverWork>(), atMs: m.info.timestampNanos / 1e6 });
      m.ack();
    }
  })();

  nc.subscribe('work.assign.>', {
    callback: (_err, m) => {
      const key = m.json<{ key: string }>().key;
      assignWorkPublished++;
      // The look each config's own status write wakes (status-echo.ts) is not the pacer's release.
      const echo = m.headers?.get('Nats-Msg-Id').startsWith(`${workIdPrefix(ASSIGN_WORK, 'echo')}:`) ?? false;
      if (key.startsWith('crdconfig/') && !echo) releasedConfigWork.push({ key, atMs: Date.now() });
    },
  });

  start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
  for (const i of [1, 2]) start(`router-${i}`, ['router']);
  for (const i of [1, 2])
    start(`assign-${i}`, ['assign', `--bus.fanoutRatePerSecond=${RATE}`], assignKubeconfig);
  await waitFor('router and assign consumers', async () => {
    const names = new Set<string>();
    for await (const c of jsm.consumers.list(STREAMS.work)) names.add(c.name);
    for await (const c of jsm.consumers.list(STREAMS.records)) names.add(c.name);
    return names.has('router') && names.has('assign-p0') ? true : undefined;
  });
});

afterAll(async () => {
  await Promise.all(Object.values(processes).map((p) => p.stop(5_000)));
  await nc?.close();
  for (const { plural, name } of created.reverse())
    await custom
      .deleteClusterCustomObject({ group: GROUP, version: VERSION, plural, name })
      .catch((err: unknown) => {
        if (!isNotFound(err)) throw err;
      });
});

describe('assign, end to end', () => {
  it('a pool of 3 and 60 configs: every config’s status names what the pure resolver says', async () => {
    await create('conversionwebhookservers', instanceBody(A, { default: true, sharding: { enabled: true } }));
    await create('conversionwebhookservers', instanceBody(B, { sharding: { enabled: true } }));
    await create('conversionwebhookservers', instanceBody(C, { sharding: { enabled: true, weight: 2 } }));
    // Each serves from a ready Pod, as a running fleet does: a move between them is then held
    // only while its destination has none (the 4th member's join below).
    for (const instance of [A, B, C])
      await createReadyEndpointSlice(admin, 'default', instance, [`${instance}-1`]);
    for (const c of CONFIGS) await create('crdconversionconfigs', configBody(c.name, c.target));
    await create('crdconversionconfigs', configBody(PINNED.name, PINNED.target, PINNED.pin));
    await allAssigned('61 configs assigned as the resolver says');
    const instances = await waitFor('instance lists', async () => {
      const l = (await list('conversionwebhookservers')).filter((i) => [A, B, C].includes(i.metadata.name));
      const total = l.reduce((n, i) => n + (i.status?.assignedTargetCount ?? 0), 0);
      return total === 61 ? l : undefined;
    });
    expect(instances.every((i) => (i.status?.assignedTargetCount ?? 0) > 0)).toBe(true);
    // Every config got exactly one first-assignment handover item.
    await waitFor('61 first-assignment handover items', () => (handoverWork.length >= 61 ? true : undefined));
    expect(new Set(handoverWork.map((h) => h.work.key)).size).toBe(61);
  });

  it('a 4th member: its moves wait for its first ready Pod, then exactly the configs it wins move, each announced once, released at the paced rate; the pinned one stays', async () => {
    const before = handoverWork.length;
    const releasedBefore = releasedConfigWork.length;
    const fleetBefore = fleetOf(await list('conversionwebhookservers'));
    await create('conversionwebhookservers', instanceBody(D, { sharding: { enabled: true } }));
    const fleetAfter = fleetOf(await list('conversionwebhookservers'));
    const won = CONFIGS.filter((c) => {
      const was = resolveIn(fleetBefore, { target: c.target });
      const is = resolveIn(fleetAfter, { target: c.target });
      if (is.ok && was.ok && is.instance !== was.instance) expect(is.instance).toBe(D);
      return is.ok && is.instance === D;
    }).map((c) => c.target);
    expect(won.length).toBeGreaterThan(5);
    // D has no ready Pod: the join's wave decides every move it wins and records none of them.
    await waitFor('the join wave released', () =>
      releasedConfigWork.length - releasedBefore >= won.length ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const onD = (await list('crdconversionconfigs')).filter((c) => c.status?.assignedWebhookServer === D);
    expect(
      onD.map((c) => c.metadata.name),
      'a move recorded onto an instance with no ready Pod',
    ).toEqual([]);
    expect(handoverWork.slice(before).filter((h) => h.work.to !== undefined)).toEqual([]);
    // Its first ready Pod releases them, paced.
    const releasedAtReady = releasedConfigWork.length;
    await createReadyEndpointSlice(admin, 'default', D, [`${D}-1`]);
    await allAssigned('configs moved to the 4th member');
    // Assign's announcements name the move (`to`); the router also wakes the handover, with the
    // target alone, when the status write recording the new instance is recorded.
    const announced = () => handoverWork.slice(before).filter((h) => h.work.to !== undefined);
    await waitFor('handover work for the moved configs', () =>
      announced().length >= won.length ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const moves = announced();
    expect(moves.map((h) => h.work.key).sort()).toEqual([...won].sort());
    expect(moves.every((h) => h.work.to === D && h.work.from !== undefined)).toBe(true);
    // The pacer's promise is about what it releases (handler latency then adds jitter to the
    // handover items): at most ceil(W·rate)+1 releases in any window of W. They are timed here as
    // this process receives them, which on a loaded machine can delay one release into the next
    // one's slot: one release more than the promise in a window of W is that jitter, two are not.
    const times = releasedConfigWork
      .slice(releasedAtReady)
      .map((r) => r.atMs)
      .sort((a, b) => a - b);
    const spanS = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000;
    const maxInAnySecond = Math.max(...times.map((t) => times.filter((u) => u >= t && u < t + 1000).length));
    console.log(
      `[assign] ${won.length} moves released over ${spanS.toFixed(2)} s (${((won.length - 1) / spanS).toFixed(1)}/s), at most ${maxInAnySecond} in any second, rate ${RATE}/s`,
    );
    expect(spanS).toBeGreaterThanOrEqual(((won.length - 1) / RATE) * 0.8);
    expect(maxInAnySecond).toBeLessThanOrEqual(RATE + 2);
    const pinned = (await list('crdconversionconfigs')).find((c) => c.metadata.name === PINNED.name);
    expect(pinned?.status?.assignedWebhookServer).toBe(B);
    expect(pinned?.status?.conditions?.find((c) => c.type === 'Assigned')?.reason).toBe('Pinned');
  });

  it('an instance change that touches nothing the resolver reads produces no assign work and no status write', async () => {
    const jsm = await jetstreamManager(nc);
    const writesBefore = statusWrites(await audit.all()).length;
    const assignWorkBefore = assignWorkPublished;
    const recordBefore = await lastRecordSeq(`k8s.webhookserver._.${B}`);
    await custom.patchClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: B,
      body: [{ op: 'add', path: '/spec/replicas', value: 3 }],
    });
    await waitFor('the replicas change recorded', async () =>
      (await lastRecordSeq(`k8s.webhookserver._.${B}`)) > recordBefore ? true : undefined,
    );
    // The router has routed it once its consumer has nothing pending.
    await waitFor('the router caught up', async () =>
      (await jsm.consumers.info(STREAMS.records, 'router')).num_pending === 0 ? true : undefined,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    // (lease-aggregate may be woken by a spec change; assign is not.)
    expect(assignWorkPublished).toBe(assignWorkBefore);
    expect(statusWrites(await audit.all()).length).toBe(writesBefore);
  });

  it('two replicas each, one assign and one router SIGKILLed mid-rebalance: all work completes, no conflicting writes', async () => {
    const writesBefore = statusWrites(await audit.all()).length;
    await custom.deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: D,
    });
    await new Promise((r) => setTimeout(r, 400));
    for (const name of ['assign-1', 'router-1']) {
      const pid = processes[name]?.pid;
      if (pid) process.kill(pid, 'SIGKILL');
    }
    await allAssigned('configs moved back from the removed member after the SIGKILL', 90_000);
    const writes = statusWrites(await audit.all()).slice(writesBefore);
    const conflicts = writes.filter((e) => e.responseStatus?.code === 409);
    console.log(`[assign] after SIGKILL: ${writes.length} status writes, ${conflicts.length} conflicts`);
    expect(conflicts).toEqual([]);
    expect(writes.every((e) => (e.responseStatus?.code ?? 0) < 300)).toBe(true);
  });

  it('the assign identity cannot write specs or read secrets; the router identity has nothing', async () => {
    const assignToken = await core.createNamespacedServiceAccountToken({
      name: 'switchyard-assign',
      namespace: NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const asAssign = kubeConfigFromToken(cluster.info.endpoint, ASSIGN_USER, assignToken.status?.token ?? '');
    const c = asAssign.makeApiClient(CustomObjectsApi);
    await expect(
      c.patchClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: 'crdconversionconfigs',
        name: PINNED.name,
        body: [{ op: 'remove', path: '/spec/webhookServerRef' }],
      }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      asAssign.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: NAMESPACE }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      c.listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'crdconversionconfigs' }),
    ).rejects.toMatchObject({ code: 403 });
    const routerUser = `system:serviceaccount:${NAMESPACE}:switchyard-router`;
    const routerToken = await core.createNamespacedServiceAccountToken({
      name: 'switchyard-router',
      namespace: NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const asRouter = kubeConfigFromToken(cluster.info.endpoint, routerUser, routerToken.status?.token ?? '');
    await expect(
      asRouter
        .makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: GROUP, version: VERSION, plural: 'conversionwebhookservers' }),
    ).rejects.toMatchObject({ code: 403 });
    const denied = (await audit.all()).filter(
      (e) =>
        e.user.username === ASSIGN_USER &&
        e.userAgent?.startsWith('switchyard/assign') &&
        e.responseStatus?.code === 403,
    );
    expect(denied.map((e) => e.requestURI)).toEqual([]);
  });

  it('a config deleted and created again with the same name and spec is assigned, and its instance counts it', async () => {
    const { name, target } = CONFIGS[0] as { name: string; target: string };
    const configOf = async () => (await list('crdconversionconfigs')).find((c) => c.metadata.name === name);
    const instanceOf = async (instance: string) =>
      (await list('conversionwebhookservers')).find((i) => i.metadata.name === instance);
    const owner = (await configOf())?.status?.assignedWebhookServer;
    if (owner === undefined) throw new Error(`${name} is not assigned before the test`);
    const counted = (await instanceOf(owner))?.status?.assignedTargetCount ?? 0;
    await custom.deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      name,
    });
    await waitFor(`${owner} no longer counts ${target}`, async () => {
      const status = (await instanceOf(owner))?.status;
      return status?.assignedTargetCount === counted - 1 && !status.assignedTargets?.includes(target)
        ? true
        : undefined;
    });
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      body: configBody(name, target),
    });
    const assigned = await waitFor(
      `the re-created ${name} assigned`,
      async () => (await configOf())?.status?.assignedWebhookServer,
      { timeoutMs: 30_000 },
    );
    expect(assigned).toBe(owner);
    const status = await waitFor(`${owner} counts ${target} again`, async () => {
      const s = (await instanceOf(owner))?.status;
      return s?.assignedTargetCount === counted ? s : undefined;
    });
    expect(status.assignedTargets).toContain(target);
  });
});
