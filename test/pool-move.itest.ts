// The acceptance check of issue 11, every handler a real process: `switchyard watch` (admin)
// records, `router` turns records into work, and `assign`, `lease-aggregate`, `handover` and
// `config-status` act, each under the ServiceAccount token of its deploy/rbac manifest and each
// (the router too) as two replicas side by side. The test plays the data plane (no webhook-server
// exists yet, so `instances` does not run): per instance the serving Secret with the ca.crt the
// handover reads (and the Role letting it, rendered as the instances handler renders it), an
// EndpointSlice naming its ready Pods, and per Pod a served-set Lease (test/support/served-lease.ts).
//
// A pool of three instances and 60 unpinned targets: every target's conversion names the Service
// of the instance the pure resolver picks. A fourth member then moves exactly the targets it
// wins, each through a verified handover (HandoverReady), and the recorded stream shows no moved
// target naming the new Service before the last of its ready Pods reported. The fourth member
// then leaves the pool and one replica of every worker is SIGKILLed as the first target moves
// back: every target still lands, patched once per move, every status field written by its one
// manager, and no transition recorded as two Events.
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type EventsV1Event,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, servedLeaseName, VERSION, webhookServiceName } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import { decisionSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { fleetOf, type InstanceLike, resolveIn } from '../src/core/assignment.ts';
import { compareNames } from '../src/core/name-list.ts';
import type { Simulation } from '../src/core/simulate.ts';
import type { TargetExplanation } from '../src/handlers/explain.ts';
import { isConflict, isNotFound } from '../src/kube/errors.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { natsCredentialFlags } from '../src/local-cluster/nats-credentials.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import type { ReplayReport } from '../src/replay/replay.ts';
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
import { runSwitchyard, switchyardProcess } from './support/processes.ts';
import { followTargetRecords, type TargetRecord } from './support/records.ts';
import { ServedLeasePublisher } from './support/served-lease.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const crdApi = admin.makeApiClient(ApiextensionsV1Api);
const logger = pino({ level: 'warn' });
const N = 60;
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
/** Every worker on the bus runs as two replicas; `<worker>-1` of each is SIGKILLed mid-move. */
const WORKERS = ['router', ...COMPONENTS];
const processes = new Map<string, ManagedProcess>();
const publishers: ServedLeasePublisher[] = [];
/** What this file created, deleted afterwards: later files share the cluster. */
const cleanups: Array<() => Promise<unknown>> = [];

/** Records of the targets and Leases, in stream order. */
const records: TargetRecord[] = [];

function start(name: string, args: string[], kubeconfig?: string): void {
  const p = switchyardProcess({
    name,
    args,
    natsUrl: bus.server.url,
    natsCredentialsDir: bus.natsCredentialsDir,
    kubeconfig,
    logFile: join(cluster.info.dir, 'logs', `pool-move-${name}.log`),
    log: logger,
  });
  processes.set(name, p);
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

/** What the instances handler and the data plane would write: the serving Secret, the ready Pods' slice. */
async function dataPlane(instance: string, pods: string[]): Promise<void> {
  await createServingSecret(admin, namespace, instance);
  await createReadyEndpointSlice(admin, namespace, instance, pods);
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
  for (const c of COMPONENTS)
    kubeconfigs[c] = await componentIdentityFile(
      cluster.info,
      admin,
      c,
      join(cluster.info.dir, `pool-move-${c}-${run}.kubeconfig`),
      cleanups,
    );
  // A NATS server of the file's own: its durable consumers (a work queue admits one per subject) stay here.
  bus = await startOwnBus();
  const stopRecords = await followTargetRecords(bus.js, ['crd', 'lease'], records, 'new');
  cleanups.push(async () => stopRecords());

  start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
  for (const replica of [1, 2]) {
    start(`router-${replica}`, ['router']);
    start(`assign-${replica}`, ['assign', '--bus.fanoutRatePerSecond=50'], kubeconfigs.assign);
    start(`lease-aggregate-${replica}`, ['lease-aggregate'], kubeconfigs['lease-aggregate']);
    start(`handover-${replica}`, ['handover'], kubeconfigs.handover);
    start(`config-status-${replica}`, ['config-status'], kubeconfigs['config-status']);
  }
  const jsm = bus.jsm;
  await waitFor(
    'both replicas of every worker pulling',
    async () => {
      const consumers: { name: string; num_waiting: number }[] = [];
      for await (const c of jsm.consumers.list(STREAMS.work)) consumers.push(c);
      for await (const c of jsm.consumers.list(STREAMS.records)) consumers.push(c);
      const pulling = (p: string) => consumers.some((c) => c.name.startsWith(p) && c.num_waiting >= 2);
      return WORKERS.every(pulling) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}, 120_000);

afterAll(async () => {
  for (const p of publishers) await p.stop();
  await Promise.all([...processes.values()].map((p) => p.stop(5_000)));
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await bus?.stop();
  // A default instance left behind would make a later file's default a second one.
  const left = (await listInstances()).filter((i) => i.metadata.name.startsWith(`pm-${run}-`));
  if (left.length > 0) throw new Error(`instances left behind: ${left.map((i) => i.metadata.name)}`);
}, 120_000);

let before = new Map<string, string>();
/** The targets the 4th member wins. */
let won: string[] = [];

describe('a pool moves without a failed conversion', () => {
  it(`a pool of 3 and ${N} targets: every target names the Service of the instance the resolver picks`, async () => {
    await instance(A, { default: true }, [`${A}-1`, `${A}-2`]);
    await instance(B, {}, [`${B}-1`, `${B}-2`]);
    await instance(C, {}, [`${C}-1`, `${C}-2`]);
    for (const t of TARGETS) {
      await crdApi.createCustomResourceDefinition({ body: gizmoCrd(t) });
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
    // The operator's plan of the same change, from the live cluster, before it is made.
    const simulated = await runSwitchyard(['simulate', `--add=${D}:1`, '-o', 'json'], {
      KUBECONFIG: cluster.info.kubeConfigs.admin,
    });
    expect(simulated.code, simulated.stderr).toBe(0);
    const plan = JSON.parse(simulated.stdout) as Simulation;
    const seqBefore = (await bus.jsm.streams.info(STREAMS.records)).state.last_seq;
    await createInstance(D);
    const after = await resolved();
    won = TARGETS.filter((t) => after.get(t) !== before.get(t));
    expect(
      plan.moves.filter((m) => TARGETS.includes(m.target)),
      '`switchyard simulate` predicted exactly these moves',
    ).toEqual(
      won
        .map((target) => ({ target, from: before.get(target), to: D }))
        .sort((a, b) => compareNames(a.target, b.target)),
    );
    for (const t of won) expect(after.get(t), `${t} moved to another than the new member`).toBe(D);
    for (const t of TARGETS)
      expect(resolveIn(fleetBefore, { target: t })).toMatchObject({ instance: before.get(t) });
    expect(won.length, 'the new member wins some targets').toBeGreaterThan(0);
    expect(won.length).toBeLessThan(N);

    // d2 is ready and has not reported: nothing moves, however long assign has been done.
    await new Promise((r) => setTimeout(r, D2_DELAY_MS));
    const waiting = await servicesNow();
    for (const t of won)
      expect(waiting.get(t), `${t} moved before ${D2} reported`).toBe(
        webhookServiceName(before.get(t) ?? ''),
      );
    const pending = await statuses();
    // A young wait on the destination's replicas is not written: assign's reset says it waits.
    for (const t of won) expect(handoverReady(pending.get(t))?.reason, t).toBe('AssignmentChanged');

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

  it('one replica of every worker SIGKILLed mid-move: every target still lands, each through a verified handover', async () => {
    const seqBefore = (await bus.jsm.streams.info(STREAMS.records)).state.last_seq;
    const movingBack = (r: TargetRecord) =>
      r.kind === 'crd' && r.seq > seqBefore && won.includes(r.name) && r.service !== webhookServiceName(D);
    await custom.patchClusterCustomObject(
      {
        group: GROUP,
        version: VERSION,
        plural: 'conversionwebhookservers',
        name: D,
        body: { spec: { sharding: { enabled: false } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    // Killed the moment the first target is recorded moving back: the rest is in flight somewhere.
    await waitFor('the first target moving back', async () => (records.some(movingBack) ? true : undefined), {
      timeoutMs: 60_000,
      intervalMs: 5,
    });
    const killedAtSeq = (await bus.jsm.streams.info(STREAMS.records)).state.last_seq;
    for (const worker of WORKERS) processes.get(`${worker}-1`)?.kill('SIGKILL');

    const back = await everyTargetWhereResolved('the targets of the removed member back where they were');
    for (const t of TARGETS) expect(back.get(t), t).toBe(before.get(t));
    // A target the killed replica patched but had not yet written the verdict of is found already
    // moved by the replica that takes its work over: it states the verdict the repoint left on
    // the target (api/handover-verdict.ts), so not one is lost to NoMove.
    const verdicts = await waitFor(
      'every moved-back target HandoverReady True and verified',
      async () => {
        const s = await statuses();
        const reasons = won.map((t) => handoverReady(s.get(t)));
        return reasons.every((c) => c?.status === 'True' && ['HandoverReady', 'NoMove'].includes(c.reason))
          ? reasons
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const noMove = verdicts.filter((c) => c?.reason === 'NoMove').length;
    expect(noMove, 'a verdict lost with the killed replica').toBe(0);
    const afterKill = won.filter(
      (t) => !records.some((r) => movingBack(r) && r.name === t && r.seq <= killedAtSeq),
    );
    console.log(
      `[pool-move] SIGKILL of one replica of each worker with ${afterKill.length}/${won.length} moves back still to do; ` +
        `${noMove} verdicts lost with it (NoMove)`,
    );
    expect(afterKill.length, 'the kill came after the work was done: nothing was tested').toBeGreaterThan(0);
  }, 180_000);

  it('every target was patched once per move, by the handover identity only, and no handler was refused a request', async () => {
    const users = new Set(COMPONENTS.map(componentUser));
    const expected = N + 2 * won.length; // a first apply each, the moves to the 4th member and back
    // A patch in flight when its handover replica was SIGKILLed ends in the audit log as a 5xx
    // (the apiserver's handler saw its client go), whether or not etcd committed it: committed,
    // the redelivered attempt finds the target up to date and patches nothing.
    const cutShort = (e: AuditEvent) => targetPatchAttempt(e) && (e.responseStatus?.code ?? 0) >= 500;
    const events = await audit.waitFor(
      'the conversion patches',
      (all) => all.filter((e) => targetPatch(e) || cutShort(e)),
      expected,
    );
    await new Promise((r) => setTimeout(r, 2_000));
    const all = await audit.all();
    const [patched, cut] = [all.filter(targetPatch), all.filter(cutShort)];
    expect(patched.length, 'a patch the target already said').toBeLessThanOrEqual(expected);
    expect(patched.length + cut.length, 'a move without its patch').toBeGreaterThanOrEqual(expected);
    expect([...new Set(events.map((e) => e.user.username))]).toEqual([componentUser('handover')]);
    const refused = (await audit.all()).filter(
      (e) => users.has(e.user.username) && e.stage === 'ResponseComplete' && e.responseStatus?.code === 403,
    );
    expect(refused.map((e) => `${e.user.username} ${e.verb} ${e.requestURI}`)).toEqual([]);
  });

  it('no conflicting writes: each target named its Services in move order, each status field has one manager', async () => {
    for (const t of TARGETS) {
      const named = records.filter((r) => r.kind === 'crd' && r.name === t && r.service !== undefined);
      const order = named.map((r) => r.service).filter((x, i, xs) => i === 0 || xs[i - 1] !== x);
      const home = webhookServiceName(before.get(t) ?? '');
      expect(order, t).toEqual(won.includes(t) ? [home, webhookServiceName(D), home] : [home]);
    }
    const owners = new Map<string, Set<string>>();
    const r = (await custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
    })) as { items: { metadata: { name: string; managedFields?: ManagedFields[] } }[] };
    for (const config of r.items.filter((c) => c.metadata.name.startsWith(`pm-${run}-`)))
      for (const entry of config.metadata.managedFields ?? [])
        if (entry.subresource === 'status')
          for (const field of statusFieldsOf(entry.fieldsV1))
            owners.set(field, (owners.get(field) ?? new Set()).add(entry.manager ?? ''));
    expect(owners.size, 'no status field recorded').toBeGreaterThan(3);
    for (const [field, managers] of owners) expect([...managers].sort(), field).toEqual(statusOwners(field));
  });

  it('Events per instance, not per target: each list change and each batch of repoints recorded once, none lost before the kill', async () => {
    const instances = new Set([A, B, C, D]);
    const repointed = (list: EventsV1Event[], reason: string) =>
      list
        .filter((e) => e.action === 'RepointConversion' && e.reason === reason)
        .reduce((n, e) => n + Number(/^(\d+) targets now convert/.exec(e.note ?? '')?.[1] ?? Number.NaN), 0);
    const events = await waitFor('the Events of every move before the kill', async () => {
      const list = (
        await admin.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: 'default' })
      ).items.filter((e) => instances.has(e.regarding?.name ?? ''));
      return repointed(list, 'FirstApply') >= N && repointed(list, 'HandoverReady') >= won.length
        ? list
        : undefined;
    });
    expect(events.every((e) => e.regarding?.kind === 'ConversionWebhookServer')).toBe(true);
    const transitions = events.map(
      (e) => `${e.regarding?.name} ${e.reportingController} ${e.reason} ${e.note}`,
    );
    expect(transitions.length, 'a transition recorded twice').toBe(new Set(transitions).size);
    // Every first apply came before the kill, in batches recorded once each.
    expect(repointed(events, 'FirstApply')).toBe(N);
    // The moves to D before the kill, and at most the moves back after it (a killed handover's
    // batch not yet recorded is lost with it: Events are discardable).
    expect(repointed(events, 'HandoverReady')).toBeGreaterThanOrEqual(won.length);
    expect(repointed(events, 'HandoverReady')).toBeLessThanOrEqual(2 * won.length);
    const count = (action: string) => events.filter((e) => e.action === action).length;
    expect(count('RepointConversion'), 'batches, not one Event per target').toBeLessThan(N + won.length);
    const lists = events.filter((e) => e.action === 'AssignTargets');
    expect(new Set(lists.map((e) => e.regarding?.name))).toEqual(instances);
    console.log(
      `[pool-move] Events: ${lists.length} assigned-target lists, ${count('RepointConversion')} repoint batches ` +
        `for ${N + 2 * won.length} repoints made`,
    );
  });
});

describe('switchyard explain, against the live state the moves left', () => {
  it('says, for every target, where the resolver puts it, what its status says and what the apiserver names', async () => {
    const out = await runSwitchyard([
      'explain',
      '--all',
      '-o',
      'json',
      `--nats.url=${bus.server.url}`,
      // Its own read-only user: the view, renewals included, and no publish.
      ...natsCredentialFlags(bus.natsCredentialsDir, 'explain'),
    ]);
    expect(out.code, out.stderr).toBe(0);
    const explained = new Map((JSON.parse(out.stdout) as TargetExplanation[]).map((e) => [e.target, e]));
    const [picks, services, status] = [await resolved(), await servicesNow(), await statuses()];
    for (const t of TARGETS) {
      const e = explained.get(t);
      expect(e?.resolution, t).toEqual({ instance: picks.get(t), rule: 'Pool' });
      expect(e?.scores[0]?.instance, t).toBe(picks.get(t));
      expect(e?.status.assigned, t).toBe(status.get(t)?.assignedWebhookServer);
      expect(e?.status.handoverReady?.reason, t).toBe(handoverReady(status.get(t))?.reason);
      expect(e?.names.service, t).toBe(services.get(t));
      expect(webhookServiceName(e?.names.instance ?? ''), t).toBe(services.get(t));
      expect(e?.gate, t).toMatchObject({ decided: true, reason: handoverReady(status.get(t))?.reason });
      expect(e?.destination?.readyPods.length, t).toBeGreaterThan(0);
      for (const pod of e?.destination?.pods.filter((p) => p.ready) ?? [])
        expect(pod, `${t} on ${pod.pod}`).toMatchObject({ lease: 'live', target: 'serves' });
    }
  });
});

describe('switchyard replay, of the decisions assign recorded through the moves', () => {
  const replayAs = (...args: string[]) =>
    runSwitchyard([
      'replay',
      '-o',
      'json',
      ...args,
      `--nats.url=${bus.server.url}`,
      ...natsCredentialFlags(bus.natsCredentialsDir, 'replay'),
    ]);

  it('takes every decision again on the view rebuilt from the recorded history: the same bytes, each one', async () => {
    const out = await replayAs();
    expect(out.code, out.stderr).toBe(0);
    const report = JSON.parse(out.stdout) as ReplayReport;
    // Every config was assigned a first time, and every target the 4th member won moved to it.
    expect(report.decisions.length).toBeGreaterThanOrEqual(N + won.length);
    expect(report.decisions.filter((d) => d.verdict !== 'same')).toEqual([]);
    const decided = new Set(report.decisions.map((d) => d.key));
    for (const i of TARGETS.keys())
      expect(decided.has(`crdconfig/${configName(i)}`), configName(i)).toBe(true);
    const moves = report.decisions.filter((d) => (d.recorded as { move?: unknown }).move !== undefined);
    expect(moves.length).toBeGreaterThanOrEqual(N + won.length);
    console.log(
      `[pool-move] replay: ${report.decisions.length} assign decisions (${moves.length} moves) taken again from ${report.recordsApplied} records, all the same`,
    );
  });

  it('a recorded decision the history does not lead to is reported different, an unreadable one too, and a bound limits what is replayed', async () => {
    const key = `crdconfig/${configName(0)}`;
    const [first] = (JSON.parse((await replayAs(`--key=${key}`)).stdout) as ReplayReport).decisions;
    if (!first) throw new Error(`no decision recorded for ${key}`);
    const doctored = {
      concern: 'assign',
      key,
      viewSeq: first.viewSeq,
      decidedAt: first.decidedAt,
      decision: { ...(first.recorded as object), move: { to: 'an-instance-never-resolved' } },
    };
    await bus.js.publish(decisionSubject('assign', key), JSON.stringify(doctored));
    // And one that is no decision at all: reported, and the rest still taken again.
    await bus.js.publish(decisionSubject('assign', key), 'not a decision');
    const out = await replayAs(`--key=${key}`);
    expect(out.code).toBe(1);
    const report = JSON.parse(out.stdout) as ReplayReport;
    const verdicts = report.decisions.map((d) => d.verdict);
    expect(verdicts.filter((v) => v === 'different')).toHaveLength(1);
    expect(verdicts.filter((v) => v === 'same').length).toBeGreaterThan(0);
    expect(report.unreadable).toHaveLength(1);

    const bounded = JSON.parse((await replayAs(`--until-seq=${first.viewSeq}`)).stdout) as ReplayReport;
    expect(bounded.decisions.every((d) => d.viewSeq <= first.viewSeq)).toBe(true);
    expect(bounded.decisions.some((d) => d.key === key && d.verdict === 'same')).toBe(true);
  });

  it('--redrive publishes the replayed key as new work, and assign decides it again', async () => {
    const key = `crdconfig/${configName(1)}`;
    const before = (JSON.parse((await replayAs(`--key=${key}`)).stdout) as ReplayReport).decisions.length;
    const out = await replayAs(`--key=${key}`, '--redrive');
    expect(out.code, out.stderr).toBe(0);
    expect(out.stderr).toContain('re-drove 1 keys as new assign work');
    await waitFor(`a new decision about ${key}`, async () => {
      const now = JSON.parse((await replayAs(`--key=${key}`)).stdout) as ReplayReport;
      return now.decisions.length > before && now.decisions.every((d) => d.verdict === 'same')
        ? true
        : undefined;
    });
  });
});

/**
 * The managers of each field of a config's status (docs/handlers.md): one each, but for the
 * HandoverReady condition and the instance it is about, which the handover states and assign
 * resets in the write that records a new instance.
 */
function statusOwners(field: string): string[] {
  if (['assignedWebhookServer', 'webhookPath', 'conditions/Assigned'].includes(field))
    return ['switchyard-assign'];
  if (['handoverDestination', 'conditions/HandoverReady'].includes(field))
    return ['switchyard-assign', 'switchyard-handover'];
  if (field === 'handover') return ['switchyard-handover'];
  return ['switchyard-config-status'];
}

interface ManagedFields {
  manager?: string;
  subresource?: string;
  fieldsV1?: Record<string, unknown>;
}

/** The status fields a managedFields entry owns: top-level names, and conditions by type. */
function statusFieldsOf(fieldsV1: Record<string, unknown> | undefined): string[] {
  const status = (fieldsV1?.['f:status'] ?? {}) as Record<string, unknown>;
  return Object.keys(status).flatMap((key) => {
    if (key === 'f:conditions')
      return Object.keys(status[key] as object)
        .filter((k) => k.startsWith('k:'))
        .map((k) => `conditions/${(JSON.parse(k.slice(2)) as { type: string }).type}`);
    return key.startsWith('f:') ? [key.slice(2)] : [];
  });
}

const targetPatchAttempt = (e: AuditEvent) =>
  e.stage === 'ResponseComplete' &&
  e.verb === 'patch' &&
  e.objectRef?.resource === 'customresourcedefinitions' &&
  TARGETS.includes(e.objectRef.name ?? '');
const targetPatch = (e: AuditEvent) => targetPatchAttempt(e) && e.responseStatus?.code === 200;

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
