// What a scenario does to a cluster as a user would, through the apiserver: instances, targets
// of two versions, configs with a rename rule, and reading back where each target is served.
// Shared by the demo, the end-to-end move test and the scale benchmark.
import type { KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, GROUP, VERSION, webhookServiceName } from '../api/constants.ts';
import type { ConfigStatus } from '../api/conversion-config.ts';
import { KINDS } from '../api/resources.ts';
import { INSTANCE_POLICY_CONFIGMAP } from '../core/instance-admission.ts';
import { isEstablished } from '../core/routing.ts';
import { conversionServiceOf } from '../core/target-conversion.ts';
import { apiUrl, HttpMethod, send } from '../kube/request.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { systemClock } from '../runtime/clock.ts';

const INSTANCES = `/apis/${GROUP}/${VERSION}/conversionwebhookservers`;
const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** The two kinds of config, and where each is served. */
export type ConfigKind = 'CRDConversionConfig' | 'XRDConversionConfig';
const CONFIG_PATHS: Readonly<Record<ConfigKind, string>> = {
  CRDConversionConfig: `/apis/${GROUP}/${VERSION}/crdconversionconfigs`,
  XRDConversionConfig: `/apis/${GROUP}/${VERSION}/xrdconversionconfigs`,
};

/** The field the scenario's targets store at v1 and serve at v2 under another name. */
export const STORED_FIELD = 'size';
export const SERVED_FIELD = 'capacity';

export interface Answer {
  status: number;
  message: string;
  body: unknown;
}

/**
 * Methods the scenario may send again when no answer came (the connection dropped before the
 * apiserver answered): reads, and its patches, which set fixed values. A create is sent once.
 */
const RESENDABLE: ReadonlySet<HttpMethod> = new Set([HttpMethod.GET, HttpMethod.PATCH]);
const ATTEMPTS = 3;

/**
 * One request as admin; the status and the apiserver's message, never a throw for a non-2xx.
 * A dropped connection is retried, as a user's tooling retries it, and said on stderr.
 */
export async function request(
  kc: KubeConfig,
  method: HttpMethod,
  path: string,
  body?: unknown,
): Promise<Answer> {
  const url = apiUrl(kc, path);
  for (let attempt = 1; ; attempt++) {
    try {
      return await requestOnce(kc, method, url, body);
    } catch (err) {
      // fetch rejects only when no response came at all; an HTTP error is an answer.
      const noAnswer = `${method} ${path}: no answer (${describeFailure(err)})`;
      if (!RESENDABLE.has(method) || attempt >= ATTEMPTS)
        throw new Error(attempt > 1 ? `${noAnswer}, after ${attempt} attempts` : noAnswer, { cause: err });
      process.stderr.write(`[scenario] ${noAnswer}; sending it again\n`);
      await systemClock.sleep(500 * attempt);
    }
  }
}

/** fetch's own message and the cause it wraps (`fetch failed: other side closed`). */
function describeFailure(err: unknown): string {
  const { message, cause } = err as Error;
  return cause instanceof Error ? `${message}: ${cause.message}` : message;
}

async function requestOnce(kc: KubeConfig, method: HttpMethod, url: URL, body?: unknown): Promise<Answer> {
  const res = await send(kc, method, url, {
    ...(body !== undefined && {
      body,
      contentType: method === HttpMethod.PATCH ? 'application/merge-patch+json' : 'application/json',
    }),
  });
  const json = (await res.json().catch(() => ({}))) as { message?: string };
  return { status: res.status, message: json.message ?? '', body: json };
}

function expectStatus(what: string, answer: Answer, ...ok: number[]): Answer {
  if (!ok.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${answer.message}`);
  return answer;
}

export async function createInstance(
  kc: KubeConfig,
  name: string,
  spec: Record<string, unknown>,
): Promise<void> {
  const body = { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', metadata: { name }, spec };
  expectStatus(`creating instance ${name}`, await request(kc, HttpMethod.POST, INSTANCES, body), 201);
}

/**
 * As a platform team allows it (docs/security.md): spec.extraArgs may set `keys` beyond the
 * tuning keys. Resolves once an instance asking for them is admitted (a dry run): the admission
 * webhook reads the ConfigMap at each review, the policy from a cache that follows it.
 */
export async function allowExtraArgKeys(
  kc: KubeConfig,
  namespace: string,
  keys: readonly string[],
): Promise<void> {
  const policy = `/api/v1/namespaces/${namespace}/configmaps/${INSTANCE_POLICY_CONFIGMAP}`;
  expectStatus(
    `allowing ${keys.join(', ')}`,
    await request(kc, HttpMethod.PATCH, policy, { data: { allowedExtraArgKeys: keys.join(',') } }),
    200,
  );
  const probe = {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: { name: 'allow-extra-args-probe' },
    spec: { replicas: 0, extraArgs: keys.map((k) => `--${k}=true`) },
  };
  await waitFor(
    `extraArgs ${keys.join(', ')} to be admitted`,
    async () =>
      (await request(kc, HttpMethod.POST, `${INSTANCES}?dryRun=All`, probe)).status === 201
        ? true
        : undefined,
    { timeoutMs: 30_000, intervalMs: 250 },
  );
}

/** A merge patch of an instance's spec; the answer as is (admission may refuse it). */
export function patchInstance(kc: KubeConfig, name: string, spec: Record<string, unknown>): Promise<Answer> {
  return request(kc, HttpMethod.PATCH, `${INSTANCES}/${name}`, { spec });
}

/** One version of the scenario's targets: `field` (and spec.color) under spec, as strings. */
function targetVersion(name: string, field: string) {
  return {
    name,
    served: true,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: {
          spec: { type: 'object', properties: { [field]: { type: 'string' }, color: { type: 'string' } } },
        },
      },
    },
  };
}

/**
 * A CRD `<plural>.<group>` with a storage version v1 holding spec.size and a served v2 holding it
 * as spec.capacity (spec.color is the same in both); resolves once it is established.
 */
export async function createTwoVersionTarget(kc: KubeConfig, name: string, kind: string): Promise<void> {
  const [plural = '', ...group] = name.split('.');
  const body = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: group.join('.'),
      scope: 'Namespaced',
      names: { plural, singular: plural.replace(/s$/, ''), kind },
      versions: [
        { ...targetVersion('v1', STORED_FIELD), storage: true },
        { ...targetVersion('v2', SERVED_FIELD), storage: false },
      ],
    },
  };
  expectStatus(`creating CRD ${name}`, await request(kc, HttpMethod.POST, CRDS, body), 201);
  await waitFor(`CRD ${name} established`, async () =>
    isEstablished((await request(kc, HttpMethod.GET, `${CRDS}/${name}`)).body) ? true : undefined,
  );
}

export const XRD_API_GROUP = KINDS.xrd.group;

/**
 * A Crossplane XRD `<plural>.<group>` with the versions of `createTwoVersionTarget` (v1
 * referenceable, so the CRD Crossplane generates stores it; v2 served): at
 * `apiextensions.crossplane.io/v2`, its composites namespaced; or, given `claim`, at v1 offering
 * a namespaced claim `<claim.plural>.<group>` (its composites cluster-scoped). Resolves once
 * Crossplane has generated every CRD of it and they are Established: Crossplane must run.
 */
export async function createTwoVersionXrd(
  kc: KubeConfig,
  name: string,
  kind: string,
  claim?: { plural: string; kind: string },
): Promise<void> {
  const [plural = '', ...group] = name.split('.');
  const apiVersion = `${XRD_API_GROUP}/${claim ? 'v1' : 'v2'}`;
  const body = {
    apiVersion,
    kind: 'CompositeResourceDefinition',
    metadata: { name },
    spec: {
      group: group.join('.'),
      names: { plural, kind },
      ...(claim ? { claimNames: claim } : { scope: 'Namespaced' }),
      versions: [
        { ...targetVersion('v1', STORED_FIELD), referenceable: true },
        { ...targetVersion('v2', SERVED_FIELD), referenceable: false },
      ],
    },
  };
  const xrds = `/apis/${apiVersion}/compositeresourcedefinitions`;
  expectStatus(`creating XRD ${name}`, await request(kc, HttpMethod.POST, xrds, body), 201);
  const generated = [name, ...(claim ? [`${claim.plural}.${group.join('.')}`] : [])];
  await waitFor(
    `the CRDs Crossplane generates from ${name} (${generated.join(', ')}) established`,
    async () => {
      for (const crd of generated)
        if (!isEstablished((await request(kc, HttpMethod.GET, `${CRDS}/${crd}`)).body)) return undefined;
      return isEstablished((await request(kc, HttpMethod.GET, `${xrds}/${name}`)).body) ? true : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 250 },
  );
}

/**
 * A config of `kind` (a CRDConversionConfig unless told): hub v1, spoke v2, spec.size ↔
 * spec.capacity; pinned when `pin` is given.
 */
export async function createRenameConfig(
  kc: KubeConfig,
  name: string,
  target: string,
  pin?: string,
  kind: ConfigKind = 'CRDConversionConfig',
): Promise<void> {
  const body = renameConfig(name, target, pin, kind);
  expectStatus(`creating config ${name}`, await request(kc, HttpMethod.POST, CONFIG_PATHS[kind], body), 201);
}

/** The object `createRenameConfig` creates, for a caller that reads the answer itself (a refusal). */
export function renameConfig(
  name: string,
  target: string,
  pin?: string,
  kind: ConfigKind = 'CRDConversionConfig',
) {
  return {
    apiVersion: API_VERSION,
    kind,
    metadata: { name },
    spec: {
      ...(kind === 'CRDConversionConfig' ? { targetCRD: { name: target } } : { targetXRD: { name: target } }),
      hubVersion: 'v1',
      spokes: [
        {
          version: 'v2',
          rules: [
            {
              strategy: 'FieldRename',
              fieldRename: { hubPath: `spec.${STORED_FIELD}`, spokePath: `spec.${SERVED_FIELD}` },
            },
          ],
        },
      ],
      ...(pin && { webhookServerRef: { name: pin } }),
    },
  };
}

/** A merge patch of a config's spec (null removes a field, as webhookServerRef: null unpins). */
export async function patchConfig(
  kc: KubeConfig,
  name: string,
  spec: Record<string, unknown>,
  kind: ConfigKind = 'CRDConversionConfig',
): Promise<void> {
  expectStatus(
    `patching config ${name}`,
    await request(kc, HttpMethod.PATCH, `${CONFIG_PATHS[kind]}/${name}`, { spec }),
    200,
  );
}

export async function configStatus(
  kc: KubeConfig,
  name: string,
  kind: ConfigKind = 'CRDConversionConfig',
): Promise<ConfigStatus | undefined> {
  const answer = expectStatus(
    `reading config ${name}`,
    await request(kc, HttpMethod.GET, `${CONFIG_PATHS[kind]}/${name}`),
    200,
  );
  return (answer.body as { status?: ConfigStatus }).status;
}

/** Every config's status by name: one list. */
export async function configStatuses(
  kc: KubeConfig,
  kind: ConfigKind = 'CRDConversionConfig',
): Promise<Map<string, ConfigStatus | undefined>> {
  const answer = expectStatus('listing configs', await request(kc, HttpMethod.GET, CONFIG_PATHS[kind]), 200);
  const items =
    (answer.body as { items?: { metadata: { name: string }; status?: ConfigStatus }[] }).items ?? [];
  return new Map(items.map((i) => [i.metadata.name, i.status]));
}

/** The instance (of `instances`) whose Service each target's conversion names now: one list. */
export async function servingInstances(
  kc: KubeConfig,
  instances: readonly string[],
): Promise<Map<string, string | undefined>> {
  const answer = expectStatus('listing CRDs', await request(kc, HttpMethod.GET, CRDS), 200);
  const items = (answer.body as { items?: { metadata: { name: string } }[] }).items ?? [];
  const byService = new Map(instances.map((i) => [webhookServiceName(i), i]));
  return new Map(
    items.map((crd) => {
      const service = conversionServiceOf(crd);
      return [crd.metadata.name, service === undefined ? undefined : byService.get(service)];
    }),
  );
}

/** The instance's `status.readyReplicas` as the apiserver has it; 0 when absent. */
export async function readyReplicasOf(kc: KubeConfig, instance: string): Promise<number> {
  const answer = await request(kc, HttpMethod.GET, `${INSTANCES}/${instance}`);
  return (answer.body as { status?: { readyReplicas?: number } }).status?.readyReplicas ?? 0;
}

/** HandoverReady of a config's status, if any. */
export function handoverReady(status: ConfigStatus | undefined) {
  return status?.conditions?.find((c) => c.type === 'HandoverReady');
}

/** The config says its move to `instance` is verified, and the target's conversion names that instance. */
export function isServedBy(
  status: ConfigStatus | undefined,
  serving: string | undefined,
  instance: string | undefined,
): boolean {
  return (
    instance !== undefined &&
    serving === instance &&
    status?.handoverDestination === instance &&
    handoverReady(status)?.status === 'True'
  );
}
