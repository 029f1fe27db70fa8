// CRDConversionConfig and XRDConversionConfig: the same config over two kinds of target. They
// differ only in the field that names the target, so both are built from one definition and
// every consumer reads the target through `targetNameOf`.
import { z } from 'zod';
import { conditionsSchema } from './conditions.ts';
import { API_VERSION } from './constants.ts';
import { instanceNameSchema, objectMetaSchema, targetNameSchema } from './names.ts';
import { ruleSchema } from './rules.ts';

export const CRD_CONFIG_KIND = 'CRDConversionConfig';
export const XRD_CONFIG_KIND = 'XRDConversionConfig';

const versionNameSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(/^v[0-9]+((alpha|beta)[0-9]+)?$/)
  .meta({ description: 'An API version name, e.g. v1 or v2beta1.' });

export const spokeSchema = z.object({
  version: versionNameSchema,
  rules: z.array(ruleSchema).max(256).default([]),
});
export type Spoke = z.infer<typeof spokeSchema>;

export const PHASES = ['Pending', 'Validated', 'Invalid', 'Applied', 'Stale', 'Failed'] as const;
export const phaseSchema = z.enum(PHASES);
export type Phase = z.infer<typeof phaseSchema>;

const targetRef = (what: string) =>
  z.object({ name: targetNameSchema }).meta({ description: `The ${what} to convert.` });

const commonSpec = {
  hubVersion: versionNameSchema.meta({
    description: "The target's storage version every spoke converts through.",
  }),
  spokes: z
    .array(spokeSchema)
    .min(1)
    .max(32)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['version'] }),
  webhookServerRef: z.object({ name: instanceNameSchema }).optional().meta({
    description: 'Pin to one ConversionWebhookServer; nothing automatic ever moves a pinned config.',
  }),
  conversionReviewVersions: z
    .array(z.enum(['v1', 'v1beta1']))
    .min(1)
    .max(2)
    .default(['v1']),
};

export const crdConfigSpecSchema = z.object({
  targetCRD: targetRef('CustomResourceDefinition'),
  ...commonSpec,
});
export const xrdConfigSpecSchema = z.object({
  targetXRD: targetRef('Crossplane CompositeResourceDefinition'),
  ...commonSpec,
});
export type CrdConfigSpec = z.infer<typeof crdConfigSpecSchema>;
export type XrdConfigSpec = z.infer<typeof xrdConfigSpecSchema>;

/**
 * What a move that is still waiting has observed, kept in the config's status so that any
 * handler replica, after any restart, measures the same waits (core/handover.ts reads and
 * returns it). Absent when no move is waiting.
 */
export const handoverProgressSchema = z
  .object({
    destination: z
      .string()
      .max(63)
      .meta({ description: 'The instance this wait is for; a new one restarts it.' }),
    waitingSince: z.iso.datetime().meta({ description: 'When the wait for this destination began.' }),
    silentSince: z.iso.datetime().optional().meta({
      description:
        'Since when the destination has had ready Pods and no Lease at all (the grace before an unverified move).',
    }),
  })
  .meta({ description: 'The state of a move that waits for its destination (the HandoverReady gate).' });
export type HandoverProgress = z.infer<typeof handoverProgressSchema>;

export const configStatusSchema = z.object({
  observedGeneration: z.int().min(0).optional(),
  phase: phaseSchema.optional(),
  assignedWebhookServer: z
    .string()
    .optional()
    .meta({ description: 'The instance the assignment resolves to now; the move to it may still be gated.' }),
  webhookPath: z.string().optional(),
  message: z.string().optional(),
  handover: handoverProgressSchema.optional(),
  conditions: conditionsSchema.optional(),
});
export type ConfigStatus = z.infer<typeof configStatusSchema>;

export const crdConfigSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(CRD_CONFIG_KIND),
  metadata: objectMetaSchema,
  spec: crdConfigSpecSchema,
  status: configStatusSchema.optional(),
});
export const xrdConfigSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(XRD_CONFIG_KIND),
  metadata: objectMetaSchema,
  spec: xrdConfigSpecSchema,
  status: configStatusSchema.optional(),
});
export type CrdConfig = z.infer<typeof crdConfigSchema>;
export type XrdConfig = z.infer<typeof xrdConfigSchema>;

export const conversionConfigSchema = z.discriminatedUnion('kind', [crdConfigSchema, xrdConfigSchema]);
export type ConversionConfig = z.infer<typeof conversionConfigSchema>;

/** The name of the definition a config converts: the key everything is sharded and served by. */
export function targetNameOf(config: ConversionConfig): string {
  return config.kind === CRD_CONFIG_KIND ? config.spec.targetCRD.name : config.spec.targetXRD.name;
}
