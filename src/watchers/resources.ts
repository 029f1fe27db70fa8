import { isDeepStrictEqual } from 'node:util';
import { GROUP, MANAGED_BY_LABEL, MANAGED_BY_VALUE, VERSION } from '../api/constants.ts';
import type { ObjectKind } from '../bus/subjects.ts';

/** One kind of object a watcher records: where to list and watch it, and how narrowly. */
export interface WatchedResource {
  kind: ObjectKind | string;
  /** Collection path across namespaces, e.g. /apis/apps/v1/deployments. */
  path: string;
  labelSelector?: string;
  /** A pure function saying whether a change is only a liveness refresh (see lease heartbeats). */
  isHeartbeatOnly?: (previous: unknown, next: unknown) => boolean;
}

const managedBySelector = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;

/**
 * Whether a Lease changed only its renewTime: that is liveness, published to
 * the heartbeat stream, and must not become handler work or a status write.
 */
export function isLeaseRenewalOnly(previous: unknown, next: unknown): boolean {
  return previous !== undefined && isDeepStrictEqual(withoutRenewal(previous), withoutRenewal(next));
}

function withoutRenewal(o: unknown): unknown {
  const lease = structuredClone(o) as { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
  delete lease.metadata?.resourceVersion;
  delete lease.metadata?.managedFields;
  delete lease.spec?.renewTime;
  return lease;
}

/** What Switchyard records. Leases and Deployments only where its own label is. */
export const RECORDED_RESOURCES: WatchedResource[] = [
  { kind: 'webhookserver', path: `/apis/${GROUP}/${VERSION}/conversionwebhookservers` },
  { kind: 'crdconfig', path: `/apis/${GROUP}/${VERSION}/crdconversionconfigs` },
  { kind: 'xrdconfig', path: `/apis/${GROUP}/${VERSION}/xrdconversionconfigs` },
  { kind: 'crd', path: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions' },
  { kind: 'deployment', path: '/apis/apps/v1/deployments', labelSelector: managedBySelector },
  {
    kind: 'lease',
    path: '/apis/coordination.k8s.io/v1/leases',
    labelSelector: managedBySelector,
    isHeartbeatOnly: isLeaseRenewalOnly,
  },
];

/** XRDs are recorded only where Crossplane's API exists. */
export const XRD_RESOURCE: WatchedResource = {
  kind: 'xrd',
  path: '/apis/apiextensions.crossplane.io/v1/compositeresourcedefinitions',
};
