// Every name that more than one component must spell the same way: the API group, label and
// annotation keys, and derived object names. One file, so a rename is one edit.

export const GROUP = 'switchyard.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'switchyard';

/** Kubernetes' label on an EndpointSlice naming the Service it belongs to. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

/** Label on a replica's served-set Lease naming the ConversionWebhookServer it belongs to. */
export const WEBHOOK_SERVER_LABEL = `${GROUP}/webhook-server`;
/** Annotation on a replica's Lease carrying its encoded served set (see core/served-set-codec). */
export const SERVED_SET_ANNOTATION = `${GROUP}/served-set`;
export const SERVED_LEASE_PREFIX = 'switchyard';
/**
 * Annotation on a target (CRD or XRD) carrying the handover's verdict on its last repoint, set in
 * the same server-side apply as its spec.conversion (see api/handover-verdict.ts).
 */
export const HANDOVER_VERDICT_ANNOTATION = `${GROUP}/handover-verdict`;

/** The Lease a webhook-server replica publishes its served set in. */
export function servedLeaseName(podName: string): string {
  return `${SERVED_LEASE_PREFIX}-served-${podName}`;
}

export const SERVICE_SUFFIX = '-webhook-server';

/** The Service (and Deployment) of a ConversionWebhookServer instance. */
export function webhookServiceName(instance: string): string {
  return `${instance}${SERVICE_SUFFIX}`;
}

/** The instance whose Service is named `service`, if it is one of ours (`webhookServiceName`'s inverse). */
export function instanceOfService(service: string | undefined): string | undefined {
  return service?.endsWith(SERVICE_SUFFIX)
    ? service.slice(0, -SERVICE_SUFFIX.length) || undefined
    : undefined;
}

// A Service name is a DNS label of at most 63 characters, and it is the instance name plus
// the suffix above.
export const MAX_INSTANCE_NAME_LENGTH = 63 - SERVICE_SUFFIX.length;

/** The path a target's conversion is served at on its instance. */
export function webhookPath(targetName: string): string {
  return `/convert/${targetName}`;
}

/** The Secret holding an instance's serving certificate (tls.crt, tls.key) and its trust bundle (ca.crt). */
export function servingCertSecretName(instance: string): string {
  return `${webhookServiceName(instance)}-tls`;
}

/** The Secret holding the CA that signs an instance's serving certificates; never mounted into Pods. */
export function servingCaSecretName(instance: string): string {
  return `${webhookServiceName(instance)}-ca`;
}

/** Finalizer that keeps a ConversionWebhookServer while targets resolve to it or name its Service. */
export const IN_USE_FINALIZER = `${GROUP}/instance-in-use`;
/**
 * Break-glass: with this annotation set to "true" an instance in use may be deleted anyway; its
 * targets' conversions fail until they are moved. Read at the moment of the decision.
 */
export const FORCE_DELETE_ANNOTATION = `${GROUP}/allow-delete-in-use`;

// The contract between an instance's rendered Deployment (core/instances/render.ts) and the
// webhook-server process it runs: where it listens, where its certificate is mounted, what it
// answers probes on.
export const WEBHOOK_SERVER_COMMAND = 'webhook-server';
/** Unprivileged (above 1024), so the container runs as non-root with no capabilities. */
export const WEBHOOK_SERVER_PORT = 9443;
export const WEBHOOK_SERVER_PORT_NAME = 'https';
/** The Service port the apiserver calls; the conversion clientConfig names it. */
export const WEBHOOK_SERVICE_PORT = 443;
export const SERVING_CERT_DIR = '/etc/switchyard/serving-cert';
export const READINESS_PATH = '/readyz';
export const LIVENESS_PATH = '/healthz';

/** The namespace deploy/ installs Switchyard into (its workers, NATS, the credentials Secret). */
export const DEFAULT_OPERATOR_NAMESPACE = 'switchyard-system';

/** The handover handler's ServiceAccount (deploy/rbac/handover.yaml), in the operator's namespace. */
export const HANDOVER_SERVICE_ACCOUNT = 'switchyard-handover';

/**
 * NODE_OPTIONS of every Switchyard process (each Deployment in deploy/ and the webhook-server
 * Deployments the instances handler renders; the benches run their processes with it too).
 * V8 grows its young generation with the machine's memory: 128 MiB of semi-spaces on a 24 GiB
 * node, refilled many times over while a view reads a large cluster, which a process held as RSS
 * beside its heap (peak 432 MiB for a router whose view holds 80 MiB at 50,000 targets). 4 MiB
 * semi-spaces took that peak to 277 MiB with the same view start and decision times
 * (BENCHMARKS.md, "V8's young generation").
 */
export const SWITCHYARD_NODE_OPTIONS = '--max-semi-space-size=4';
