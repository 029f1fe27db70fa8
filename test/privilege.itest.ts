// Each privilege path of docs/security.md, tried on the real apiserver with RBAC on: an identity
// attempts what it must not do and is refused, and does what it must do (the control that shows
// the refusal is the rule's, not a broken setup). deploy/rbac and deploy/policies are applied as a
// user applies them. The policies are cluster-wide, so this file runs a local cluster of its own.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POLICY_NAMESPACE } from '../src/api/admission-policies.ts';
import { API_VERSION, HANDOVER_VERDICT_ANNOTATION, servedLeaseName } from '../src/api/constants.ts';
import { INSTANCE_POLICY_CONFIGMAP } from '../src/core/instance-admission.ts';
import { isConflict, statusOf } from '../src/kube/errors.ts';
import { type LocalCluster, PROJECT_ROOT, startLocalCluster } from '../src/local-cluster/cluster.ts';
import { kubeConfigFromToken } from '../src/local-cluster/kubeconfig.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { committedCrds, crdWithSpec, ensureCrd } from './support/crds.ts';
import { componentIdentity, optInInstanceNamespace } from './support/identities.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'privilege-itest' });
const MANAGED = { 'app.kubernetes.io/managed-by': 'switchyard' };
const TARGET = 'widgets.privilege.example';
const OTHER_TARGET = 'gadgets.privilege.example';

let cluster: LocalCluster;
let admin: KubeConfig;

const objectsAs = (kc: KubeConfig) => kc.makeApiClient(KubernetesObjectApi);

/** The apiserver's refusal of `write`: its status and message. Fails the test if it succeeds. */
async function refusal(write: Promise<unknown>): Promise<{ code: number | undefined; message: string }> {
  try {
    await write;
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    const text = typeof body === 'string' ? body : JSON.stringify(body ?? String(err));
    return { code: statusOf(err), message: text };
  }
  throw new Error('the write was admitted');
}

async function applyFile(path: string): Promise<void> {
  const objects = objectsAs(admin);
  for (const o of loadAllYaml(await readFile(path, 'utf8')) as KubernetesObject[])
    await objects.create(o).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
}

/** A ServiceAccount of `namespace` holding `rules` cluster-wide: a user of the cluster, not one of Switchyard's. */
async function serviceAccountWith(namespace: string, name: string, rules: object[]): Promise<void> {
  const objects = objectsAs(admin);
  const binding = `${namespace}-${name}`;
  await objects.create({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace },
  } as KubernetesObject);
  await objects.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: binding },
    rules,
  } as KubernetesObject);
  await objects.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: binding },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: binding },
    subjects: [{ kind: 'ServiceAccount', name, namespace }],
  } as KubernetesObject);
}

/** A token of the ServiceAccount, bound to `pod` as the kubelet binds a Pod's. */
async function tokenOf(
  namespace: string,
  name: string,
  pod?: { name: string; uid: string },
): Promise<KubeConfig> {
  const token = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
    name,
    namespace,
    body: {
      spec: {
        audiences: [],
        expirationSeconds: 3600,
        ...(pod && { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', ...pod } }),
      },
    },
  });
  return kubeConfigFromToken(
    cluster.endpoint,
    `system:serviceaccount:${namespace}:${name}`,
    token.status?.token ?? '',
  );
}

const conversionTo = (service: string) => ({
  strategy: 'Webhook',
  webhook: {
    conversionReviewVersions: ['v1'],
    clientConfig: { service: { name: service, namespace: POLICY_NAMESPACE, path: '/convert', port: 443 } },
  },
});

/** A server-side apply as the handover makes it: its field manager, these fields only. */
function handoverApply(kc: KubeConfig, name: string, body: object): Promise<unknown> {
  return objectsAs(kc).patch(
    { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name }, ...body },
    undefined,
    undefined,
    'switchyard-handover',
    true,
    PatchStrategy.ServerSideApply,
  );
}

const webhookServer = (name: string, spec: object): KubernetesObject =>
  ({
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec,
  }) as KubernetesObject;

beforeAll(async () => {
  cluster = await startLocalCluster({ log });
  admin = cluster.kubeConfigFor('admin');
  await applyFile(join(PROJECT_ROOT, 'deploy', 'base', 'namespace.yaml'));
  for (const c of await committedCrds()) await ensureCrd(admin, c);
  for (const file of [
    'instance-policy-configmap',
    'instance-spec',
    'config-target-owner',
    'instances-writes',
    'handover-conversion-only',
    'replica-leases',
  ])
    await applyFile(join(PROJECT_ROOT, 'deploy', 'policies', `${file}.yaml`));
  for (const name of [TARGET, OTHER_TARGET]) {
    const [plural = '', ...group] = name.split('.');
    await ensureCrd(admin, crdWithSpec(plural, group.join('.'), {}));
  }
  // A policy is enforced once the apiserver has compiled it: wait until one refuses.
  await waitFor(
    'the admission policies to be enforced',
    async () => {
      const denied = await objectsAs(admin)
        .create(webhookServer('probe', { extraArgs: ['--nats.url=x'] }), undefined, 'All')
        .then(
          () => false,
          () => true,
        );
      return denied || undefined;
    },
    { timeoutMs: 30_000 },
  );
}, 120_000);

afterAll(async () => {
  await cluster?.stop({ keepDir: false });
});

describe('the instances identity', () => {
  let instances: KubeConfig;
  let teamNamespace: string;
  let boundOnly: string;
  beforeAll(async () => {
    instances = await componentIdentity(cluster, admin, 'instances');
    const core = admin.makeApiClient(CoreV1Api);
    teamNamespace = 'team-a';
    boundOnly = 'bound-not-labelled';
    for (const name of [teamNamespace, boundOnly])
      await core.createNamespace({ body: { metadata: { name } } });
    await optInInstanceNamespace(admin, teamNamespace);
    // The binding without the label: the policy still refuses (the label is the platform team's word).
    await optInInstanceNamespace(admin, boundOnly);
    await core.patchNamespace(
      { name: boundOnly, body: { metadata: { labels: { 'switchyard.dev/instances': null } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await core.createNamespacedSecret({
      namespace: 'kube-system',
      body: { metadata: { name: 'control-plane-key' } },
    });
    await core.createNamespacedService({
      namespace: teamNamespace,
      body: { metadata: { name: 'users-service' }, spec: { ports: [{ port: 80 }] } },
    });
  });

  it('writes a labelled object in an opted-in namespace (control)', async () => {
    await objectsAs(instances).create({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'x-webhook-server', namespace: teamNamespace, labels: MANAGED },
    } as KubernetesObject);
  });

  it('cannot read a Secret of kube-system', async () => {
    const { code } = await refusal(
      instances
        .makeApiClient(CoreV1Api)
        .readNamespacedSecret({ name: 'control-plane-key', namespace: 'kube-system' }),
    );
    expect(code).toBe(403);
  });

  it('cannot write in a namespace that did not opt in', async () => {
    const { code } = await refusal(
      objectsAs(instances).create({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'x', namespace: 'default', labels: MANAGED },
      } as KubernetesObject),
    );
    expect(code).toBe(403);
  });

  it('cannot write in a namespace bound but not labelled', async () => {
    const { code, message } = await refusal(
      objectsAs(instances).create({
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'x', namespace: boundOnly, labels: MANAGED },
      } as KubernetesObject),
    );
    expect(code).toBe(403);
    expect(message).toMatch(/has not opted in to ConversionWebhookServers/);
  });

  const networkPolicy = (namespace: string, labels?: Record<string, string>): KubernetesObject =>
    ({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'x-webhook-server', namespace, ...(labels && { labels }) },
      spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{}] },
    }) as KubernetesObject;

  it('writes a labelled NetworkPolicy in an opted-in namespace (control)', async () => {
    await objectsAs(instances).create(networkPolicy(teamNamespace, MANAGED));
  });

  it('cannot write a NetworkPolicy not labelled as Switchyard’s: it could open a tenant’s Pods', async () => {
    const { code, message } = await refusal(
      objectsAs(instances).create({
        ...networkPolicy(teamNamespace),
        metadata: { name: 'opens-everything', namespace: teamNamespace },
      }),
    );
    expect(code).toBe(403);
    expect(message).toMatch(/writes only objects labelled app.kubernetes.io\/managed-by=switchyard/);
  });

  it('cannot write a NetworkPolicy in a namespace that did not opt in, bound or not', async () => {
    const unbound = await refusal(objectsAs(instances).create(networkPolicy('default', MANAGED)));
    expect(unbound.code, 'no RoleBinding: RBAC refuses').toBe(403);
    const unlabelled = await refusal(objectsAs(instances).create(networkPolicy(boundOnly, MANAGED)));
    expect(unlabelled.code).toBe(403);
    expect(unlabelled.message, 'bound but not labelled: the policy refuses').toMatch(
      /has not opted in to ConversionWebhookServers/,
    );
  });

  it('cannot create an object not labelled as Switchyard’s, nor take over one that was not', async () => {
    const created = await refusal(
      objectsAs(instances).create({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'unlabelled', namespace: teamNamespace },
        spec: { ports: [{ port: 80 }] },
      } as KubernetesObject),
    );
    expect(created.code).toBe(403);
    const takeover = await refusal(
      objectsAs(instances).patch(
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'users-service', namespace: teamNamespace, labels: MANAGED },
          spec: { ports: [{ port: 80 }] },
        } as KubernetesObject,
        undefined,
        undefined,
        'switchyard-instances',
        true,
        PatchStrategy.ServerSideApply,
      ),
    );
    expect(takeover.code).toBe(403);
    expect(takeover.message).toMatch(/never takes over one that was not/);
  });
});

describe('the handover identity', () => {
  let handover: KubeConfig;
  beforeAll(async () => {
    handover = await componentIdentity(cluster, admin, 'handover');
  });

  it('points a target’s conversion at a webhook-server, with its verdict (control)', async () => {
    await handoverApply(handover, TARGET, {
      metadata: { name: TARGET, annotations: { [HANDOVER_VERDICT_ANNOTATION]: 'v1' } },
      spec: { conversion: conversionTo('a-webhook-server') },
    });
  });

  it('cannot change a target’s schema', async () => {
    const { code, message } = await refusal(
      handoverApply(handover, TARGET, {
        spec: {
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: { spec: { type: 'object', properties: { injected: { type: 'string' } } } },
                },
              },
            },
          ],
        },
      }),
    );
    expect(code).toBe(403);
    expect(message).toMatch(/changes only spec.conversion/);
  });

  it('cannot point a target at a Service that is not a webhook-server', async () => {
    const { code } = await refusal(
      handoverApply(handover, OTHER_TARGET, { spec: { conversion: conversionTo('attacker') } }),
    );
    expect(code).toBe(403);
  });

  it('cannot add a label or another annotation', async () => {
    for (const metadata of [{ labels: { owned: 'yes' } }, { annotations: { 'example.com/x': 'y' } }]) {
      const { code } = await refusal(
        handoverApply(handover, TARGET, { metadata: { name: TARGET, ...metadata } }),
      );
      expect(code).toBe(403);
    }
  });
});

describe('a webhook-server replica', () => {
  let replica: KubeConfig;
  const pod = 'a-webhook-server-0';
  const namespace = 'replicas';
  beforeAll(async () => {
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
    await serviceAccountWith(namespace, 'a-webhook-server', [
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'create', 'update', 'patch'],
      },
    ]);
    const created = await admin.makeApiClient(CoreV1Api).createNamespacedPod({
      namespace,
      // Never run: bound to a node nobody serves, it exists only to bind the token to.
      body: {
        metadata: { name: pod },
        spec: {
          nodeName: 'nowhere',
          serviceAccountName: 'a-webhook-server',
          containers: [{ name: 'c', image: 'unused' }],
        },
      },
    });
    replica = await tokenOf(namespace, 'a-webhook-server', { name: pod, uid: created.metadata?.uid ?? '' });
  });

  const lease = (name: string): KubernetesObject =>
    ({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name, namespace },
      spec: { holderIdentity: pod },
    }) as KubernetesObject;

  it('writes its own served-set Lease (control)', async () => {
    await objectsAs(replica).create(lease(servedLeaseName(pod)));
  });

  it('cannot write a leader-election Lease or another replica’s', async () => {
    for (const name of ['kube-controller-manager', servedLeaseName('a-webhook-server-1')]) {
      const { code, message } = await refusal(objectsAs(replica).create(lease(name)));
      expect(code, name).toBe(403);
      expect(message).toMatch(/writes only its own served-set Lease/);
    }
  });
});

describe('whoever writes Switchyard resources', () => {
  let writer: KubeConfig;
  beforeAll(async () => {
    await serviceAccountWith('default', 'platform-user', [
      { apiGroups: ['switchyard.dev'], resources: ['*'], verbs: ['create', 'update', 'patch'] },
      // May change this target's conversion itself, and no other.
      {
        apiGroups: ['apiextensions.k8s.io'],
        resources: ['customresourcedefinitions'],
        resourceNames: [TARGET],
        verbs: ['patch'],
      },
    ]);
    writer = await tokenOf('default', 'platform-user');
  });

  const config = (name: string, target: string): KubernetesObject =>
    ({
      apiVersion: API_VERSION,
      kind: 'CRDConversionConfig',
      metadata: { name },
      spec: { targetCRD: { name: target }, hubVersion: 'v1', spokes: [{ version: 'v2', rules: [] }] },
    }) as KubernetesObject;

  it('configures a target it could repoint itself (control)', async () => {
    await objectsAs(writer).create(config('mine', TARGET), undefined, 'All');
  });

  it('cannot have Switchyard repoint a target it may not patch', async () => {
    const { code, message } = await refusal(
      objectsAs(writer).create(config('theirs', OTHER_TARGET), undefined, 'All'),
    );
    expect(code).toBe(403);
    expect(message).toMatch(`you may not patch CustomResourceDefinition ${OTHER_TARGET} yourself`);
  });

  it('runs an instance of the project image with its own account (control)', async () => {
    await objectsAs(writer).create(
      webhookServer('plain', { extraArgs: ['--log.level=debug'] }),
      undefined,
      'All',
    );
  });

  it.each([
    [
      'in a namespace it may not run Pods in',
      { namespace: 'kube-system' },
      /may not create Deployments in namespace kube-system/,
    ],
    ['of another image', { image: { repository: 'attacker/miner' } }, /is not an allowed image/],
    [
      'as a ServiceAccount of its choosing',
      { serviceAccountName: 'default' },
      /spec.serviceAccountName is not allowed/,
    ],
    ['against another bus', { extraArgs: ['--nats.url=nats://attacker:4222'] }, /spec.extraArgs/],
  ])('cannot run an instance %s', async (_what, spec, message) => {
    const refused = await refusal(objectsAs(writer).create(webhookServer('x', spec), undefined, 'All'));
    expect(refused.code).toBe(403);
    expect(refused.message).toMatch(message);
  });

  it('runs an image and a flag the platform team allowed, once the ConfigMap lists them', async () => {
    await objectsAs(admin).patch(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: INSTANCE_POLICY_CONFIGMAP, namespace: POLICY_NAMESPACE },
        data: {
          allowedImageRepositories: 'registry.example/webhook',
          allowedExtraArgKeys: 'webhook.drainSeconds,webhook.unsafeDropPlanOnReassign',
        },
      } as KubernetesObject,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    const allowed = webhookServer('allowed', {
      image: { repository: 'registry.example/webhook' },
      extraArgs: ['--webhook.unsafeDropPlanOnReassign=true'],
    });
    await waitFor(
      'the allowed image and flag to be admitted',
      () =>
        objectsAs(writer)
          .create(allowed, undefined, 'All')
          .then(
            () => true,
            () => undefined,
          ),
      { timeoutMs: 20_000 },
    );
    const stillRefused = await refusal(
      objectsAs(writer).create(
        webhookServer('x', { extraArgs: ['--nats.url=nats://attacker:4222'] }),
        undefined,
        'All',
      ),
    );
    expect(stillRefused.code).toBe(403);
  });
});
