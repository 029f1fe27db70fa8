// What an instance renders into, server-side applied to the real apiserver as the instances
// handler will: every object is accepted, a second apply of the same rendering changes nothing
// (no new resourceVersion: the apiserver sees a no-op), the Service's EndpointSlices carry the
// managed-by label the watchers select on, the Lease Role grants exactly what BRIEF §4 says,
// and deleting the cluster-scoped instance garbage-collects its namespaced children.
import {
  AuthorizationV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_VERSION, GROUP, MANAGED_BY_LABEL, MANAGED_BY_VALUE, VERSION } from '../src/api/constants.ts';
import { webhookServerSchema } from '../src/api/webhook-server.ts';
import { readCa } from '../src/core/instances/certificate-facts.ts';
import { type RenderedInstance, renderInstance } from '../src/core/instances/render.ts';
import { bundlePem, caValidity, leafValidity, servingDnsNames } from '../src/core/instances/serving-cert.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { x509Issuer } from '../src/tls/x509-issuer.ts';
import { committedCrds, ensureCrd } from './support/crds.ts';
import { createNamespace, useLocalCluster } from './support/local-cluster.ts';

const FIELD_MANAGER = 'switchyard-instances';
const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const objects = KubernetesObjectApi.makeApiClient(admin);
const custom = admin.makeApiClient(CustomObjectsApi);
const NAME = `render-${process.pid}`;
const HANDOVER_SERVICE_ACCOUNT = { name: 'switchyard-handover', namespace: 'switchyard-system' };
let namespace = '';
let rendered: RenderedInstance;

/** The rendered objects with the Secrets' data filled in, as the handler writes them. */
async function withCertificates(r: RenderedInstance): Promise<KubernetesObject[]> {
  const issuer = x509Issuer();
  const now = Date.now();
  const ca = await issuer.createCa({ commonName: `${NAME} CA`, ...caValidity(now) });
  const caFacts = readCa(ca.certPem, ca.keyPem);
  if (caFacts === undefined) throw new Error('CA does not parse');
  const dnsNames = servingDnsNames(r.names.workload, r.names.namespace);
  const leaf = await issuer.issueServing({ ca, dnsNames, ...leafValidity(caFacts.cert, now) });
  const b64 = (text: string) => Buffer.from(text).toString('base64');
  return [
    r.serviceAccount,
    r.role,
    r.roleBinding,
    r.trustBundleRole,
    r.trustBundleRoleBinding,
    r.service,
    r.deployment,
    r.podDisruptionBudget,
    { ...r.caSecret, data: { 'tls.crt': b64(ca.certPem), 'tls.key': b64(ca.keyPem) } },
    {
      ...r.servingSecret,
      data: {
        'tls.crt': b64(leaf.certPem),
        'tls.key': b64(leaf.keyPem),
        'ca.crt': b64(bundlePem([caFacts.cert])),
      },
    },
  ].filter((o): o is KubernetesObject => o !== undefined);
}

function apply(object: KubernetesObject): Promise<KubernetesObject> {
  return objects.patch(object, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
}

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  namespace = await createNamespace(admin, 'instances');
  // No replicas: this test is about the objects, not about running webhook-servers.
  const created = await custom.createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    body: {
      apiVersion: API_VERSION,
      kind: 'ConversionWebhookServer',
      metadata: { name: NAME },
      spec: { namespace, replicas: 0 },
    },
  });
  const result = renderInstance(webhookServerSchema.parse(created), {
    defaultNamespace: 'unused',
    image: { repository: 'switchyard', tag: 'dev' },
    env: { SWITCHYARD_NATS_URL: cluster.info.natsUrl },
    handoverServiceAccount: HANDOVER_SERVICE_ACCOUNT,
  });
  if (!result.ok) throw new Error(result.error);
  rendered = result.value;
});

afterAll(async () => {
  await custom
    .deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: NAME,
    })
    .catch(() => undefined);
  if (namespace)
    await objects
      .delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
      .catch(() => undefined);
});

describe('a rendered instance on the apiserver', () => {
  it('is accepted by a server-side apply, and re-applying the same rendering is a no-op', async () => {
    // The Secrets' data is fresh randomness each time: re-apply exactly what was applied.
    const applied = await withCertificates(rendered);
    const first = await Promise.all(applied.map(apply));
    // managedFields times have a resolution of a second: a write in the re-apply would show.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const again = await Promise.all(applied.map(apply));
    for (const write of first.map(ownWrite)) expect(write.entry?.time, write.object).toBeDefined();
    // Controllers write the Deployment's and PDB's status meanwhile, so resourceVersions move;
    // an apply that changed nothing leaves the generation and this manager's entry (its time
    // included) exactly as they were.
    expect(again.map(ownWrite), 'a re-apply that writes would wake every watcher for nothing').toEqual(
      first.map(ownWrite),
    );
  });

  it('re-rendering from the instance as read again yields the same objects (byte-identical)', async () => {
    const read = await custom.getClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: NAME,
    });
    const again = renderInstance(webhookServerSchema.parse(read), {
      defaultNamespace: 'unused',
      image: { repository: 'switchyard', tag: 'dev' },
      env: { SWITCHYARD_NATS_URL: cluster.info.natsUrl },
      handoverServiceAccount: HANDOVER_SERVICE_ACCOUNT,
    });
    expect(JSON.stringify(again.ok && again.value)).toBe(JSON.stringify(rendered));
  });

  it("gives the Service's EndpointSlices the managed-by label the watchers select on", async () => {
    const discovery = admin.makeApiClient(DiscoveryV1Api);
    const slices = await waitFor('an EndpointSlice of the instance Service', async () => {
      const list = await discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: `kubernetes.io/service-name=${rendered.names.workload}`,
      });
      return list.items.length > 0 ? list.items : undefined;
    });
    for (const slice of slices) expect(slice.metadata?.labels?.[MANAGED_BY_LABEL]).toBe(MANAGED_BY_VALUE);
  });

  it.each([
    { verb: 'create', resource: 'leases', inNamespace: true, allowed: true },
    { verb: 'update', resource: 'leases', inNamespace: true, allowed: true },
    { verb: 'get', resource: 'leases', inNamespace: true, allowed: true },
    { verb: 'patch', resource: 'leases', inNamespace: true, allowed: true },
    { verb: 'list', resource: 'leases', inNamespace: true, allowed: false },
    { verb: 'watch', resource: 'leases', inNamespace: true, allowed: false },
    { verb: 'delete', resource: 'leases', inNamespace: true, allowed: false },
    { verb: 'create', resource: 'leases', inNamespace: false, allowed: false },
    { verb: 'get', resource: 'secrets', inNamespace: true, allowed: false },
  ])('the replicas may $verb $resource (own namespace: $inNamespace): $allowed', async ({
    verb,
    resource,
    inNamespace,
    allowed,
  }) => {
    const authz = admin.makeApiClient(AuthorizationV1Api);
    const group = resource === 'leases' ? 'coordination.k8s.io' : '';
    const review = await authz.createSubjectAccessReview({
      body: {
        spec: {
          user: `system:serviceaccount:${namespace}:${rendered.names.serviceAccount}`,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: { verb, group, resource, namespace: inNamespace ? namespace : 'default' },
        },
      },
    });
    expect(review.status?.allowed ?? false).toBe(allowed);
  });

  it('is garbage-collected with the cluster-scoped instance that owns it', { timeout: 150_000 }, async () => {
    await custom.deleteClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      name: NAME,
    });
    const children = (await withCertificates(rendered)).map((o) => ({
      apiVersion: o.apiVersion ?? '',
      kind: o.kind ?? '',
      metadata: { name: o.metadata?.name ?? '', namespace },
    }));
    await waitFor(
      'every child to be collected',
      async () => {
        const left = await Promise.all(children.map(stillThere));
        return left.some(Boolean) ? undefined : true;
        // The garbage collector learns of a new owner kind on its discovery resync (30 s).
      },
      { timeoutMs: 120_000 },
    );
  });
});

function ownWrite(o: KubernetesObject) {
  const entry = o.metadata?.managedFields?.find(
    (f) => f.manager === FIELD_MANAGER && f.operation === 'Apply',
  );
  return { object: `${o.kind}/${o.metadata?.name}`, generation: o.metadata?.generation, entry };
}

async function stillThere(header: {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
}) {
  try {
    await objects.read(header);
    return true;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return false;
    throw err;
  }
}
