// The names, labels and owner reference every object an instance renders into shares.
//
// Every child carries the managed-by label: the watchers record Deployments, EndpointSlices and
// Leases by that label alone (src/watchers/resources.ts), and the EndpointSlice controller copies
// a Service's labels onto its slices, so labelling the Service is what makes its ready Pods
// visible to the handover gate. The instance label says which instance a recorded object
// belongs to without parsing names.
//
// Owner references: the ConversionWebhookServer is cluster-scoped and its children are
// namespaced. Kubernetes allows a namespaced dependent to name a cluster-scoped owner (an owner
// reference has no namespace field: the garbage collector looks the owner up cluster-wide when
// its kind is cluster-scoped); the reverse, a cluster-scoped dependent of a namespaced owner, is
// invalid. So every child may be owned by the instance, and deleting it collects them all.
import type { V1OwnerReference } from '@kubernetes/client-node';
import {
  API_VERSION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  servingCaSecretName,
  servingCertSecretName,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../../api/constants.ts';
import { WEBHOOK_SERVER_KIND, type WebhookServer } from '../../api/webhook-server.ts';

const NAME_LABEL = 'app.kubernetes.io/name';
const INSTANCE_LABEL = 'app.kubernetes.io/instance';
const COMPONENT_LABEL = 'app.kubernetes.io/component';
const PART_OF_LABEL = 'app.kubernetes.io/part-of';
const COMPONENT = 'webhook-server';

/** The names of what an instance renders into, all in its namespace. */
export interface ChildNames {
  namespace: string;
  /** Deployment, Service, PodDisruptionBudget and NetworkPolicy share it: `<instance>-webhook-server`. */
  workload: string;
  serviceAccount: string;
  /** Role and RoleBinding of the replicas' Lease writes. */
  leaseWriter: string;
  /** Role and RoleBinding letting the handover read the serving Secret's trust bundle. */
  trustBundleReader: string;
  servingSecret: string;
  caSecret: string;
  /** The replicas' NATS password (the `webhook-server` user), when the bus has users. */
  natsSecret: string;
}

export function childNames(instance: WebhookServer, defaultNamespace: string): ChildNames {
  const name = instance.metadata.name;
  const workload = webhookServiceName(name);
  return {
    namespace: instance.spec.namespace ?? defaultNamespace,
    workload,
    serviceAccount: instance.spec.serviceAccountName ?? workload,
    leaseWriter: `${workload}-leases`,
    trustBundleReader: `${workload}-trust-bundle`,
    servingSecret: servingCertSecretName(name),
    caSecret: servingCaSecretName(name),
    natsSecret: `${workload}-nats`,
  };
}

/**
 * The Pod selector. Immutable on a Deployment once created, so it holds only what never
 * changes for an instance: its name and the component.
 */
export function selectorLabels(instance: string): Record<string, string> {
  return { [INSTANCE_LABEL]: instance, [NAME_LABEL]: COMPONENT };
}

/** The labels on every child (and on its Pods). */
export function childLabels(instance: string): Record<string, string> {
  return {
    ...selectorLabels(instance),
    [COMPONENT_LABEL]: COMPONENT,
    [PART_OF_LABEL]: MANAGED_BY_VALUE,
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [WEBHOOK_SERVER_LABEL]: instance,
  };
}

/** Label keys users may not override through `spec.podLabels`: they select and attribute Pods. */
export function reservedLabelKeys(): ReadonlySet<string> {
  return new Set(Object.keys(childLabels('x')));
}

/**
 * The controller reference to the instance. blockOwnerDeletion, as controller-runtime sets it:
 * a foreground delete of the instance waits for its children. Setting it needs `update` on
 * `conversionwebhookservers/finalizers` where the OwnerReferencesPermissionEnforcement
 * admission plugin runs; the instances handler's Role grants that.
 */
export function ownerReferenceTo(instance: WebhookServer, uid: string): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: WEBHOOK_SERVER_KIND,
    name: instance.metadata.name,
    uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}
