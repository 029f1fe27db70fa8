// Deleting an instance whose replicas run, on the real local stack: the instances handler renders
// it, the node agent runs its replicas (`switchyard webhook-server`, on the test's bus, each
// writing its served-set Lease as the instance's ServiceAccount), and the instance is deleted.
//
// What must hold (issue 27, finding 7): a replica says goodbye. Told to stop, it withdraws its
// served set (writes the empty set into its Lease) with its ServiceAccount's token and the Lease
// Role's grant, so both must outlive every Pod of the instance. Watched on the apiserver: the
// ServiceAccount, the Roles and RoleBindings are deleted after the last Pod (etcd revisions: one
// etcd orders every write of the local stack), and every Lease's last version before the garbage
// collector removed it holds the empty set. Before the fix the finalizer went at once and the
// collector deleted the ServiceAccount and Roles while the Pods still ran their preStop sleep (in
// one run at revision 328, the last Pod at 347), so any write a stopping replica made failed with
// 401; its Lease was empty only if its view had already seen the instance go.
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
  Watch,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Condition } from '../src/api/conditions.ts';
import {
  FORCE_DELETE_ANNOTATION,
  GROUP,
  SERVED_SET_ANNOTATION,
  VERSION,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../src/api/constants.ts';
import { decodeServedSet, expectedSetOf } from '../src/core/served-set-codec.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd, gizmoCrd, renameConfigSpec } from './support/crds.ts';
import { untilInstancesAreCollected } from './support/garbage-collector.ts';
import { optInInstanceNamespace } from './support/identities.ts';
import { startInstancesHandler } from './support/instances-handler.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import {
  createConversionConfig,
  createWebhookServer,
  deleteConversionConfig,
  deleteWebhookServer,
  releaseWebhookServer,
} from './support/records.ts';
import { startRecordingAndRouting } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const core = admin.makeApiClient(CoreV1Api);
const leases = admin.makeApiClient(CoordinationV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'instance-teardown-itest' });
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const PARTITIONS = 4;
const run = Date.now().toString(36);
const instanceApi = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
const stoppers: Array<() => Promise<unknown>> = [];
const cleanups: Array<() => Promise<unknown>> = [];
let bus: OwnBus;
let namespace = '';

function notFound(err: unknown): undefined {
  if ((err as { code?: number }).code === 404) return undefined;
  throw err;
}

interface Seen {
  kind: string;
  type: string;
  name: string;
  /** The etcd revision of this version (or of the deletion). */
  revision: number;
  object: KubernetesObject;
}

/**
 * Every version of an instance's Pods, Leases, ServiceAccount, Roles and RoleBindings from now on,
 * each with its revision; resolves once each watch's initial state (an ADDED per object that
 * exists: `replicas` Pods and Leases, one ServiceAccount, two Roles and RoleBindings) arrived.
 */
async function watchChildren(instance: string, replicas: number) {
  const seen: Seen[] = [];
  const byInstance = `${WEBHOOK_SERVER_LABEL}=${instance}`;
  const watches = [
    [
      'Pod',
      `/api/v1/namespaces/${namespace}/pods`,
      { labelSelector: `app.kubernetes.io/instance=${instance}` },
    ],
    ['Lease', `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases`, { labelSelector: byInstance }],
    [
      'ServiceAccount',
      `/api/v1/namespaces/${namespace}/serviceaccounts`,
      { fieldSelector: `metadata.name=${webhookServiceName(instance)}` },
    ],
    [
      'Role',
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/roles`,
      { labelSelector: byInstance },
    ],
    [
      'RoleBinding',
      `/apis/rbac.authorization.k8s.io/v1/namespaces/${namespace}/rolebindings`,
      { labelSelector: byInstance },
    ],
  ] as const;
  const requests = await Promise.all(
    watches.map(([kind, path, query]) =>
      new Watch(admin).watch(
        path,
        query,
        (type, object: KubernetesObject) => {
          const revision = Number(object.metadata?.resourceVersion);
          seen.push({ kind, type, name: object.metadata?.name ?? '', revision, object });
        },
        () => undefined,
      ),
    ),
  );
  const expected = { Pod: replicas, Lease: replicas, ServiceAccount: 1, Role: 2, RoleBinding: 2 };
  await waitFor('the watches’ initial state', () =>
    Object.entries(expected).every(
      ([kind, count]) => new Set(seen.filter((s) => s.kind === kind).map((s) => s.name)).size === count,
    )
      ? true
      : undefined,
  );
  return {
    seen,
    stop: () => {
      for (const r of requests) r.abort();
    },
  };
}

type Watched = Awaited<ReturnType<typeof watchChildren>>;

const deletedOf = (seen: Seen[], kind?: string) =>
  seen.filter((s) => s.type === 'DELETED' && (kind === undefined || s.kind === kind));

async function readyReplicas(instance: string, count: number) {
  return waitFor(
    `${count} ready replica(s) of ${instance}`,
    async () => {
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `app.kubernetes.io/instance=${instance}`,
      });
      const ready = pods.items.filter(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      );
      return ready.length === count ? ready : undefined;
    },
    { timeoutMs: 90_000 },
  );
}

/** The served set a Lease publishes (names form: small sets are self-contained). */
function servedBy(lease: V1Lease): string[] | string {
  const value = lease.metadata?.annotations?.[SERVED_SET_ANNOTATION];
  if (value === undefined) return 'no served-set annotation';
  const decoded = decodeServedSet(value, expectedSetOf([]));
  return decoded.kind === 'set' ? [...decoded.served].sort() : decoded.kind;
}

async function leasesOf(instance: string): Promise<V1Lease[]> {
  const list = await leases.listNamespacedLease({
    namespace,
    labelSelector: `${WEBHOOK_SERVER_LABEL}=${instance}`,
  });
  return list.items;
}

/** Deletes the instance; resolves once every watched child has been seen deleted, and the instance is gone. */
async function deleteAndWaitForTheCollector(instance: string, watched: Watched) {
  const existing = new Set(watched.seen.map((s) => `${s.kind}/${s.name}`));
  await deleteWebhookServer(admin, instance);
  await waitFor(
    `${instance} and its replicas, Leases and access objects to be gone`,
    async () => {
      const deleted = new Set(deletedOf(watched.seen).map((s) => `${s.kind}/${s.name}`));
      const left = [...existing].filter((o) => !deleted.has(o));
      // Thrown, not returned: a timeout then names what was left.
      if (left.length > 0) throw new Error(`not deleted yet: ${left.join(', ')}`);
      const instanceGone =
        (await custom.getClusterCustomObject({ ...instanceApi, name: instance }).catch(notFound)) ===
        undefined;
      return instanceGone ? true : undefined;
    },
    // The replicas take their preStop sleep (5 s) before they withdraw; the collector knows the kind.
    { timeoutMs: 90_000 },
  );
}

/** The replicas went first: the identity and grant they withdraw with were deleted after every Pod. */
function expectAccessToOutliveEveryPod(seen: Seen[], replicas: number) {
  const pods = deletedOf(seen, 'Pod');
  expect(new Set(pods.map((p) => p.name)).size, 'Pods deleted while watched').toBeGreaterThanOrEqual(
    replicas,
  );
  const lastPod = Math.max(...pods.map((p) => p.revision));
  const access = [
    ...deletedOf(seen, 'ServiceAccount'),
    ...deletedOf(seen, 'Role'),
    ...deletedOf(seen, 'RoleBinding'),
  ];
  expect(access.map((a) => a.kind).sort()).toEqual([
    'Role',
    'Role',
    'RoleBinding',
    'RoleBinding',
    'ServiceAccount',
  ]);
  for (const a of access) {
    expect(
      a.revision,
      `${a.kind} ${a.name} was deleted before the last Pod was gone: a replica stopping then cannot withdraw its Lease (401/403)`,
    ).toBeGreaterThan(lastPod);
  }
}

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'teardown');
  await optInInstanceNamespace(admin, namespace);
  // Else a fresh cluster's collector may leave the children for minutes after the instance went.
  await untilInstancesAreCollected(admin, namespace);
  stoppers.push(await startRecordingAndRouting(bus, { kubeConfig: admin, log, partitions: PARTITIONS }));
  stoppers.push(
    await startInstancesHandler(cluster.info, admin, bus, {
      partitions: PARTITIONS,
      log,
      replicaEnv: { SWITCHYARD_NATS_URL: bus.server.url, SWITCHYARD_LOG_LEVEL: 'info' },
    }),
  );
}, 300_000);

afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  for (const stop of stoppers.reverse()) await stop();
  if (namespace) await core.deleteNamespace({ name: namespace }).catch(notFound);
  await bus?.stop();
}, 60_000);

describe('deleting an instance whose replicas run', () => {
  it('lets every replica withdraw its Lease: the ServiceAccount and Lease Role go after the last Pod', {
    timeout: 300_000,
  }, async () => {
    // In use, and deleted anyway (the break-glass annotation): the replicas serve a target, so a
    // withdrawal is a write that must land, and a failed one leaves a Lease claiming the target.
    const instance = `gone-${run}`;
    const target = `gizmos.td${run}.teardown.switchyard.dev`;
    await ensureCrd(admin, gizmoCrd(target));
    cleanups.push(() =>
      admin.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({
        group: 'apiextensions.k8s.io',
        version: 'v1',
        plural: 'customresourcedefinitions',
        name: target,
      }),
    );
    await createConversionConfig(admin, instance, renameConfigSpec(target, { pin: instance }));
    cleanups.push(() => deleteConversionConfig(admin, instance));
    await createWebhookServer(admin, instance, { namespace, replicas: 2 });
    cleanups.push(() => releaseWebhookServer(admin, instance));
    await readyReplicas(instance, 2);
    await waitFor('both replicas reporting the target in their Leases', async () => {
      const leases = await leasesOf(instance);
      return leases.length === 2 && leases.every((l) => servedBy(l).includes(target)) ? true : undefined;
    });

    const watched = await watchChildren(instance, 2);
    try {
      await custom.patchClusterCustomObject(
        {
          ...instanceApi,
          name: instance,
          body: { metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } } },
        },
        mergePatch,
      );
      await deleteAndWaitForTheCollector(instance, watched);
    } finally {
      watched.stop();
    }

    expectAccessToOutliveEveryPod(watched.seen, 2);
    const leases = deletedOf(watched.seen, 'Lease');
    expect(leases, 'both Leases collected with their Pods').toHaveLength(2);
    for (const deleted of leases) {
      const versions = watched.seen.filter(
        (s) => s.kind === 'Lease' && s.name === deleted.name && s.type !== 'DELETED',
      );
      const last = versions.at(-1)?.object as V1Lease | undefined;
      expect(last, `a version of ${deleted.name}`).toBeDefined();
      expect(
        servedBy(last as V1Lease),
        `${deleted.name}: its replica's withdrawal never landed, so the Lease claimed ${target} until it was collected`,
      ).toEqual([]);
    }
  });

  it('says what the deletion waits for while the replicas stop, then goes', {
    timeout: 300_000,
  }, async () => {
    const instance = `idle-${run}`;
    await createWebhookServer(admin, instance, { namespace, replicas: 1 });
    cleanups.push(() => releaseWebhookServer(admin, instance));
    await readyReplicas(instance, 1);
    const statuses: { deleting: boolean; conditions: Condition[] }[] = [];
    const instanceWatch = await new Watch(admin).watch(
      `/apis/${GROUP}/${VERSION}/conversionwebhookservers`,
      { fieldSelector: `metadata.name=${instance}` },
      (_type, o: { metadata?: { deletionTimestamp?: string }; status?: { conditions?: Condition[] } }) => {
        statuses.push({
          deleting: o.metadata?.deletionTimestamp !== undefined,
          conditions: o.status?.conditions ?? [],
        });
      },
      () => undefined,
    );
    const watched = await watchChildren(instance, 1);
    try {
      await deleteAndWaitForTheCollector(instance, watched);
    } finally {
      watched.stop();
      instanceWatch.abort();
    }

    expectAccessToOutliveEveryPod(watched.seen, 1);
    const stopping = statuses.find((s) =>
      s.conditions.some(
        (c) => c.type === 'DeletionBlocked' && c.message.includes('waiting for its replicas to stop'),
      ),
    );
    expect(stopping, 'a status written while the replicas stopped').toBeDefined();
    const byType = Object.fromEntries(
      (stopping?.conditions ?? []).map((c) => [c.type, `${c.status}/${c.reason}`]),
    );
    expect(stopping?.deleting).toBe(true);
    expect(byType).toEqual({
      Available: 'False/Deleting',
      Progressing: 'True/Deleting',
      DeletionBlocked: 'False/NotInUse',
    });
  });
});
