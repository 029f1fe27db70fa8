/**
 * How a handler writes to Kubernetes: on the `writes` client only, and
 * conditional wherever the decision was made on a version of the object (the
 * runtime may have handed the trigger to another replica while a stale
 * attempt still runs, see `bus/runtime/handler-runtime.ts`). The rule for
 * handlers: a write derived from an object the view holds (its status, a patch
 * of its spec) passes that object's `resourceVersion`, so a stale attempt gets
 * 409 instead of overwriting a newer decision. An apply of an object the
 * handler owns outright (an instance's Deployment) may be unconditional: its
 * content is a pure function of the owner, and a stale apply is corrected by
 * the next run, which the owner's change has already triggered.
 *
 * - **Server-side apply** (`apply`, `applyStatus`) with the handler's own field
 *   manager (`switchyard-<concern>`): the handler states the fields it owns;
 *   the apiserver merges, keeps other managers' fields, and tracks ownership in
 *   `managedFields`. Force is on by default, as controller-runtime advises
 *   controllers: a handler is the authority for its fields, and without force
 *   a field once set by a human or another tool would refuse it forever (a
 *   409 no retry could cure). Pass `force: false` to share a field instead.
 * - **A resourceVersion precondition**: `apply` with `resourceVersion`
 *   (SSA honours it) and `mergePatch`, which always carries one, for what SSA
 *   cannot express (removing a field another manager also set; a change that
 *   must be based on exactly the version the decision read). A stale writer
 *   gets 409 instead of overwriting the newer decision.
 * - **409 is the `conflict` outcome**: the error is an `ApiStatusError` with
 *   status 409, which `classifyFailure` maps to a short-backoff retry that
 *   re-reads the view. Nothing here retries by itself.
 *
 * Requests are sent raw (`request.ts`) because client-node's generic object API
 * reaches no subresource and costs a discovery lookup per kind; the caller
 * names the resource instead.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WritesClient } from './clients.ts';
import { apiUrl, HttpMethod, sendForJson } from './request.ts';

/** Which REST resource an object lives in, e.g. `{ apiVersion: 'apps/v1', resource: 'deployments', namespaced: true }`. */
export interface ResourceRef {
  apiVersion: string;
  /** The plural resource name. */
  resource: string;
  namespaced: boolean;
}

export interface ObjectRef {
  namespace?: string;
  name: string;
}

export interface WriteOptions {
  /** Aborts the request: pass the handler's `ctx.signal`. */
  signal?: AbortSignal;
}

export interface ApplyOptions extends WriteOptions {
  /** Take fields another manager owns (default true). */
  force?: boolean;
  /** Apply only if the object is still at this version (409 otherwise). */
  resourceVersion?: string;
}

const APPLY = 'application/apply-patch+yaml';
const MERGE = 'application/merge-patch+json';

/** The field manager of a handler concern: how `managedFields` and audit logs name it. */
export function fieldManagerFor(concern: string): string {
  return `switchyard-${concern}`;
}

/** `/api/v1/...` for the core group, `/apis/<group>/<version>/...` otherwise. */
export function objectPath(ref: ResourceRef, obj: ObjectRef, subresource?: 'status'): string {
  const base = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`;
  if (ref.namespaced && !obj.namespace)
    throw new Error(`${ref.resource} are namespaced: ${obj.name} needs a namespace`);
  const ns = ref.namespaced ? `/namespaces/${encodeURIComponent(obj.namespace ?? '')}` : '';
  const sub = subresource ? `/${subresource}` : '';
  return `${base}${ns}/${ref.resource}/${encodeURIComponent(obj.name)}${sub}`;
}

/** The SSA body: the object as stated, with the precondition when there is one. */
export function applyBody<T extends KubernetesObject>(obj: T, resourceVersion: string | undefined): T {
  if (resourceVersion === undefined) return obj;
  return { ...obj, metadata: { ...obj.metadata, resourceVersion } };
}

export class KubeWriter {
  readonly fieldManager: string;
  private readonly writes: WritesClient;

  constructor(writes: WritesClient, fieldManager: string) {
    this.writes = writes;
    this.fieldManager = fieldManager;
  }

  /** Server-side apply of `obj` (creates it if missing). Returns the object as stored. */
  apply<T extends KubernetesObject>(ref: ResourceRef, obj: T, opts: ApplyOptions = {}): Promise<T> {
    return this.sendApply(ref, obj, undefined, opts);
  }

  /** Server-side apply of `obj.status` through the status subresource (the object must exist). */
  applyStatus<T extends KubernetesObject>(ref: ResourceRef, obj: T, opts: ApplyOptions = {}): Promise<T> {
    return this.sendApply(ref, obj, 'status', opts);
  }

  /**
   * A JSON merge patch that applies only to `resourceVersion` (409 otherwise).
   * `null` in the patch removes a field.
   */
  mergePatch<T extends KubernetesObject>(
    ref: ResourceRef,
    target: ObjectRef & { resourceVersion: string },
    patch: Record<string, unknown>,
    opts: WriteOptions & { subresource?: 'status' } = {},
  ): Promise<T> {
    const { resourceVersion, ...obj } = target;
    const metadata = { ...(patch.metadata as Record<string, unknown> | undefined), resourceVersion };
    const url = apiUrl(this.writes.kubeConfig, objectPath(ref, obj, opts.subresource));
    url.searchParams.set('fieldManager', this.fieldManager);
    return sendForJson<T>(this.writes.kubeConfig, HttpMethod.PATCH, url, {
      body: { ...patch, metadata },
      contentType: MERGE,
      ...(opts.signal && { signal: opts.signal }),
    });
  }

  private sendApply<T extends KubernetesObject>(
    ref: ResourceRef,
    obj: T,
    subresource: 'status' | undefined,
    opts: ApplyOptions,
  ): Promise<T> {
    const name = obj.metadata?.name;
    if (!name) throw new Error('an applied object needs metadata.name');
    const target = { name, ...(obj.metadata?.namespace && { namespace: obj.metadata.namespace }) };
    const url = apiUrl(this.writes.kubeConfig, objectPath(ref, target, subresource));
    url.searchParams.set('fieldManager', this.fieldManager);
    url.searchParams.set('force', String(opts.force ?? true));
    return sendForJson<T>(this.writes.kubeConfig, HttpMethod.PATCH, url, {
      body: applyBody(obj, opts.resourceVersion),
      contentType: APPLY,
      ...(opts.signal && { signal: opts.signal }),
    });
  }
}
