// Name shapes the API validates. A target's name is a CRD or XRD name, `<plural>.<group>`,
// which is a DNS subdomain. An instance name prefixes the names of the objects it owns, and the
// strictest of them is its Service, `<name>-webhook-server`: a Service name is a DNS-1035 label
// (starts with a letter, at most 63 characters). So the instance name is a DNS-1035 label of at
// most 63 − 15 = 48 characters; its Deployment, Pods, Leases and label values, which allow
// more, then fit too.
import { z } from 'zod';
import { MAX_INSTANCE_NAME_LENGTH, webhookServiceName } from './constants.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** RFC 1035 label, as Kubernetes requires for Service names (the pattern the CRD states too). */
export const DNS_1035_LABEL_PATTERN = '^[a-z]([-a-z0-9]*[a-z0-9])?$';
const DNS_1035_LABEL = new RegExp(DNS_1035_LABEL_PATTERN);
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const targetNameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(DNS_SUBDOMAIN)
  .meta({ description: 'Name of the target definition, <plural>.<group>.' });

/** Why `name` cannot name a ConversionWebhookServer, in words an operator can act on. */
export function instanceNameProblem(name: string): string | undefined {
  const service = webhookServiceName(name);
  if (!DNS_1035_LABEL.test(name)) {
    return (
      `ConversionWebhookServer name "${name}" is not a DNS-1035 label: it names the instance's Service "${service}", ` +
      "and a Service name may hold only lowercase letters, digits and '-', must start with a letter and end with a letter or digit"
    );
  }
  if (name.length > MAX_INSTANCE_NAME_LENGTH) {
    return (
      `ConversionWebhookServer name "${name}" is ${name.length} characters, more than ${MAX_INSTANCE_NAME_LENGTH}: ` +
      `its Service "${service}" would exceed the 63 characters of a DNS-1035 label`
    );
  }
  return undefined;
}

const instanceNameError = (issue: { input?: unknown }) => instanceNameProblem(String(issue.input));

export const instanceNameSchema = z
  .string()
  .min(1)
  .max(MAX_INSTANCE_NAME_LENGTH, { error: instanceNameError })
  .regex(DNS_1035_LABEL, { error: instanceNameError })
  .meta({
    description: 'Name of a ConversionWebhookServer: a DNS-1035 label, it prefixes its Service name.',
  });

export const namespaceNameSchema = z.string().min(1).max(63).regex(DNS_LABEL);

/** The object metadata fields the domain logic reads; everything else passes through. */
export const objectMetaSchema = z.looseObject({
  name: z.string().min(1),
  generation: z.int().optional(),
  resourceVersion: z.string().optional(),
  uid: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof objectMetaSchema>;
