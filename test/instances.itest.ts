// The instances handler against the real apiserver and JetStream: the watchers record
// instances, their Deployments, configs and targets, the router turns each record into work,
// and the handler (acting as the ServiceAccount of deploy/rbac/instances.yaml) renders the
// instance into its namespace, issues its certificates, keeps its finalizer and reports its
// Deployment. The local node agent runs the replicas (`switchyard webhook-server`), given a bus
// address nothing listens on: they never become ready, and the status says so (0 ready,
// Available False); the data plane itself is tested in test/webhook-server.itest.ts.

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  API_VERSION,
  FORCE_DELETE_ANNOTATION,
  GROUP,
  IN_USE_FINALIZER,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  servingCaSecretName,
  servingCertSecretName,
  VERSION,
  webhookServiceName,
} from '../src/api/constants.ts';
import type { WebhookServerStatus } from '../src/api/webhook-server.ts';
import type { WorkItem } from '../src/bus/messages.ts';
import type { Handler } from '../src/bus/runtime/index.ts';
import { readCertificate, readCertificates } from '../src/core/instances/certificate-facts.ts';
import { HANDOVER } from '../src/handlers/handover.ts';
import { AppliedRenderings } from '../src/handlers/instances/applied-renderings.ts';
import { INSTANCES } from '../src/handlers/instances.ts';
import { isForbidden } from '../src/kube/errors.ts';
import { fieldManagerFor } from '../src/kube/writer.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { auditLogFromNow } from './support/audit-log.ts';
import { type OwnBus, startOwnBus } from './support/bus.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import {
  componentIdentity,
  componentUser,
  HANDOVER_ACCOUNT,
  optInInstanceNamespace,
} from './support/identities.ts';
import { startInstancesHandler } from './support/instances-handler.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';
import { releaseWebhookServer } from './support/records.ts';
import { startRecordingAndRouting } from './support/watchers.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
const objects = KubernetesObjectApi.makeApiClient(admin);
const core = admin.makeApiClient(CoreV1Api);
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'instances-itest' });
const PARTITIONS = 4;
const run = Date.now().toString(36);
const NAME = `inst-${run}`;
const CONFIG = `pinned-${run}`;
const SERVICE = webhookServiceName(NAME);
/** The replicas' NATS Secret: rendered because the handler is given a bus CA (natsCaFile). */
const NATS_SECRET = `${SERVICE}-nats`;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const stoppers: Array<() => unknown> = [];
/** Runs of the handler that finished, per instance: how the test knows a reconcile happened. */
const finished = new Map<string, number>();
let namespace = '';
let bus: OwnBus;
/** What the handler applied lately: forgetting an instance plays out the re-apply period. */
const applied = new AppliedRenderings();
/** The handler's `nats.tls.caFile`, and the CAs the test writes into it. */
let caDir = '';
let caFile = '';
let busCas: string[] = [];

const instanceApi = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
const configApi = { group: GROUP, version: VERSION, plural: 'crdconversionconfigs' };

interface Instance {
  metadata: { finalizers?: string[]; resourceVersion?: string; deletionTimestamp?: string };
  status?: WebhookServerStatus;
}

const getInstance = async (): Promise<Instance | undefined> =>
  (await custom.getClusterCustomObject({ ...instanceApi, name: NAME }).catch(notFound)) as
    | Instance
    | undefined;

function notFound(err: unknown): undefined {
  if ((err as { code?: number }).code === 404) return undefined;
  throw err;
}

function counting(handler: Handler<WorkItem>): Handler<WorkItem> {
  return async (item, ctx) => {
    const outcome = await handler(item, ctx);
    finished.set(item.key, (finished.get(item.key) ?? 0) + 1);
    return outcome;
  };
}

/** The children, as headers to read them back with. */
const children = () =>
  [
    ['apps/v1', 'Deployment', SERVICE],
    ['v1', 'Service', SERVICE],
    ['v1', 'ServiceAccount', SERVICE],
    ['rbac.authorization.k8s.io/v1', 'Role', `${SERVICE}-leases`],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', `${SERVICE}-leases`],
    ['rbac.authorization.k8s.io/v1', 'Role', `${SERVICE}-trust-bundle`],
    ['rbac.authorization.k8s.io/v1', 'RoleBinding', `${SERVICE}-trust-bundle`],
    ['policy/v1', 'PodDisruptionBudget', SERVICE],
    ['v1', 'Secret', servingCaSecretName(NAME)],
    ['v1', 'Secret', servingCertSecretName(NAME)],
    ['networking.k8s.io/v1', 'NetworkPolicy', SERVICE],
    ['v1', 'Secret', NATS_SECRET],
  ].map(
    ([apiVersion, kind, name]) => ({ apiVersion, kind, metadata: { name, namespace } }) as KubernetesObject,
  );

const read = (o: KubernetesObject) => objects.read(o as KubernetesObject & { metadata: { name: string } });

beforeAll(async () => {
  bus = await startOwnBus();
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'instances-handler');
  await optInInstanceNamespace(admin, namespace);
  caDir = await mkdtemp(join(tmpdir(), 'instances-itest-'));
  caFile = join(caDir, 'ca.crt');
  const validity = { notBeforeMs: Date.now() - 60_000, notAfterMs: Date.now() + 3_600_000 };
  busCas = await Promise.all(
    ['bus CA before', 'bus CA after'].map(
      async (commonName) => (await x509Issuer().createCa({ commonName, ...validity })).certPem,
    ),
  );
  await writeFile(caFile, busCas[0] ?? '');
  stoppers.push(await startRecordingAndRouting(bus, { kubeConfig: admin, log, partitions: PARTITIONS }));
  stoppers.push(
    await startInstancesHandler(cluster.info, admin, bus, {
      partitions: PARTITIONS,
      log,
      // Unreachable on purpose: replicas that cannot read the bus never become ready.
      replicaEnv: { SWITCHYARD_NATS_URL: 'nats://127.0.0.1:1' },
      wrap: counting,
      applied,
      natsCaFile: caFile,
    }),
  );
});

afterAll(async () => {
  for (const stop of stoppers.reverse()) await stop();
  await custom.deleteClusterCustomObject({ ...configApi, name: CONFIG }).catch(notFound);
  // Whatever a failed test left: no handler runs any more to release the finalizer.
  await releaseWebhookServer(admin, NAME);
  if (namespace) await core.deleteNamespace({ name: namespace }).catch(notFound);
  await bus?.stop();
  if (caDir) await rm(caDir, { recursive: true, force: true });
});

describe('the instances handler', () => {
  it('renders a new instance into its namespace, every child owned by it', { timeout: 90_000 }, async () => {
    await custom.createClusterCustomObject({
      ...instanceApi,
      body: {
        apiVersion: API_VERSION,
        kind: 'ConversionWebhookServer',
        metadata: { name: NAME },
        spec: { namespace, replicas: 1 },
      },
    });
    const found = await waitFor(
      'every child',
      async () => {
        const all = await Promise.all(children().map((c) => read(c).catch(notFound)));
        return all.every(Boolean) ? (all as KubernetesObject[]) : undefined;
      },
      { timeoutMs: 60_000 },
    );
    const uid = (
      (await custom.getClusterCustomObject({ ...instanceApi, name: NAME })) as { metadata: { uid: string } }
    ).metadata.uid;
    for (const child of found) {
      expect(child.metadata?.ownerReferences, `${child.kind}`).toEqual([
        expect.objectContaining({ kind: 'ConversionWebhookServer', name: NAME, uid, controller: true }),
      ]);
      expect(child.metadata?.labels?.[MANAGED_BY_LABEL], `${child.kind}`).toBe(MANAGED_BY_VALUE);
    }
    const [, service, , role] = found as [
      unknown,
      { spec: { ports: { port: number }[] } },
      unknown,
      { rules: unknown[] },
    ];
    expect(service.spec.ports.map((p) => p.port)).toEqual([443]);
    expect(role.rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'create', 'update', 'patch'],
      },
    ]);
    expect((await getInstance())?.metadata.finalizers).toContain(IN_USE_FINALIZER);
  });

  it('issues a serving certificate for <service>.<namespace>.svc from the instance CA', async () => {
    const serving = await core.readNamespacedSecret({ name: servingCertSecretName(NAME), namespace });
    const ca = await core.readNamespacedSecret({ name: servingCaSecretName(NAME), namespace });
    const pem = (s: typeof serving, key: string) =>
      Buffer.from(s.data?.[key] ?? '', 'base64').toString('utf8');
    expect(readCertificate(pem(serving, 'tls.crt'))?.dnsNames).toEqual([`${SERVICE}.${namespace}.svc`]);
    const fingerprints = readCertificates(pem(serving, 'ca.crt'))?.map((c) => c.fingerprint);
    expect(fingerprints).toEqual([readCertificate(pem(ca, 'tls.crt'))?.fingerprint]);
    expect(readCertificate(pem(ca, 'tls.crt'))?.isCa).toBe(true);
  });

  it('grants the handover get on exactly the serving Secret, bound to its ServiceAccount', async () => {
    const role = (await read(children()[5] as KubernetesObject)) as { rules?: unknown[] };
    expect(role.rules).toEqual([
      {
        apiGroups: [''],
        resources: ['secrets'],
        resourceNames: [servingCertSecretName(NAME)],
        verbs: ['get'],
      },
    ]);
    const binding = (await read(children()[6] as KubernetesObject)) as { subjects?: unknown[] };
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', ...HANDOVER_ACCOUNT }]);
  });

  it('lets a token of the handover ServiceAccount get the serving Secret and nothing else', {
    timeout: 60_000,
  }, async () => {
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: `other-${run}` }, stringData: { 'ca.crt': 'not for the handover' } },
    });
    // deploy/rbac/handover.yaml as a user applies it: no Secret is granted there any more.
    const handover = (await componentIdentity(cluster.info, admin, HANDOVER)).makeApiClient(CoreV1Api);
    // The authorizer learns of a new binding through its informer: the first read may precede it.
    const serving = await waitFor('the handover to read the serving Secret', async () =>
      handover.readNamespacedSecret({ name: servingCertSecretName(NAME), namespace }).catch((err) => {
        if (isForbidden(err)) return undefined;
        throw err;
      }),
    );
    expect(serving.data?.['ca.crt']).toBeTruthy();
    const refused = async (request: Promise<unknown>) => {
      const err = await request.then(
        () => undefined,
        (e: unknown) => e,
      );
      return isForbidden(err);
    };
    expect(
      await refused(handover.readNamespacedSecret({ name: servingCaSecretName(NAME), namespace })),
      'the CA Secret holds the key that signs serving certificates',
    ).toBe(true);
    expect(await refused(handover.readNamespacedSecret({ name: `other-${run}`, namespace }))).toBe(true);
    expect(await refused(handover.listNamespacedSecret({ namespace }))).toBe(true);
    expect(await refused(handover.listSecretForAllNamespaces())).toBe(true);
    expect(
      await refused(
        handover.readNamespacedSecret({ name: servingCertSecretName(NAME), namespace: 'default' }),
      ),
      'the grant is in the instance namespace only',
    ).toBe(true);
  });

  it('reports the Deployment: replicas that never become ready leave it unavailable', {
    timeout: 90_000,
  }, async () => {
    const status = await waitFor(
      'the status to report the replica',
      async () => {
        const s = (await getInstance())?.status;
        return s?.replicas === 1 ? s : undefined;
      },
      { timeoutMs: 60_000 },
    );
    expect(status.readyReplicas).toBe(0);
    expect(status.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      reason: 'NoReplicasAvailable',
    });
  });

  it('changes nothing, and sends no apply, when it runs again over an unchanged instance', {
    timeout: 60_000,
  }, async () => {
    const before = await Promise.all(children().map(read));
    const instanceBefore = await getInstance();
    const runs = finished.get(NAME) ?? 0;
    const audit = await auditLogFromNow(cluster.info.auditLog);
    // An annotation wakes the handler (not only status moved) and changes nothing it renders.
    await custom.patchClusterCustomObject(
      {
        ...instanceApi,
        name: NAME,
        body: { metadata: { annotations: { 'test.switchyard.dev/poke': run } } },
      },
      mergePatch,
    );
    await waitFor('another run', () => ((finished.get(NAME) ?? 0) > runs ? true : undefined));
    const after = await Promise.all(children().map(read));
    // Controllers write the Deployment's and PDB's status, so compare this manager's entries.
    expect(after.map(ownWrite)).toEqual(before.map(ownWrite));
    // Secrets and the access objects have no other writer: not even a new resourceVersion.
    const stable = (list: KubernetesObject[]) =>
      list
        .filter((o) => !['Deployment', 'PodDisruptionBudget'].includes(o.kind ?? ''))
        .map((o) => o.metadata?.resourceVersion);
    expect(stable(after)).toEqual(stable(before));
    expect((await getInstance())?.status).toEqual(instanceBefore?.status);
    // The rendering is the one it applied a moment ago (instances/applied-renderings.ts): no child is sent.
    // The audit log is written asynchronously: the test's own read of the instance, after the
    // run, marks how far it has got.
    const events = await audit.waitFor('the test’s read of the instance', (all) =>
      all.filter(
        (e) => e.user.username === 'switchyard:admin' && e.verb === 'get' && e.objectRef?.name === NAME,
      ),
    );
    const applies = (await audit.all())
      .filter(
        (e) => e.user.username === componentUser(INSTANCES) && ['patch', 'update', 'create'].includes(e.verb),
      )
      .map((e) => `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name}`);
    expect(events.length).toBeGreaterThan(0);
    expect(applies).toEqual([]);
  });

  it('lets in only the port its replicas serve, to exactly its replicas; restores the policy once deleted', {
    timeout: 90_000,
  }, async () => {
    const policyRef = children().find((c) => c.kind === 'NetworkPolicy') as KubernetesObject;
    const policy = (await read(policyRef)) as KubernetesObject & {
      spec: {
        podSelector: { matchLabels?: Record<string, string> };
        policyTypes: string[];
        ingress: unknown[];
      };
    };
    const deployment = (await read(children()[0] as KubernetesObject)) as KubernetesObject & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        template: { spec: { containers: { ports?: { containerPort: number; protocol?: string }[] }[] } };
      };
    };
    expect(policy.spec.podSelector.matchLabels).toEqual(deployment.spec.selector.matchLabels);
    expect(policy.spec.policyTypes).toEqual(['Ingress']);
    const served = deployment.spec.template.spec.containers.flatMap((c) =>
      (c.ports ?? []).map((p) => ({ port: p.containerPort, protocol: p.protocol ?? 'TCP' })),
    );
    expect(policy.spec.ingress).toEqual([{ ports: served }]);

    // Someone deletes it. NetworkPolicies are not recorded on the bus, so no event says so: like
    // the other unrecorded children it is applied again once the re-apply period has passed since
    // the last apply (instances/applied-renderings.ts), at the next wake. Forgetting the instance
    // is that period passing; the annotation is the wake (a resync round, in production).
    await objects.delete(policyRef);
    applied.forget(NAME);
    await custom.patchClusterCustomObject(
      {
        ...instanceApi,
        name: NAME,
        body: { metadata: { annotations: { 'test.switchyard.dev/poke': `np-${run}` } } },
      },
      mergePatch,
    );
    const restored = (await waitFor('the NetworkPolicy applied again', () =>
      read(policyRef).catch(notFound),
    )) as typeof policy;
    expect(restored.spec).toEqual(policy.spec);
    expect(restored.metadata?.uid).not.toBe(policy.metadata?.uid);
  });

  it('carries a new bus CA to its replicas’ Secret at the next reconcile, without a restart', {
    timeout: 60_000,
  }, async () => {
    const caOf = async () => {
      const secret = await core.readNamespacedSecret({ name: NATS_SECRET, namespace });
      return Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString('utf8');
    };
    expect(await caOf()).toBe(busCas[0]);
    const template = JSON.stringify(
      ((await read(children()[0] as KubernetesObject)) as { spec?: { template?: unknown } }).spec?.template,
    );
    // What the kubelet does to the handler's mount when the CA's Secret changes.
    await writeFile(caFile, busCas[1] ?? '');
    await custom.patchClusterCustomObject(
      {
        ...instanceApi,
        name: NAME,
        body: { metadata: { annotations: { 'test.switchyard.dev/poke': `ca-${run}` } } },
      },
      mergePatch,
    );
    await waitFor('the new CA in the replicas’ Secret', async () =>
      (await caOf()) === busCas[1] ? true : undefined,
    );
    // The replicas read the mounted CA at each reconnect: their Pods are not replaced for it.
    const after = (await read(children()[0] as KubernetesObject)) as { spec?: { template?: unknown } };
    expect(JSON.stringify(after.spec?.template)).toBe(template);
  });

  it('wakes the handover of a target naming its Service that trusts another bundle', {
    timeout: 60_000,
  }, async () => {
    // What a rotation leaves: the serving Secret holds a new bundle, a target still the old one.
    // Nothing else carries a Secret's change to the handover, and the leaf waits for every
    // target to trust the new CA before it moves to it.
    const target = `gizmos.inst${run}.x.io`;
    const woken: string[] = [];
    const sub = bus.nc.subscribe('work.handover.>', {
      callback: (_err, m) => {
        // Told to read the bundle: the target already names the instance, so plain work would keep its own.
        const work = m.json<{ key: string; trust?: boolean }>();
        if (work.trust === true) woken.push(work.key);
      },
    });
    const now = Date.now();
    const other = await x509Issuer().createCa({
      commonName: 'another CA',
      notBeforeMs: now - 60_000,
      notAfterMs: now + 3_600_000,
    });
    const crdApi = admin.makeApiClient(ApiextensionsV1Api);
    const schema = { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } };
    await crdApi.createCustomResourceDefinition({
      body: {
        metadata: { name: target },
        spec: {
          group: target.split('.').slice(1).join('.'),
          scope: 'Namespaced',
          names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' },
          versions: [
            { name: 'v2', served: true, storage: true, schema },
            { name: 'v1', served: true, storage: false, schema },
          ],
          conversion: {
            strategy: 'Webhook',
            webhook: {
              clientConfig: {
                service: { name: SERVICE, namespace, path: `/convert/${target}`, port: 443 },
                caBundle: Buffer.from(other.certPem).toString('base64'),
              },
              conversionReviewVersions: ['v1'],
            },
          },
        },
      } as V1CustomResourceDefinition,
    });
    try {
      await waitFor(
        'handover work for the target, told to read the trust bundle',
        () => (woken.includes(target) ? true : undefined),
        {
          timeoutMs: 30_000,
        },
      );
    } finally {
      sub.unsubscribe();
      await crdApi.deleteCustomResourceDefinition({ name: target });
    }
  });

  it('blocks the deletion, with a condition saying why, while a config is pinned to it', {
    timeout: 60_000,
  }, async () => {
    await custom.createClusterCustomObject({
      ...configApi,
      body: {
        apiVersion: API_VERSION,
        kind: 'CRDConversionConfig',
        metadata: { name: CONFIG },
        spec: {
          targetCRD: { name: `gadgets${run}.pinned.switchyard.dev` },
          hubVersion: 'v2',
          spokes: [{ version: 'v1', rules: [] }],
          webhookServerRef: { name: NAME },
        },
      },
    });
    await custom.deleteClusterCustomObject({ ...instanceApi, name: NAME });
    const blocked = await waitFor('DeletionBlocked', async () => {
      const c = (await getInstance())?.status?.conditions?.find((x) => x.type === 'DeletionBlocked');
      return c?.status === 'True' ? c : undefined;
    });
    expect(blocked.reason).toBe('TargetsStillServed');
    expect(blocked.message).toContain(`gadgets${run}.pinned.switchyard.dev`);
    expect(blocked.message).toContain('re-pin');
    expect((await getInstance())?.metadata.finalizers).toContain(IN_USE_FINALIZER);
  });

  it('lets it go on the break-glass annotation, and its children are collected', {
    timeout: 180_000,
  }, async () => {
    await custom.patchClusterCustomObject(
      {
        ...instanceApi,
        name: NAME,
        body: { metadata: { annotations: { [FORCE_DELETE_ANNOTATION]: 'true' } } },
      },
      mergePatch,
    );
    await waitFor('the instance to be gone', async () =>
      (await getInstance()) === undefined ? true : undefined,
    );
    await waitFor(
      'every child to be collected',
      async () => {
        const left = await Promise.all(children().map((c) => read(c).catch(notFound)));
        return left.some(Boolean) ? undefined : true;
      },
      // The garbage collector learns of a new owner kind on its discovery resync (30 s).
      { timeoutMs: 150_000 },
    );
  });

  it.each([
    { verb: 'list', group: '', resource: 'secrets' },
    { verb: 'watch', group: '', resource: 'secrets' },
    { verb: 'delete', group: '', resource: 'secrets' },
    { verb: 'delete', group: 'apps', resource: 'deployments' },
    { verb: 'list', group: 'apps', resource: 'deployments' },
    { verb: 'delete', group: 'coordination.k8s.io', resource: 'leases' },
    { verb: 'create', group: '', resource: 'pods' },
    { verb: 'create', group: 'rbac.authorization.k8s.io', resource: 'clusterroles' },
    { verb: 'escalate', group: 'rbac.authorization.k8s.io', resource: 'roles' },
    { verb: 'bind', group: 'rbac.authorization.k8s.io', resource: 'roles' },
    { verb: 'delete', group: GROUP, resource: 'conversionwebhookservers' },
    { verb: 'patch', group: GROUP, resource: 'crdconversionconfigs' },
  ])('its identity may not $verb $group/$resource', async ({ verb, group, resource }) => {
    const review = await admin.makeApiClient(AuthorizationV1Api).createSubjectAccessReview({
      body: {
        spec: {
          user: componentUser(INSTANCES),
          groups: [
            'system:serviceaccounts',
            'system:serviceaccounts:switchyard-system',
            'system:authenticated',
          ],
          resourceAttributes: { verb, group, resource, namespace: 'default' },
        },
      },
    });
    expect(review.status?.allowed ?? false).toBe(false);
  });
});

function ownWrite(o: KubernetesObject) {
  const manager = fieldManagerFor(INSTANCES);
  const entry = o.metadata?.managedFields?.find((f) => f.manager === manager && f.operation === 'Apply');
  return { object: `${o.kind}/${o.metadata?.name}`, generation: o.metadata?.generation, entry };
}
