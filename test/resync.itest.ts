// Resync (issue 27, finding 2): a restarted handler re-derives its whole concern from its view, so
// a work item that was lost or decided wrongly cannot leave a key wrong for good. Every worker is
// a real process on a NATS server of the file's own (whose users are the product's: a permission
// the resync lacks fails the file at stop), under the ServiceAccount of its deploy/rbac manifest:
//   * assign (src/handlers/assign/run.ts wiring): a status written wrong by hand while assign is down (a
//     status write wakes no assign work, by design) is put right by the restarted assign;
//   * config-status (run-handler.ts wiring): the work item of a wrong status is deleted from WORK
//     before it is handled; two restarted replicas put it right, and with a period of 3 s they
//     release each periodic round once between them, every key once per round.
import { join } from 'node:path';
import { CoreV1Api, CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, VERSION } from '../src/api/constants.ts';
import type { ConfigStatus } from '../src/api/conversion-config.ts';
import type { WebhookServerStatus } from '../src/api/webhook-server.ts';
import { decodeObjectEvent } from '../src/bus/messages.ts';
import { objectSubject } from '../src/bus/subjects.ts';
import { STREAMS } from '../src/bus/topology.ts';
import { resyncPacerOf } from '../src/handlers/resync.ts';
import { isConflict, isNotFound } from '../src/kube/errors.ts';
import type { ManagedProcess } from '../src/local-cluster/managed-process.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { componentIdentityFile, RBAC_NAMESPACE } from './support/identities.ts';
import { useLocalCluster } from './support/local-cluster.ts';
import { switchyardProcess } from './support/processes.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const logger = pino({ level: 'warn' });
const run = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 5)}`;
const PREFIX = `rs-${run}-`;
const INSTANCE = `${PREFIX}a`;
/** Pinned to INSTANCE, so whatever else the shared cluster holds, each resolves to it. */
const CONFIGS = [0, 1, 2].map((i) => ({
  name: `${PREFIX}c${i}`,
  target: `gizmos.r${i}${run}.resync.switchyard.dev`,
}));
const COMPONENTS = ['assign', 'config-status'];
/** The period of the restarted config-status replicas: short, so the test sees rounds go by. */
const PERIOD_SECONDS = 3;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let bus: OwnBus;
const kubeconfigs: Record<string, string> = {};
const processes = new Map<string, ManagedProcess>();
const cleanups: Array<() => Promise<unknown>> = [];
/** config-status work as released into WORK, with its message id (a resync item's names its round). */
const configStatusWork: Array<{ key: string; msgId: string }> = [];

function start(name: string, args: string[], kubeconfig?: string): ManagedProcess {
  const p = switchyardProcess({
    name,
    args,
    natsUrl: bus.server.url,
    natsCredentialsDir: bus.natsCredentialsDir,
    kubeconfig,
    logFile: join(cluster.info.dir, 'logs', `resync-${name}.log`),
    log: logger,
  });
  processes.set(name, p);
  return p;
}

async function stop(name: string): Promise<void> {
  await processes.get(name)?.stop(10_000);
  processes.delete(name);
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

async function read<T>(plural: string, name: string): Promise<T | undefined> {
  const o = (await custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name })) as {
    status?: T;
  };
  return o.status;
}
const configStatus = (name: string) => read<ConfigStatus>('crdconversionconfigs', name);
const instanceStatus = () => read<WebhookServerStatus>('conversionwebhookservers', INSTANCE);

/** A status written by hand, as a user (or a bug) might: merge patch on the status subresource. */
async function writeStatus(plural: string, name: string, status: Record<string, unknown>): Promise<void> {
  await custom.patchClusterCustomObjectStatus(
    { group: GROUP, version: VERSION, plural, name, body: { status } },
    mergePatch,
  );
}

/** Until the watchers recorded `name` as `check` wants it, and the router routed every record. */
async function recordedAndRouted(kind: string, name: string, check: (o: unknown) => boolean): Promise<void> {
  await waitFor(`${kind}/${name} recorded`, async () => {
    const m = await bus.jsm.streams.getMessage(STREAMS.records, {
      last_by_subj: objectSubject({ kind, namespace: '', name }),
    });
    const decoded = m && decodeObjectEvent(m.data);
    return decoded?.ok && check(decoded.value.object) ? true : undefined;
  });
  await waitFor('the router caught up', async () => {
    const info = await bus.jsm.consumers.info(STREAMS.records, 'router');
    return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
  });
}

/** Until `concern`'s resync pacer has released everything and its work is handled: nothing left to heal with. */
async function idle(concern: string): Promise<void> {
  await waitFor(`${concern} idle`, async () => {
    const pacer = await bus.jsm.consumers.info(STREAMS.fanout, resyncPacerOf(concern).durable);
    const waiting = pacer.num_pending + pacer.num_ack_pending + (await workWaiting(`work.${concern}.>`));
    return waiting === 0 ? true : undefined;
  });
}

/** Messages in WORK on `filter` (a stopped handler's work waits there). */
async function workWaiting(filter: string): Promise<number> {
  const info = await bus.jsm.streams.info(STREAMS.work, { subjects_filter: filter });
  return Object.values(info.state.subjects ?? {}).reduce((n, c) => n + c, 0);
}

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: RBAC_NAMESPACE } } }).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  for (const c of COMPONENTS)
    kubeconfigs[c] = await componentIdentityFile(
      cluster.info,
      admin,
      c,
      join(cluster.info.dir, `resync-${c}-${run}.kubeconfig`),
      cleanups,
    );
  bus = await startOwnBus();
  const sub = bus.nc.subscribe('work.config-status.>', {
    callback: (_err, m) => {
      const key = (m.json() as { key: string }).key;
      configStatusWork.push({ key, msgId: m.headers?.get('Nats-Msg-Id') ?? '' });
    },
  });
  cleanups.push(async () => sub.unsubscribe());

  start('watchers', ['watch'], cluster.info.kubeConfigs.admin);
  start('router', ['router']);
  start('assign', ['assign'], kubeconfigs.assign);
  start('config-status', ['config-status'], kubeconfigs['config-status']);

  await createCustom('conversionwebhookservers', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name: INSTANCE },
    spec: { namespace: RBAC_NAMESPACE },
  } as { metadata: { name: string } });
  for (const c of CONFIGS)
    await createCustom('crdconversionconfigs', {
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name: c.name },
      spec: {
        targetCRD: { name: c.target },
        hubVersion: 'v2',
        spokes: [
          {
            version: 'v1',
            rules: [
              { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' } },
            ],
          },
        ],
        webhookServerRef: { name: INSTANCE },
      },
    } as { metadata: { name: string } });
  // Assigned, counted, and given a phase (Pending: the targets do not exist) by the running handlers.
  await waitFor(
    'every config assigned and counted, each with a phase',
    async () => {
      for (const c of CONFIGS) {
        const s = await configStatus(c.name);
        if (s?.assignedWebhookServer !== INSTANCE || s.phase !== 'Pending') return undefined;
      }
      return (await instanceStatus())?.assignedTargetCount === CONFIGS.length ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 500 },
  );
}, 180_000);

afterAll(async () => {
  await Promise.all([...processes.values()].map((p) => p.stop(10_000)));
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  await bus?.stop();
});

describe('resync', () => {
  it('assign, restarted, puts right what was written wrong while it was down and whose work was lost', async () => {
    const [wrong] = CONFIGS as [{ name: string; target: string }];
    const nowhere = `${PREFIX}nowhere`;
    await idle('assign');
    await stop('assign');
    await writeStatus('crdconversionconfigs', wrong.name, { assignedWebhookServer: nowhere });
    await writeStatus('conversionwebhookservers', INSTANCE, { assignedTargetCount: 0, assignedTargets: [] });
    await recordedAndRouted(
      'crdconfig',
      wrong.name,
      (o) => (o as { status?: ConfigStatus }).status?.assignedWebhookServer === nowhere,
    );
    await recordedAndRouted(
      'webhookserver',
      INSTANCE,
      (o) => (o as { status?: WebhookServerStatus }).status?.assignedTargetCount === 0,
    );
    // A write of assign's own fields wakes assign once more (status-echo.ts), which would put it
    // right by itself: drop those items, as a lost work item would be, so only a resync can.
    expect(await workWaiting('work.assign.>'), 'the echo of the writes waits for assign').toBeGreaterThan(0);
    await bus.jsm.streams.purge(STREAMS.work, { filter: 'work.assign.>' });
    expect(await workWaiting('work.assign.>')).toBe(0);
    expect((await configStatus(wrong.name))?.assignedWebhookServer).toBe(nowhere);

    start('assign', ['assign'], kubeconfigs.assign);
    const healed = await waitFor(
      `${wrong.name} assigned to ${INSTANCE} again, and ${INSTANCE} counting every config`,
      async () => {
        const config = await configStatus(wrong.name);
        const instance = await instanceStatus();
        return config?.assignedWebhookServer === INSTANCE && instance?.assignedTargetCount === CONFIGS.length
          ? instance
          : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    expect([...(healed.assignedTargets ?? [])].sort()).toEqual(CONFIGS.map((c) => c.target).sort());
    const pacer = await bus.jsm.consumers.info(STREAMS.fanout, resyncPacerOf('assign').durable);
    expect(pacer.delivered.consumer_seq).toBeGreaterThanOrEqual(CONFIGS.length + 1);
  });

  it('config-status: a lost work item is made up by the restarted replicas, which share each periodic round', async () => {
    const [, wrong] = CONFIGS as [unknown, { name: string; target: string }];
    await idle('config-status');
    await stop('config-status');
    await writeStatus('crdconversionconfigs', wrong.name, { phase: 'Validated' });
    await recordedAndRouted(
      'crdconfig',
      wrong.name,
      (o) => (o as { status?: ConfigStatus }).status?.phase === 'Validated',
    );
    // The record woke config-status (its own status is what it reads); the item is lost.
    expect(await workWaiting('work.config-status.>')).toBeGreaterThan(0);
    await bus.jsm.streams.purge(STREAMS.work, { filter: 'work.config-status.>' });
    expect(await workWaiting('work.config-status.>')).toBe(0);
    expect((await configStatus(wrong.name))?.phase).toBe('Validated');

    const seen = configStatusWork.length;
    for (const replica of ['config-status-1', 'config-status-2'])
      start(
        replica,
        ['config-status', `--resync.periodSeconds=${PERIOD_SECONDS}`],
        kubeconfigs['config-status'],
      );
    await waitFor(
      `${wrong.name} Pending again`,
      async () => ((await configStatus(wrong.name))?.phase === 'Pending' ? true : undefined),
      { timeoutMs: 60_000, intervalMs: 500 },
    );

    // Periodic rounds: each of this file's configs released once per round, whichever replica published it.
    const mine = new Set(CONFIGS.map((c) => `crdconfig/${c.name}`));
    const periodic = () => {
      const byRound = new Map<string, string[]>();
      for (const w of configStatusWork.slice(seen)) {
        const round = /^resync:config-status:(period-\d+):/.exec(w.msgId)?.[1];
        if (round === undefined || !mine.has(w.key)) continue;
        byRound.set(round, [...(byRound.get(round) ?? []), w.key]);
      }
      return byRound;
    };
    // Three rounds seen in full (the last one may still be releasing when the wait ends).
    await waitFor(
      'three periodic rounds',
      () =>
        [...periodic().values()].filter((keys) => keys.length >= mine.size).length >= 3 ? true : undefined,
      { timeoutMs: 10 * PERIOD_SECONDS * 1000, intervalMs: 250 },
    );
    const rounds = [...periodic().entries()].filter(([, keys]) => keys.length >= mine.size);
    for (const [round, keys] of rounds) expect(keys.sort(), round).toEqual([...mine].sort());
  });
});
