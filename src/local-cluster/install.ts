// Switchyard installed on the local cluster the way a user installs it with a NATS of their
// own: deploy/external-nats rendered by kustomize and applied, its NATS address set to the local
// server's (what a user writes in the overlay's nats-address.yaml). The admission webhook
// issues its own serving certificate and fills in its caBundle, as on a user's cluster.
// The kube-controller-manager creates the Pods and the node agent runs them; nothing of
// Switchyard runs in the caller's process.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  AppsV1Api,
  BatchV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type V1Container,
  type V1Deployment,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { NATS_CREDENTIALS_SECRET } from '../access/nats-credentials-secret.ts';
import { NATS_IDENTITIES } from '../access/nats-permissions.ts';
import { DEFAULT_OPERATOR_NAMESPACE, GROUP, VERSION } from '../api/constants.ts';
import { CRD_CONFIG_KIND } from '../api/conversion-config.ts';
import { PROJECT_ROOT } from './cluster.ts';
import { runKubectl } from './kubectl.ts';
import { waitFor } from './wait.ts';

export const SWITCHYARD_NAMESPACE = DEFAULT_OPERATOR_NAMESPACE;
const FIELD_MANAGER = 'switchyard-local-install';

export interface InstallOptions {
  admin: KubeConfig;
  /** The bus every component and every rendered webhook-server replica connects to. */
  natsUrl: string;
  /**
   * The CA its certificate chains to, when it requires TLS (`LocalCluster.natsCaFile`): put in the
   * Secret `switchyard-nats-ca` and mounted in every component that connects to NATS.
   */
  natsCaFile?: string | undefined;
  /** Its users' passwords, one file per user (`LocalCluster.natsCredentialsDir`). */
  natsCredentialsDir: string;
  /**
   * `bus.streamReplicas` for every component, as deploy/nats-cluster sets it: 3 on a clustered
   * bus (`startLocalCluster({ natsCluster: true })`). Unset: the configuration's default, 1.
   */
  streamReplicas?: 1 | 3;
  log: Logger;
  timeoutMs?: number;
  /** The deploy/ tree to apply; this checkout's unless said (an upgrade test applies an earlier one first). */
  deployRoot?: string;
}

/** What was installed, to wait on or tear down. */
export interface Installed {
  deployments: string[];
}

export const DEPLOY_ROOT = join(PROJECT_ROOT, 'deploy');

/** `kubectl kustomize deploy/<overlay>`: the objects `kubectl apply -k` would send, in its order. */
export async function renderDeploy(overlay: string, deployRoot = DEPLOY_ROOT): Promise<KubernetesObject[]> {
  // kustomize reads no cluster: the kubeconfig is never opened.
  const result = await runKubectl('/dev/null', ['kustomize', join(deployRoot, overlay)]);
  if (result.code !== 0)
    throw new Error(`kubectl kustomize ${join(deployRoot, overlay)}: ${result.stderr.trim()}`);
  return loadAllYaml(result.stdout) as KubernetesObject[];
}

/** The order objects are applied in, by kind: what each phase needs exists before it. */
const PHASES = {
  namespace: ['Namespace'],
  crds: ['CustomResourceDefinition'],
  access: [
    'ServiceAccount',
    'ClusterRole',
    'ClusterRoleBinding',
    'Role',
    'RoleBinding',
    'PriorityLevelConfiguration',
    'FlowSchema',
    'ValidatingAdmissionPolicy',
    'ValidatingAdmissionPolicyBinding',
  ],
  workloads: ['ConfigMap', 'Service', 'NetworkPolicy', 'PodDisruptionBudget', 'Job', 'Deployment'],
  admission: ['ValidatingWebhookConfiguration'],
} as const;

/**
 * Applies deploy/external-nats to the cluster, the NATS address set as a user sets it in that
 * overlay, and resolves once every component is ready (over an earlier install: rolled out) and
 * the admission webhook answers:
 * namespace, CRDs (established), identities and API priority, the NATS credentials Secret, the
 * workloads (the credentials and bus-setup Jobs complete, every Deployment's replicas ready), then
 * the ValidatingWebhookConfiguration.
 */
export async function installSwitchyard(opts: InstallOptions): Promise<Installed> {
  const { admin, log } = opts;
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const apply = (o: KubernetesObject) =>
    objects.patch(o, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  const rendered = (await renderDeploy('external-nats', opts.deployRoot)).map((o) =>
    forThisCluster(o, opts.natsUrl, opts.streamReplicas, opts.natsCaFile !== undefined),
  );
  const phase = (kinds: readonly string[]) => rendered.filter((o) => kinds.includes(o.kind ?? ''));
  const unplaced = rendered.filter(
    (o) => !Object.values(PHASES).some((kinds) => kinds.includes(o.kind as never)),
  );
  if (unplaced.length > 0)
    throw new Error(
      `deploy/ has objects no install phase applies: ${unplaced.map((o) => o.kind).join(', ')}`,
    );

  for (const o of phase(PHASES.namespace)) await apply(o);
  const crds = phase(PHASES.crds);
  for (const crd of crds) await apply(crd);
  await waitForEstablished(admin, crds, timeoutMs);
  log.info({ crds: crds.length }, 'CRDs established');

  for (const o of phase(PHASES.access)) await apply(o);
  await apply(await natsCredentialsSecret(opts.natsCredentialsDir));
  if (opts.natsCaFile !== undefined) await apply(await natsCaSecret(opts.natsCaFile));
  const workloads = phase(PHASES.workloads);
  for (const o of workloads) await apply(o);
  const deployments = workloads.filter((o) => o.kind === 'Deployment').map((o) => o.metadata?.name ?? '');
  // The credentials and bus-setup Jobs, by the names this release gives them.
  for (const job of workloads.filter((o) => o.kind === 'Job'))
    await waitForJob(admin, job.metadata?.name ?? '', timeoutMs);
  await waitForDeployments(admin, deployments, log, timeoutMs);

  for (const o of phase(PHASES.admission)) await apply(o);
  await waitForAdmission(admin, timeoutMs);
  log.info({ deployments }, 'Switchyard is installed and ready');
  return { deployments };
}

/**
 * The credentials Secret as a user of the external-nats overlay makes it: the passwords their
 * NATS server has for each component's user. The nats-credentials Job then finds every user.
 */
export async function natsCredentialsSecret(credentialsDir: string): Promise<KubernetesObject> {
  const data: Record<string, string> = {};
  for (const id of NATS_IDENTITIES)
    data[id] = Buffer.from((await readFile(join(credentialsDir, id), 'utf8')).trim()).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: NATS_CREDENTIALS_SECRET, namespace: SWITCHYARD_NAMESPACE },
    type: 'Opaque',
    data,
  } as KubernetesObject;
}

/** The Secret of the CA a NATS that requires TLS chains to (docs/security.md, "TLS to NATS"). */
export const NATS_CA_SECRET = 'switchyard-nats-ca';
const NATS_CA_VOLUME = 'nats-ca';
const NATS_CA_DIR = '/etc/switchyard/nats-ca';

/** The CA Secret as a user of the external-nats overlay makes it from their NATS server's CA. */
export async function natsCaSecret(caFile: string): Promise<KubernetesObject> {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: NATS_CA_SECRET, namespace: SWITCHYARD_NAMESPACE },
    type: 'Opaque',
    data: { 'ca.crt': (await readFile(caFile)).toString('base64') },
  } as KubernetesObject;
}

/**
 * The overlay a user writes for their cluster: where NATS is, how many replicas its streams keep,
 * and, when it requires TLS, its CA mounted in every container that connects to it.
 */
export function forThisCluster(
  o: KubernetesObject,
  natsUrl: string,
  streamReplicas?: 1 | 3,
  natsTls = false,
): KubernetesObject {
  const template = (o as { spec?: { template?: V1PodTemplateSpec } }).spec?.template;
  for (const c of template?.spec?.containers ?? []) {
    const env = c.env?.find((e) => e.name === 'SWITCHYARD_NATS_URL');
    if (!env) continue;
    env.value = natsUrl;
    if (streamReplicas !== undefined)
      c.env?.push({ name: 'SWITCHYARD_BUS_STREAM_REPLICAS', value: String(streamReplicas) });
    if (natsTls && template?.spec) mountNatsCa(template.spec, c);
  }
  return o;
}

function mountNatsCa(pod: NonNullable<V1PodTemplateSpec['spec']>, c: V1Container): void {
  c.env?.push({ name: 'SWITCHYARD_NATS_TLS_CA_FILE', value: `${NATS_CA_DIR}/ca.crt` });
  c.volumeMounts = [
    ...(c.volumeMounts ?? []),
    { name: NATS_CA_VOLUME, mountPath: NATS_CA_DIR, readOnly: true },
  ];
  if (!pod.volumes?.some((v) => v.name === NATS_CA_VOLUME))
    pod.volumes = [...(pod.volumes ?? []), { name: NATS_CA_VOLUME, secret: { secretName: NATS_CA_SECRET } }];
}

async function waitForEstablished(admin: KubeConfig, crds: KubernetesObject[], timeoutMs: number) {
  const objects = admin.makeApiClient(KubernetesObjectApi);
  for (const crd of crds) {
    await waitFor(
      `CRD ${crd.metadata?.name} established`,
      async () => {
        const live = (await objects.read({
          apiVersion: crd.apiVersion,
          kind: crd.kind,
          metadata: { name: crd.metadata?.name ?? '' },
        })) as { status?: { conditions?: { type: string; status: string }[] } };
        return live.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')
          ? true
          : undefined;
      },
      { timeoutMs },
    );
  }
}

async function waitForJob(admin: KubeConfig, name: string, timeoutMs: number): Promise<void> {
  const batch = admin.makeApiClient(BatchV1Api);
  await waitFor(
    `the ${name} Job to complete`,
    async () => {
      const job = await batch.readNamespacedJob({ name, namespace: SWITCHYARD_NAMESPACE });
      return (job.status?.succeeded ?? 0) > 0 ? true : undefined;
    },
    { timeoutMs },
  );
}

async function waitForDeployments(admin: KubeConfig, names: string[], log: Logger, timeoutMs: number) {
  const apps = admin.makeApiClient(AppsV1Api);
  let reported = '';
  await waitFor(
    'every Switchyard Deployment rolled out',
    async () => {
      const list = await apps.listNamespacedDeployment({ namespace: SWITCHYARD_NAMESPACE });
      const byName = new Map(list.items.map((d) => [d.metadata?.name, d]));
      const pending = names.filter((n) => !rolledOut(byName.get(n)));
      const progress = `${names.length - pending.length}/${names.length} ready`;
      if (progress !== reported) log.info({ pending }, `components: ${progress}`);
      reported = progress;
      return pending.length === 0 ? true : undefined;
    },
    { timeoutMs, intervalMs: 500 },
  );
}

/**
 * As `kubectl rollout status` says "successfully rolled out": the controller has seen the latest
 * spec, and every replica runs it and is available, none of an older template left.
 */
function rolledOut(d: V1Deployment | undefined): boolean {
  if (!d) return false;
  const want = d.spec?.replicas ?? 1;
  const s = d.status ?? {};
  return (
    (s.observedGeneration ?? 0) >= (d.metadata?.generation ?? 1) &&
    (s.updatedReplicas ?? 0) >= want &&
    (s.replicas ?? 0) <= (s.updatedReplicas ?? 0) &&
    (s.availableReplicas ?? 0) >= (s.updatedReplicas ?? 0)
  );
}

/**
 * The apiserver learns a new webhook configuration and its endpoints asynchronously, and admits
 * unchecked until it has; until the admission process has patched in its CA bundle (seconds
 * after the configuration's creation) a call fails, unverified. Probe with a dry-run config the
 * CRD's schema admits and only the webhook refuses (a spoke version its target, one of the
 * project's own CRDs, does not serve) until the webhook itself answers.
 */
async function waitForAdmission(admin: KubeConfig, timeoutMs: number): Promise<void> {
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const probe = {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: CRD_CONFIG_KIND,
    metadata: { name: 'switchyard-install-probe' },
    spec: {
      targetCRD: { name: `conversionwebhookservers.${GROUP}` },
      hubVersion: VERSION,
      spokes: [{ version: 'v999', rules: [] }],
    },
  };
  await waitFor(
    'the admission webhook to answer',
    async () => {
      try {
        await objects.create(probe, undefined, 'All');
        return undefined;
      } catch (err) {
        return String((err as { body?: unknown }).body ?? '').includes('denied the request')
          ? true
          : undefined;
      }
    },
    { timeoutMs, intervalMs: 250 },
  );
}
