// Name shapes the API validates. A target's name is a CRD or XRD name, `<plural>.<group>`,
// which is a DNS subdomain; an instance name is a DNS label short enough for its Service name.
import { z } from 'zod';
import { MAX_INSTANCE_NAME_LENGTH } from './constants.ts';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const targetNameSchema = z
  .string()
  .min(1)
  .max(253)
  .regex(DNS_SUBDOMAIN)
  .meta({ description: 'Name of the target definition, <plural>.<group>.' });

export const instanceNameSchema = z
  .string()
  .min(1)
  .max(MAX_INSTANCE_NAME_LENGTH)
  .regex(DNS_LABEL)
  .meta({ description: 'Name of a ConversionWebhookServer.' });

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
