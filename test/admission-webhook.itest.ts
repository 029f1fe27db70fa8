// The admission webhook as a user deploys it: deploy/admission/ applied to the local cluster as
// it ships, with no certificate step: two replicas running as pods under their own
// ServiceAccount issue their serving certificate and patch the ValidatingWebhookConfiguration's
// caBundle themselves. Every write below goes through the real kube-apiserver, which calls the
// webhook through its Service: a bad write is refused with the webhook's message, a good one
// admitted, a pin to a missing instance admitted with a warning. Then: the certificate was
// issued and published by the admission identity and is re-issued when its Secret is lost; the
// identity writes nothing but its two Secrets and that caBundle; and with no replica running
// (fail closed) a spec change is refused while a metadata write still passes.
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  RequestContext,
  setHeaderOptions,
  type V1Deployment,
} from '@kubernetes/client-node';
import { fetch } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instancePolicyConfigMap } from '../src/api/admission-policies.ts';
import { API_VERSION, GROUP, VERSION } from '../src/api/constants.ts';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';
import { kubeConfigFromToken } from '../src/local-cluster/kubeconfig.ts';
import { waitFor } from '../src/local-cluster/wait.ts';
import { auditLogFromNow } from './support/audit-log.ts';
import { committedCrds, crdWithSpec, ensureCrd } from './support/crds.ts';
import { componentIdentity } from './support/identities.ts';
import { useLocalCluster } from './support/local-cluster.ts';

const NAMESPACE = 'switchyard-system';
const SERVICE_ACCOUNT = 'switchyard-admission';
const USER = `system:serviceaccount:${NAMESPACE}:${SERVICE_ACCOUNT}`;
const WEBHOOK = 'switchyard-admission';
const DENIED = 'admission webhook "admission.switchyard.dev" denied the request: ';
const TARGET = 'widgets.admission.switchyard.dev';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
const apps = admin.makeApiClient(AppsV1Api);
const objects = admin.makeApiClient(KubernetesObjectApi);
let audit: Awaited<ReturnType<typeof auditLogFromNow>>;

interface Answer {
  status: number;
  message: string;
  warnings: string[];
}

/** A raw write as admin: the status, the apiserver's message and the admission warnings it relayed. */
async function send(
  method: 'POST' | 'PATCH',
  path: string,
  body: unknown,
  kc: KubeConfig = admin,
): Promise<Answer> {
  const url = `${kc.getCurrentCluster()?.server}${path}`;
  const ctx = new RequestContext(url, method === 'POST' ? HttpMethod.POST : HttpMethod.PATCH);
  await kc.applySecurityAuthentication(ctx);
  const res = await fetch(url, {
    method,
    body: JSON.stringify(body),
    headers: {
      ...ctx.getHeaders(),
      'content-type': method === 'POST' ? 'application/json' : 'application/merge-patch+json',
    },
    dispatcher: ctx.getDispatcher(),
  });
  const json = (await res.json()) as { message?: string };
  const warnings = [...(res.headers.get('warning') ?? '').matchAll(/299 - "((?:[^"\\]|\\.)*)"/g)].map((m) =>
    (m[1] ?? '').replaceAll('\\"', '"'),
  );
  return { status: res.status, message: json.message ?? '', warnings };
}

const plural = (kind: 'cws' | 'crd' | 'xrd') =>
  ({ cws: 'conversionwebhookservers', crd: 'crdconversionconfigs', xrd: 'xrdconversionconfigs' })[kind];
const collection = (kind: 'cws' | 'crd' | 'xrd') => `/apis/${GROUP}/${VERSION}/${plural(kind)}`;

const instanceRef = (name: string): KubernetesObject => ({
  apiVersion: API_VERSION,
  kind: 'ConversionWebhookServer',
  metadata: { name },
});
const createInstance = (name: string, spec: Record<string, unknown> = {}) =>
  send('POST', collection('cws'), {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec,
  });
const patchInstance = (name: string, spec: Record<string, unknown>, metadata?: Record<string, unknown>) =>
  send('PATCH', `${collection('cws')}/${name}`, { spec, ...(metadata && { metadata }) });

const renameRule = {
  strategy: 'FieldRename',
  fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
};
const createConfig = (
  kind: 'crd' | 'xrd',
  name: string,
  target: string,
  spec: Record<string, unknown> = {},
) =>
  send('POST', collection(kind), {
    apiVersion: API_VERSION,
    kind: kind === 'crd' ? 'CRDConversionConfig' : 'XRDConversionConfig',
    metadata: { name },
    spec: {
      [kind === 'crd' ? 'targetCRD' : 'targetXRD']: { name: target },
      hubVersion: 'v2',
      spokes: [{ version: 'v1', rules: [] }],
      ...spec,
    },
  });

/** A target whose storage version v2 calls `spec.size` what v1 calls `spec.replicas`. */
async function createTarget(): Promise<void> {
  const version = (name: string, field: string, storage: boolean) => ({
    name,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: { [field]: { type: 'string' } } } },
      },
    },
  });
  const res = await send('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: TARGET },
    spec: {
      group: 'admission.switchyard.dev',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [version('v2', 'size', true), version('v1', 'replicas', false)],
    },
  });
  expect(res.status, res.message).toBe(201);
}

async function manifests(file: string): Promise<KubernetesObject[]> {
  return loadAllYaml(
    await readFile(join(PROJECT_ROOT, 'deploy', 'admission', file), 'utf8'),
  ) as KubernetesObject[];
}

const CA_SECRET = 'switchyard-admission-ca';
const SERVING_SECRET = 'switchyard-admission-tls';

/** A Secret's data, decoded; undefined when it does not exist. */
async function secretData(name: string): Promise<Record<string, string> | undefined> {
  const secret = await core.readNamespacedSecret({ name, namespace: NAMESPACE }).catch((err) => {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  });
  if (secret === undefined) return undefined;
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );
}

/** Each webhook's caBundle, decoded. */
async function publishedCaBundles(): Promise<string[]> {
  const config = (await objects.read({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: WEBHOOK },
  })) as { webhooks?: { clientConfig: { caBundle?: string } }[] };
  return (config.webhooks ?? []).map((w) =>
    Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString('utf8'),
  );
}

/** A review the webhook must refuse: a second default instance. */
async function webhookRefusesSecondDefault(): Promise<boolean> {
  const probe = await createInstance('adm-probe', { default: true });
  if (probe.status === 201) await objects.delete(instanceRef('adm-probe'));
  return probe.message.startsWith(DENIED);
}

async function readyReplicas(n: number): Promise<void> {
  await waitFor(
    `${n} ready admission replicas`,
    async () => {
      const d = await apps.readNamespacedDeployment({ name: 'switchyard-admission', namespace: NAMESPACE });
      return (d.status?.readyReplicas ?? 0) === n ? true : undefined;
    },
    { timeoutMs: 60_000 },
  );
}

beforeAll(async () => {
  audit = await auditLogFromNow(cluster.info.auditLog);
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  await core.createNamespace({ body: { metadata: { name: NAMESPACE } } }).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  // A fresh install: no certificate Secret left by anything before.
  for (const name of [CA_SECRET, SERVING_SECRET])
    await core.deleteNamespacedSecret({ name, namespace: NAMESPACE }).catch((err) => {
      if ((err as { code?: number }).code !== 404) throw err;
    });
  // The manifests exactly as they ship: no certificate, no caBundle.
  for (const o of await manifests('rbac.yaml')) await objects.create(o);
  for (const o of await manifests('deployment.yaml')) await objects.create(o);
  for (const o of await manifests('webhook.yaml')) await objects.create(o);
  // What instances may ask for, as deploy/policies ships it (the policies themselves are
  // cluster-wide and tried in test/privilege.itest.ts, on a cluster of their own).
  await objects.create(instancePolicyConfigMap() as KubernetesObject).catch((err) => {
    if ((err as { code?: number }).code !== 409) throw err;
  });
  await readyReplicas(2);

  // The apiserver picks a new webhook configuration and its endpoints up asynchronously, and
  // the caBundle is patched in by a replica within seconds (until then a call fails, 500):
  // probe until the webhook itself answers.
  await waitFor(
    'the webhook to answer',
    async () => {
      const main = await createInstance('adm-main', { default: true });
      if (main.status !== 201 && main.status !== 409) return undefined;
      return (await webhookRefusesSecondDefault()) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}, 180_000);

afterAll(async () => {
  // First, so no later test file depends on this one's webhook.
  await objects.delete({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: WEBHOOK },
  });
  const custom = admin.makeApiClient(CustomObjectsApi);
  for (const kind of ['cws', 'crd', 'xrd'] as const) {
    const list = (await custom.listClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: plural(kind),
    })) as {
      items: { metadata: { name: string } }[];
    };
    for (const { metadata } of list.items.filter((i) => i.metadata.name.startsWith('adm-')))
      await custom.deleteClusterCustomObject({
        group: GROUP,
        version: VERSION,
        plural: plural(kind),
        name: metadata.name,
      });
  }
  await apps.deleteNamespacedDeployment({ name: 'switchyard-admission', namespace: NAMESPACE });
  for (const name of [CA_SECRET, SERVING_SECRET])
    await core.deleteNamespacedSecret({ name, namespace: NAMESPACE }).catch(() => undefined);
});

describe('admission webhook deployed from deploy/admission', () => {
  it('rejects an instance in a namespace that did not opt in, or of another image, saying how to fix it', async () => {
    const elsewhere = await createInstance('adm-elsewhere', { namespace: 'kube-system' });
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.message).toContain(
      `${DENIED}namespace "kube-system" does not run ConversionWebhookServers: a platform team opts it in with the label switchyard.dev/instances=allowed`,
    );
    const image = await createInstance('adm-image', { image: { repository: 'attacker/miner' } });
    expect(image.status).toBe(422);
    expect(image.message).toContain('spec.image.repository "attacker/miner" is not an allowed image');
    await core.patchNamespace(
      { name: 'default', body: { metadata: { labels: { 'switchyard.dev/instances': 'allowed' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    try {
      // A dry run: reviewed, never stored, so no instances handler of another file renders it.
      const optedIn = await send('POST', `${collection('cws')}?dryRun=All`, {
        apiVersion: API_VERSION,
        kind: 'ConversionWebhookServer',
        metadata: { name: 'adm-opted-in' },
        spec: { namespace: 'default', replicas: 0 },
      });
      expect(optedIn.status).toBe(201);
    } finally {
      await core.patchNamespace(
        { name: 'default', body: { metadata: { labels: { 'switchyard.dev/instances': null } } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
    }
  });

  it('rejects a second default instance, naming both', async () => {
    const res = await createInstance('adm-second', { default: true });
    expect(res.status).toBe(422);
    expect(res.message).toBe(
      `${DENIED}at most one ConversionWebhookServer may be marked default, found 2: adm-main, adm-second`,
    );
  });

  it('rejects sharding on an instance while the default is outside the pool, stating the safe order', async () => {
    expect((await createInstance('adm-b')).status).toBe(201);
    const res = await patchInstance('adm-b', { sharding: { enabled: true } });
    expect(res.status).toBe(422);
    expect(res.message).toContain(
      `${DENIED}sharding is enabled on adm-b but not on the default instance "adm-main"`,
    );
    expect(res.message).toContain('Enable spec.sharding on "adm-main" first (a pool of one moves nothing)');
  });

  it('admits the safe order: the default joins the pool first, then the others', async () => {
    expect((await patchInstance('adm-main', { sharding: { enabled: true } })).status).toBe(200);
    expect((await patchInstance('adm-b', { sharding: { enabled: true, weight: 3 } })).status).toBe(200);
  });

  it('rejects a non-positive weight (the CRD schema answers before the webhook, which checks it again)', async () => {
    const res = await patchInstance('adm-b', { sharding: { enabled: true, weight: 0 } });
    expect(res.status).toBe(422);
    expect(res.message).toContain('spec.sharding.weight');
  });

  it('rejects rule errors the engine finds against the live target, each with its fix', async () => {
    await createTarget();
    const res = await createConfig('crd', 'adm-widgets', TARGET);
    expect(res.status, res.message).toBe(422);
    expect(res.message).toMatch(
      /^admission webhook .* denied the request: error UnclaimedField spokes\[v1\] spec\.\w+: .* Fix: /,
    );
  });

  it('rejects what the engine rejects of every strategy, with the engine’s own messages', async () => {
    const cel = {
      strategy: 'CEL',
      cel: {
        hubPaths: ['spec.size'],
        spokePaths: ['spec.replicas'],
        hubToSpoke: '{"spec.replicas": object.spec.size +',
        spokeToHub: '{"spec.size": object.spec.replicas}',
      },
      acknowledgeLossy: true,
    };
    const expression = await createConfig('crd', 'adm-widgets', TARGET, {
      spokes: [{ version: 'v1', rules: [cel] }],
    });
    expect(expression.status, expression.message).toBe(422);
    expect(expression.message).toMatch(
      /error InvalidExpression spokes\[v1\].* cel\.hubToSpoke: syntax error/,
    );
    // A ForEach's nested rules are schemaless in the CRD, as in the reference: the API schema refuses them.
    const nested = {
      strategy: 'ForEach',
      forEach: { hubItemsPath: 'spec.items', spokeItemsPath: 'spec.items', rules: [{ strategy: 'Rename' }] },
    };
    const unknown = await createConfig('crd', 'adm-widgets', TARGET, {
      spokes: [{ version: 'v1', rules: [nested] }],
    });
    expect(unknown.status, unknown.message).toBe(422);
    expect(unknown.message).toContain('strategy "Rename" is not supported');
  });

  it('admits a config whose rules compile, without a warning', async () => {
    const res = await createConfig('crd', 'adm-widgets', TARGET, {
      spokes: [{ version: 'v1', rules: [renameRule] }],
    });
    expect(res).toMatchObject({ status: 201, warnings: [] });
  });

  it('lets the handover identity change a target’s conversion only while a config targets it', async () => {
    const handover = await componentIdentity(cluster.info, admin, 'handover');
    const untargeted = crdWithSpec('gizmos', 'admission.switchyard.dev', { size: { type: 'string' } });
    await ensureCrd(admin, untargeted);
    const conversion = (service: string) => ({
      spec: {
        conversion: {
          strategy: 'Webhook',
          webhook: {
            conversionReviewVersions: ['v1'],
            clientConfig: { service: { name: service, namespace: NAMESPACE, path: '/convert', port: 443 } },
          },
        },
      },
    });
    const crdPath = (name: string) => `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${name}`;
    const refused = await send(
      'PATCH',
      crdPath(untargeted.metadata?.name ?? ''),
      conversion('a-webhook-server'),
      handover,
    );
    expect(refused.status, refused.message).toBe(403);
    expect(refused.message).toContain(
      'admission webhook "handover-targets.switchyard.dev" denied the request',
    );
    expect(refused.message).toContain('none targets "gizmos.admission.switchyard.dev"');
    // Control: adm-widgets targets TARGET, so its conversion may change, and back again.
    const admitted = await send('PATCH', crdPath(TARGET), conversion('a-webhook-server'), handover);
    expect(admitted.status, admitted.message).toBe(200);
    const restored = await send(
      'PATCH',
      crdPath(TARGET),
      { spec: { conversion: { strategy: 'None', webhook: null } } },
      handover,
    );
    expect(restored.status, restored.message).toBe(200);
  });

  it('rejects a second config for the target across kinds, naming the first', async () => {
    const res = await createConfig('xrd', 'adm-widgets-xrd', TARGET);
    expect(res.status).toBe(422);
    expect(res.message).toBe(
      `${DENIED}spec target "${TARGET}" is already converted by CRDConversionConfig "adm-widgets"; target names are unique across CRDConversionConfig and XRDConversionConfig: delete or retarget that config first`,
    );
  });

  it('admits a pin to a missing instance with a warning, and an XRD config before its target exists', async () => {
    const pinned = await send('PATCH', `${collection('crd')}/adm-widgets`, {
      spec: { webhookServerRef: { name: 'adm-later' } },
    });
    expect(pinned.status).toBe(200);
    expect(pinned.warnings).toEqual([
      expect.stringContaining('names ConversionWebhookServer "adm-later", which does not exist'),
    ]);
    const early = await createConfig('xrd', 'adm-early', 'xgadgets.admission.switchyard.dev');
    expect(early.status).toBe(201);
    expect(early.warnings).toEqual([
      expect.stringContaining(
        'CompositeResourceDefinition "xgadgets.admission.switchyard.dev" does not exist yet',
      ),
    ]);
  });

  it('issued its own certificate: its CA signed what it serves, and it published that CA as every caBundle', async () => {
    const ca = await secretData(CA_SECRET);
    const serving = await secretData(SERVING_SECRET);
    expect(ca?.['tls.key'], 'the CA Secret holds no key').toContain('PRIVATE KEY');
    const caCert = new X509Certificate(ca?.['tls.crt'] ?? '');
    const leaf = new X509Certificate(serving?.['tls.crt'] ?? '');
    expect(caCert.ca).toBe(true);
    expect(
      leaf.checkIssued(caCert) && leaf.verify(caCert.publicKey),
      'the served certificate is not the CA’s',
    ).toBe(true);
    expect(leaf.subjectAltName).toBe(`DNS:switchyard-admission.${NAMESPACE}.svc`);
    expect(serving?.['ca.crt']?.trim(), 'the trust bundle is not the CA').toBe(ca?.['tls.crt']?.trim());
    const bundles = await publishedCaBundles();
    expect(bundles.length).toBeGreaterThan(0);
    for (const bundle of bundles) expect(bundle).toBe(serving?.['ca.crt']);

    const patches = await audit.waitFor('the caBundle patched by the admission identity', (events) =>
      events.filter(
        (e) =>
          e.user.username === USER &&
          e.verb === 'patch' &&
          e.objectRef?.resource === 'validatingwebhookconfigurations' &&
          e.objectRef.name === WEBHOOK &&
          e.responseStatus?.code === 200,
      ),
    );
    expect(patches[0]?.userAgent).toBe('switchyard/admission/writes');
    const created = await audit.waitFor(
      'both Secrets created by the admission identity',
      (events) =>
        events.filter(
          (e) => e.user.username === USER && e.verb === 'create' && e.responseStatus?.code === 201,
        ),
      2,
    );
    expect(new Set(created.map((e) => e.objectRef?.name))).toEqual(new Set([CA_SECRET, SERVING_SECRET]));
  });

  it('re-issues a deleted serving Secret from the same CA while the webhook keeps answering', async () => {
    const before = await secretData(SERVING_SECRET);
    const bundlesBefore = await publishedCaBundles();
    await core.deleteNamespacedSecret({ name: SERVING_SECRET, namespace: NAMESPACE });
    let unanswered = 0;
    const after = await waitFor(
      'the serving Secret re-issued',
      async () => {
        // Served all along: the replicas keep the pair they have.
        if (!(await webhookRefusesSecondDefault())) unanswered++;
        const now = await secretData(SERVING_SECRET);
        return now?.['tls.crt'] ? now : undefined;
      },
      { timeoutMs: 90_000, intervalMs: 1_000 },
    );
    expect(unanswered, 'reviews the webhook did not answer while its Secret was gone').toBe(0);
    expect(after['tls.crt']).not.toBe(before?.['tls.crt']);
    expect(after['ca.crt'], 'a lost serving Secret must not replace the CA').toBe(before?.['ca.crt']);
    expect(await publishedCaBundles()).toEqual(bundlesBefore);
    // Both replicas serve the new pair within a pass (30 s); either way the apiserver verifies it.
    expect(await webhookRefusesSecondDefault()).toBe(true);
  });

  it('runs on its manifest’s grants alone: reads for reviews, writes only for its certificate', async () => {
    const theirs = (await audit.all()).filter(
      (e) => e.user.username === USER && e.userAgent?.startsWith('switchyard/admission/'),
    );
    expect(theirs.length).toBeGreaterThan(0);
    const reads = theirs.filter((e) => e.userAgent === 'switchyard/admission/informers');
    expect(new Set(reads.map((e) => e.verb))).toEqual(new Set(['list', 'get']));
    const certificate = theirs.filter((e) => e.userAgent === 'switchyard/admission/writes');
    expect(certificate.length + reads.length, 'a request on a third client').toBe(theirs.length);
    for (const e of certificate) {
      const what = `${e.verb} ${e.objectRef?.resource}/${e.objectRef?.name ?? ''}`;
      expect(
        ['get', 'create', 'patch'].includes(e.verb) &&
          ((e.objectRef?.resource === 'secrets' && e.objectRef.namespace === NAMESPACE) ||
            (e.objectRef?.resource === 'validatingwebhookconfigurations' && e.objectRef.name === WEBHOOK)),
        what,
      ).toBe(true);
    }
    expect(theirs.filter((e) => e.responseStatus?.code === 403).map((e) => e.requestURI)).toEqual([]);
  });

  it('cannot write anything but its certificate, nor read beyond what a review and its certificate need', async () => {
    const token = await core.createNamespacedServiceAccountToken({
      name: SERVICE_ACCOUNT,
      namespace: NAMESPACE,
      body: { spec: { audiences: [], expirationSeconds: 600 } },
    });
    const kc = kubeConfigFromToken(cluster.info.endpoint, USER, token.status?.token ?? '');
    const asAdmission = { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
    const cws = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
    expect(
      (
        await send(
          'POST',
          collection('cws'),
          { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', metadata: { name: 'adm-x' }, spec: {} },
          kc,
        )
      ).status,
    ).toBe(403);
    expect((await send('PATCH', `${collection('cws')}/adm-b`, { spec: { default: true } }, kc)).status).toBe(
      403,
    );
    expect(
      (await send('PATCH', `${collection('cws')}/adm-b/status`, { status: { replicas: 1 } }, kc)).status,
    ).toBe(403);
    expect(
      (await send('PATCH', `${collection('crd')}/adm-widgets`, { metadata: { labels: { x: 'y' } } }, kc))
        .status,
    ).toBe(403);
    expect(
      (
        await send(
          'PATCH',
          `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${TARGET}`,
          { metadata: { labels: { x: 'y' } } },
          kc,
        )
      ).status,
    ).toBe(403);
    await expect(
      asAdmission.custom.deleteClusterCustomObject({ ...cws, name: 'adm-b' }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      asAdmission.core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: 'x' } } }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(asAdmission.core.listNamespacedSecret({ namespace: NAMESPACE })).rejects.toMatchObject({
      code: 403,
    });
    // Its own two Secrets by name, and no other: not a neighbour's in its namespace, none elsewhere.
    await core.createNamespacedSecret({
      namespace: NAMESPACE,
      body: { metadata: { name: 'adm-neighbour' }, stringData: { password: 'x' } },
    });
    try {
      await expect(
        asAdmission.core.readNamespacedSecret({ name: 'adm-neighbour', namespace: NAMESPACE }),
      ).rejects.toMatchObject({ code: 403 });
      expect(
        (await send('PATCH', `/api/v1/namespaces/${NAMESPACE}/secrets/adm-neighbour`, { data: {} }, kc))
          .status,
      ).toBe(403);
    } finally {
      await core.deleteNamespacedSecret({ name: 'adm-neighbour', namespace: NAMESPACE });
    }
    await expect(
      asAdmission.core.readNamespacedSecret({ name: SERVING_SECRET, namespace: NAMESPACE }),
    ).resolves.toBeDefined();
    const kubeSystemSecret = (await core.listNamespacedSecret({ namespace: 'kube-system' })).items[0]
      ?.metadata?.name;
    await expect(
      asAdmission.core.readNamespacedSecret({
        name: kubeSystemSecret ?? SERVING_SECRET,
        namespace: 'kube-system',
      }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(
      asAdmission.core.createNamespacedSecret({
        namespace: 'kube-system',
        body: { metadata: { name: 'adm-x' } },
      }),
    ).rejects.toMatchObject({ code: 403 });
    // The caBundle of its own webhook configuration, of no other.
    const other = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'adm-other' },
      webhooks: [],
    };
    await objects.create(other);
    try {
      expect(
        (
          await send(
            'PATCH',
            '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/adm-other',
            { metadata: { labels: { x: 'y' } } },
            kc,
          )
        ).status,
      ).toBe(403);
    } finally {
      await objects.delete(other);
    }
    // Only what a review reads: list the project's kinds, get one target by name.
    await expect(asAdmission.custom.getClusterCustomObject({ ...cws, name: 'adm-b' })).rejects.toMatchObject({
      code: 403,
    });
    await expect(
      asAdmission.custom.listClusterCustomObject({
        group: 'apiextensions.k8s.io',
        version: 'v1',
        plural: 'customresourcedefinitions',
      }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(asAdmission.custom.listClusterCustomObject(cws)).resolves.toBeDefined();
  });

  it('fails closed with no replica running, yet never blocks a write that leaves the spec alone', async () => {
    const deployment = await apps.readNamespacedDeployment({
      name: 'switchyard-admission',
      namespace: NAMESPACE,
    });
    await apps.replaceNamespacedDeployment({
      name: 'switchyard-admission',
      namespace: NAMESPACE,
      body: {
        ...deployment,
        spec: { ...(deployment.spec as NonNullable<V1Deployment['spec']>), replicas: 0 },
      },
    });
    await waitFor('no admission pod left', async () => {
      const pods = await core.listNamespacedPod({
        namespace: NAMESPACE,
        labelSelector: 'app.kubernetes.io/component=admission',
      });
      return pods.items.length === 0 ? true : undefined;
    });
    const specChange = await patchInstance('adm-b', { replicas: 3 });
    expect(specChange.status, 'a spec change was admitted unchecked while admission was down').toBe(500);
    expect(specChange.message).toContain('failed calling webhook "admission.switchyard.dev"');
    const labelled = await patchInstance(
      'adm-b',
      {},
      { labels: { team: 'a' }, finalizers: ['example.com/hold'] },
    );
    expect(labelled.status, 'a metadata write (what deletion needs) waited on admission').toBe(200);
    expect((await patchInstance('adm-b', {}, { finalizers: null })).status).toBe(200);
  });
});
