// Every name that more than one component must spell the same way: the API group, label and
// annotation keys, and derived object names. One file, so a rename is one edit.

export const GROUP = 'switchyard.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
export const MANAGED_BY_VALUE = 'switchyard';

/** Label on a replica's served-set Lease naming the ConversionWebhookServer it belongs to. */
export const WEBHOOK_SERVER_LABEL = `${GROUP}/webhook-server`;
/** Annotation on a replica's Lease carrying its encoded served set (see core/served-set-codec). */
export const SERVED_SET_ANNOTATION = `${GROUP}/served-set`;
export const SERVED_LEASE_PREFIX = 'switchyard';

/** The Lease a webhook-server replica publishes its served set in. */
export function servedLeaseName(podName: string): string {
  return `${SERVED_LEASE_PREFIX}-served-${podName}`;
}

const SERVICE_SUFFIX = '-webhook-server';

/** The Service (and Deployment) of a ConversionWebhookServer instance. */
export function webhookServiceName(instance: string): string {
  return `${instance}${SERVICE_SUFFIX}`;
}

// A Service name is a DNS label of at most 63 characters, and it is the instance name plus
// the suffix above.
export const MAX_INSTANCE_NAME_LENGTH = 63 - SERVICE_SUFFIX.length;

/** The path a target's conversion is served at on its instance. */
export function webhookPath(targetName: string): string {
  return `/convert/${targetName}`;
}
