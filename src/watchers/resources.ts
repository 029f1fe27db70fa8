import { createHash } from 'node:crypto';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../api/constants.ts';
import { KINDS, type KindResource, type ViewKind } from '../api/resources.ts';

/** One kind of object a watcher records: where to list and watch it, and how narrowly. */
export interface WatchedResource {
  /** The view kind its records carry (api/resources.ts). */
  kind: ViewKind | string;
  /** Collection path across namespaces, e.g. /apis/apps/v1/deployments. */
  path: string;
  labelSelector?: string;
  /**
   * A digest of the content whose change is worth recording. Set for kinds
   * with liveness refreshes (Leases): a change that keeps the digest is a
   * heartbeat, published to HEARTBEATS, never to the record stream that wakes
   * handlers. The watcher keeps the digest, not the object.
   */
  contentDigest?: (object: unknown) => string;
  /**
   * When the object was last renewed, for kinds with liveness refreshes: a renewal that comes
   * later than the object's own duration after the previous one is recorded, not a heartbeat
   * (see {@link revivesAfterGap}).
   */
  renewal?: (object: unknown) => Renewal;
}

export interface Renewal {
  atMs: number | undefined;
  durationMs: number | undefined;
}

/**
 * Whether a renewal brings back an object that was stale in between, by its own timestamps (no
 * reader clock): the first renewal ever, or one more than a duration after the previous one.
 * Such a renewal changes what readers decide (a replica counts again), and a heartbeat wakes no
 * handler, so it must be a record. Steady renewals stay heartbeats.
 */
export function revivesAfterGap(previousAtMs: number | undefined, next: Renewal): boolean {
  if (next.atMs === undefined) return false;
  if (previousAtMs === undefined) return true;
  return next.durationMs !== undefined && next.atMs - previousAtMs > next.durationMs;
}

/** A Lease's spec.renewTime and leaseDurationSeconds, in ms. */
export function leaseRenewal(lease: unknown): Renewal {
  const spec = (lease as { spec?: { renewTime?: unknown; leaseDurationSeconds?: unknown } }).spec;
  const atMs = typeof spec?.renewTime === 'string' ? Date.parse(spec.renewTime) : Number.NaN;
  const seconds = spec?.leaseDurationSeconds;
  return {
    atMs: Number.isNaN(atMs) ? undefined : atMs,
    durationMs: typeof seconds === 'number' ? seconds * 1000 : undefined,
  };
}

const managedBySelector = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/** JSON with object keys sorted, so equal content has one text whatever the key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}

/**
 * A Lease's content without what every renewal changes (renewTime, and the
 * resourceVersion and managedFields that come with any write): two Leases with
 * the same digest differ only by a liveness refresh.
 */
export function leaseContentDigest(lease: unknown): string {
  const l = lease as { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  const { resourceVersion: _rv, managedFields: _mf, ...metadata } = l.metadata ?? {};
  const { renewTime: _rt, ...spec } = l.spec ?? {};
  return createHash('sha256')
    .update(canonicalJson({ ...l, metadata, spec }))
    .digest('base64url');
}

/** A catalog kind recorded across namespaces, as narrowly as `narrowing` says. */
function recorded(of: KindResource, narrowing: Omit<WatchedResource, 'kind' | 'path'> = {}): WatchedResource {
  return { kind: of.viewKind, path: of.listPath, ...narrowing };
}

/** What Switchyard records. Leases and Deployments only where its own label is. */
export const RECORDED_RESOURCES: WatchedResource[] = [
  recorded(KINDS.webhookserver),
  recorded(KINDS.crdconfig),
  recorded(KINDS.xrdconfig),
  recorded(KINDS.crd),
  recorded(KINDS.deployment, { labelSelector: managedBySelector }),
  // An instance's ready Pods, by name (`endpoints[].targetRef`): the handover gate requires a
  // live report from each of them. The EndpointSlice controller copies the Service's labels.
  recorded(KINDS.endpointslice, { labelSelector: managedBySelector }),
  recorded(KINDS.lease, {
    labelSelector: managedBySelector,
    contentDigest: leaseContentDigest,
    renewal: leaseRenewal,
  }),
];

/**
 * XRDs at `version` of Crossplane's group. The catalog names v1, which Switchyard reads and writes
 * them at; the watchers record them at the newest version the apiserver serves
 * (`decideXrdRecording`, xrd-api.ts). The object and its view kind are the same at every version.
 */
export function xrdResourceAt(version: string): WatchedResource {
  const { viewKind, group, resource } = KINDS.xrd;
  return { kind: viewKind, path: `/apis/${group}/${version}/${resource}` };
}

/** XRDs at the catalog's version: recorded only where Crossplane's API exists. */
export const XRD_RESOURCE: WatchedResource = xrdResourceAt(KINDS.xrd.version);
