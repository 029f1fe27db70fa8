// CRDConversionConfig and XRDConversionConfig: the same config over two kinds of target. They
// differ only in the field that names the target, so both are built from one definition and
// every consumer reads the target through `targetNameOf`.
import { z } from 'zod';
import { conditionsSchema } from './conditions.ts';
import { API_VERSION } from './constants.ts';
import { instanceNameSchema, objectMetaSchema, targetNameSchema } from './names.ts';
import { ruleSchema, strictObject } from './rules.ts';

export const CRD_CONFIG_KIND = 'CRDConversionConfig';
export const XRD_CONFIG_KIND = 'XRDConversionConfig';

const MAX_REASON_LENGTH = 4096;

const versionNameSchema = z
  .string()
  .min(1)
  .max(63)
  .regex(/^v[0-9]+((alpha|beta)[0-9]+)?$/)
  .meta({ description: 'An API version name, e.g. v1 or v2beta1.' });

export const spokeSchema = strictObject('a spoke', {
  version: versionNameSchema,
  rules: z.array(ruleSchema).max(256).default([]),
});
export type Spoke = z.infer<typeof spokeSchema>;

export const PHASES = ['Pending', 'Validated', 'Invalid', 'Applied'] as const;
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
  unmappedFieldPolicy: z.enum(['Error', 'Warn']).optional().meta({
    description:
      'Error (when absent): a field that differs between hub and spoke and that no rule claims rejects the config. Warn: it is dropped in conversion, with a warning; needs unmappedFieldReason.',
  }),
  unmappedFieldReason: z.string().max(MAX_REASON_LENGTH).optional().meta({
    description: 'Why fields are deliberately left unclaimed; required with unmappedFieldPolicy: Warn.',
  }),
  // The reference operator's FailClosed (stop serving when the target's schema drifts) is not
  // offered: a failed recompile keeps the last good plan, always, because dropping a working
  // conversion turns a schema mistake into an outage of every read. Accepting only the value
  // Switchyard implements lets a reference config that spells the default out load unchanged.
  driftPolicy: z
    .enum(['KeepServingStale'], {
      error: (issue) =>
        `driftPolicy ${JSON.stringify(issue.input)} is not supported: Switchyard always keeps serving the last plan that compiled (KeepServingStale) and reports the drift in status; remove driftPolicy or set KeepServingStale`,
    })
    .optional()
    .meta({ description: 'Only KeepServingStale: a config that stops compiling keeps its last good plan.' }),
};

const REASON_REQUIRED = {
  rule: "!has(self.unmappedFieldPolicy) || self.unmappedFieldPolicy != 'Warn' || (has(self.unmappedFieldReason) && self.unmappedFieldReason != '')",
  message: 'unmappedFieldReason is required when unmappedFieldPolicy is Warn',
};

/** Warn downgrades a fail-closed check, so it must say why; the CRD states the same rule in CEL. */
function requireReasonForWarn<T extends z.ZodType<WarnPolicy>>(schema: T): T {
  return schema
    .refine((spec) => spec.unmappedFieldPolicy !== 'Warn' || Boolean(spec.unmappedFieldReason), {
      message: REASON_REQUIRED.message,
      path: ['unmappedFieldReason'],
    })
    .meta({ 'x-kubernetes-validations': [REASON_REQUIRED] });
}

interface WarnPolicy {
  unmappedFieldPolicy?: 'Error' | 'Warn' | undefined;
  unmappedFieldReason?: string | undefined;
}

/**
 * The spec field naming each kind of config's target. Its `.name` is a selectable field of the
 * config's CRD (api/crds.ts), so the admission webhook lists only the configs of one target.
 */
export const CONFIG_TARGET_FIELD = {
  [CRD_CONFIG_KIND]: 'targetCRD',
  [XRD_CONFIG_KIND]: 'targetXRD',
} as const;

/** The field path, as a field selector or a CRD's selectableFields names it, of a config's target name. */
export function configTargetNamePath(kind: keyof typeof CONFIG_TARGET_FIELD): string {
  return `spec.${CONFIG_TARGET_FIELD[kind]}.name`;
}

export const crdConfigSpecSchema = requireReasonForWarn(
  strictObject('a CRDConversionConfig spec', {
    targetCRD: targetRef('CustomResourceDefinition'),
    ...commonSpec,
  }),
);
export const xrdConfigSpecSchema = requireReasonForWarn(
  strictObject('an XRDConversionConfig spec', {
    targetXRD: targetRef('Crossplane CompositeResourceDefinition'),
    ...commonSpec,
  }),
);
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
    confirming: z
      .object({
        since: z.iso.datetime().meta({
          description: 'Since when every ready Pod of the destination has reported the target.',
        }),
        pods: z.string().max(64).meta({
          description: 'A digest of those ready Pods: the confirmation stands only while they stay the same.',
        }),
      })
      .optional()
      .meta({
        description:
          'A verified move waiting out handover.confirmSeconds before the repoint, so that a destination replica ' +
          'that died or hung just before shows as not ready first.',
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
  handoverDestination: z
    .string()
    .max(63)
    .optional()
    .meta({
      description:
        'The instance the HandoverReady condition is about: the destination of the move it reports, waiting or done. ' +
        'Assign sets it, with HandoverReady False, in the write that records a new assignedWebhookServer; ' +
        'a True HandoverReady is only ever about the instance assignedWebhookServer names.',
    }),
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
