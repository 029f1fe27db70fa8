// What the admission decision reads: the current instances, configs and target (and the
// namespace an instance would run in), straight from
// the apiserver at admission time, on the informers client (reads only).
//
// Why the apiserver and not the bus view (src/bus/view.ts) or an informer cache: admission is
// the one place that must be right about a write *as it happens*. A view or a cache lags the
// apiserver by the watch pipeline (watch → stream → view), so a second `default` written a
// moment after the first would be checked against a fleet without the first, and admitted.
// A list without `resourceVersion` is a consistent read (etcd quorum, or the watch cache
// proven current), so it sees every write committed before the request. That leaves only two
// writes reviewed at the same instant, which no webhook can serialize; the core rules accept
// the edit that repairs such a fleet, and the resolver reports it (MultipleDefaults).
//
// The cost is a list per reviewed write. Instances are few. Configs are many (one per target),
// and a repoint of the handover is reviewed too, so configs are read by their target name, a
// selectable field of their CRDs (api/crds.ts): the apiserver filters them, and a review reads
// one or two configs whatever the fleet's size, still consistently. Metadata-only writes never
// reach the webhook (its matchConditions) and status writes are a subresource it does not see.
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { CRD_CONFIG_KIND, configTargetNamePath, XRD_CONFIG_KIND } from '../api/conversion-config.ts';
import { KINDS, type KindResource } from '../api/resources.ts';
import { INSTANCE_POLICY_CONFIGMAP, type NamespaceRead } from '../core/instance-admission.ts';
import { ignoreNotFound, isTooManyRequests, statusOf } from '../kube/errors.ts';
import type { ClusterReads, ClusterState, TargetKind } from './review.ts';

export interface ClusterReader {
  read(reads: ClusterReads): Promise<ClusterState>;
}

/**
 * How often a read answered 429 is tried again. The apiserver answers 429 with Retry-After: 1
 * while a resource's watch cache (re)initializes (after its restart, or the first read of a
 * resource since a CRD was created); the server's read deadline bounds the whole wait.
 */
const TOO_MANY_REQUESTS_RETRIES = 3;
const MAX_RETRY_AFTER_MS = 1_000;

interface Resource {
  group: string;
  version: string;
  plural: string;
}

/** A catalog kind as the custom-objects API names it. */
function customObjects(of: KindResource): Resource {
  return { group: of.group, version: of.version, plural: of.resource };
}

const INSTANCES = customObjects(KINDS.webhookserver);
const CRD_CONFIGS = customObjects(KINDS.crdconfig);
const XRD_CONFIGS = customObjects(KINDS.xrdconfig);
const TARGETS: Record<TargetKind, Resource> = {
  CustomResourceDefinition: customObjects(KINDS.crd),
  CompositeResourceDefinition: customObjects(KINDS.xrd),
};

/**
 * Reads through the custom-objects API, which returns raw JSON: the engine reads a target's
 * schema by its JSON keys (`x-kubernetes-int-or-string`), which client-node's typed models rename.
 */
export function apiserverReader(kubeConfig: KubeConfig): ClusterReader {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const allowances = async (namespace: string): Promise<Record<string, string> | undefined> => {
    const read = await ignoreNotFound(
      retryingTooManyRequests(() =>
        core.readNamespacedConfigMap({ name: INSTANCE_POLICY_CONFIGMAP, namespace }),
      ),
    );
    return read === undefined ? undefined : (read.data ?? {});
  };
  const namespace = async (name: string): Promise<NamespaceRead> => {
    const read = await ignoreNotFound(retryingTooManyRequests(() => core.readNamespace({ name })));
    return read === undefined ? { exists: false } : { exists: true, labels: read.metadata?.labels ?? {} };
  };
  const list = async (r: Resource, fieldSelector?: string): Promise<unknown[]> =>
    (
      (await retryingTooManyRequests(() =>
        api.listClusterCustomObject({ ...r, ...(fieldSelector !== undefined && { fieldSelector }) }),
      )) as { items?: unknown[] }
    ).items ?? [];
  const configs = (which: ClusterReads['configs'], r: Resource, kind: ConfigKind) => {
    if (which === undefined) return [];
    return which === 'all' ? list(r) : list(r, fieldEquals(configTargetNamePath(kind), which.targeting));
  };
  // An absent target, or Crossplane's API not installed at all: both mean "no target yet".
  const get = (r: Resource, name: string): Promise<unknown> =>
    ignoreNotFound(retryingTooManyRequests(() => api.getClusterCustomObject({ ...r, name })));
  return {
    async read(reads) {
      const [instances, crdConfigs, xrdConfigs, target, namespaceRead, allowancesRead] = await Promise.all([
        reads.instances ? list(INSTANCES) : [],
        configs(reads.configs, CRD_CONFIGS, CRD_CONFIG_KIND),
        configs(reads.configs, XRD_CONFIGS, XRD_CONFIG_KIND),
        reads.target ? get(TARGETS[reads.target.kind], reads.target.name) : undefined,
        reads.namespace === undefined ? undefined : namespace(reads.namespace),
        reads.allowancesIn === undefined ? undefined : allowances(reads.allowancesIn),
      ]);
      return {
        instances,
        configs: [...crdConfigs, ...xrdConfigs],
        target,
        ...(namespaceRead && { namespace: namespaceRead }),
        ...(allowancesRead && { allowances: allowancesRead }),
      };
    },
  };
}

type ConfigKind = typeof CRD_CONFIG_KIND | typeof XRD_CONFIG_KIND;

/**
 * A field selector matching one value exactly. The value is escaped as the apiserver's parser
 * expects (`\`, `,` and `=`), so a name under review cannot widen or break the selection.
 */
export function fieldEquals(path: string, value: string): string {
  return `${path}=${value.replace(/[\\,=]/g, (c) => `\\${c}`)}`;
}

async function retryingTooManyRequests<T>(read: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (!isTooManyRequests(err) || attempt >= TOO_MANY_REQUESTS_RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, retryAfterMs(err)));
    }
  }
}

function retryAfterMs(err: unknown): number {
  const seconds = Number((err as { headers?: Record<string, string> }).headers?.['retry-after']);
  return Number.isFinite(seconds) && seconds >= 0
    ? Math.min(seconds * 1000, MAX_RETRY_AFTER_MS)
    : MAX_RETRY_AFTER_MS;
}

/** A read failure in one line for the writer: the apiserver's status and its own message, not the raw exception. */
export function describeReadError(err: unknown): string {
  const code = statusOf(err);
  if (code === undefined) return err instanceof Error ? err.message : String(err);
  const message = statusMessage((err as { body?: unknown }).body);
  return `the apiserver answered ${code}${typeof message === 'string' ? `: ${message}` : ''}`;
}

/** The Status message of an error body: client-node hands it over parsed, or as JSON text for codes it does not model. */
function statusMessage(body: unknown): unknown {
  if (typeof body !== 'string') return (body as { message?: unknown } | null | undefined)?.message;
  try {
    return (JSON.parse(body) as { message?: unknown } | null)?.message;
  } catch {
    return undefined;
  }
}
