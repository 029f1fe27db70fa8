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

export const DRIFT_POLICIES = ['KeepServingStale', 'FailClosed'] as const;
export type DriftPolicy = (typeof DRIFT_POLICIES)[number];

/** The policy a config's spec states, or the default. */
export function driftPolicyOf(spec: { driftPolicy?: DriftPolicy | undefined }): DriftPolicy {
  return spec.driftPolicy ?? 'KeepServingStale';
}

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
  // What a held plan does when its config stops compiling (the target's schema drifted, or the
  // config changed past admission): KeepServingStale keeps serving it, FailClosed drops it so
  // the target's conversions are refused (webhook/plans.ts). A misspelt value is refused with
  // the two it may be, never read as the default.
  driftPolicy: z
    .enum(DRIFT_POLICIES, {
      error: (issue) =>
        `driftPolicy ${JSON.stringify(issue.input)} is not supported: set KeepServingStale (the default: a config that stops compiling keeps serving its last good plan) or FailClosed (its conversions are refused until it compiles again)`,
    })
    .optional()
    .meta({
      description:
        "When the config stops compiling against its target (the schema drifted, or the config changed): KeepServingStale (when absent) keeps serving the last plan that compiled; FailClosed drops it, and the target's conversions are refused, naming the config, until it compiles again.",
    }),
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

/**
 * How much of the compile's verdicts a config's status carries (core/spoke-statuses.ts bounds
 * them). A config may have 32 spokes of 256 rules; listing every rule with its paths and
 * diagnostics would make a status of megabytes, rewritten on every change, recorded on the bus
 * and held by every handler. So the lists are bounded, the cut is counted (`omitted`), and the
 * whole of `spokeStatuses` stays under `bytes` as JSON.
 */
export const VERDICT_LIMITS = {
  /** All of spokeStatuses, as JSON. */
  bytes: 64 * 1024,
  /** A message longer than this is cut, ending in "…". */
  messageChars: 512,
  /** Likewise a path. */
  pathChars: 256,
  /** Paths per rule result and side. */
  rulePaths: 8,
  /** Errors, and warnings, per rule result. */
  ruleMessages: 4,
} as const;

const losslessVerdictSchema = z
  .object({
    hubToSpoke: z.boolean(),
    spokeToHub: z.boolean(),
  })
  .meta({
    description:
      'Whether converting each way is proven to lose nothing: false for a rule that did not resolve, and for a spoke with an error.',
  });

const messagesSchema = (what: string) => z.array(z.string()).optional().meta({ description: what });

export const ruleResultSchema = z
  .object({
    index: z.int().min(0).meta({ description: "The rule's index in its spoke's rules." }),
    strategy: z.string().max(64),
    hubPaths: z
      .array(z.string())
      .max(VERDICT_LIMITS.rulePaths)
      .optional()
      .meta({ description: 'The hub fields the rule claims; absent when it did not resolve.' }),
    spokePaths: z
      .array(z.string())
      .max(VERDICT_LIMITS.rulePaths)
      .optional()
      .meta({ description: 'The spoke fields the rule claims; absent when it did not resolve.' }),
    lossless: losslessVerdictSchema,
    errors: messagesSchema("The compile's errors about this rule."),
    warnings: messagesSchema("The compile's warnings about this rule."),
  })
  .meta({ description: "One rule's verdict (the reference operator's RuleResult)." });
export type RuleResult = z.infer<typeof ruleResultSchema>;

const count = (what: string) => z.int().min(1).optional().meta({ description: what });

export const spokeStatusSchema = z
  .object({
    version: versionNameSchema,
    lossless: losslessVerdictSchema,
    ruleResults: z.array(ruleResultSchema).max(256).optional(),
    fieldsUncoveredHub: messagesSchema(
      'Fields no rule accounts for whose hub value does not reach the spoke (hub-only, or declared differently).',
    ),
    fieldsUncoveredSpoke: messagesSchema(
      'Fields no rule accounts for whose spoke value does not reach the hub (spoke-only, or declared differently).',
    ),
    errors: messagesSchema(
      "The compile's errors about the spoke as a whole, or about the hub (a rule's are in its ruleResults entry).",
    ),
    warnings: messagesSchema("The compile's warnings about the spoke as a whole."),
    omitted: z
      .object({
        ruleResults: count('Rule results left out: those without errors, losses or warnings go first.'),
        fieldsUncoveredHub: count('Uncovered hub fields left out.'),
        fieldsUncoveredSpoke: count('Uncovered spoke fields left out.'),
        errors: count('Spoke errors left out.'),
        warnings: count('Spoke warnings left out.'),
        ruleEntries: count('Paths and messages left out of the rule results listed.'),
      })
      .optional()
      .meta({
        description:
          'What the bounded lists leave out (absent when nothing is); the Validated condition lists every diagnostic, up to its own bound.',
      }),
  })
  .meta({ description: "One spoke's verdict (the reference operator's SpokeConversionStatus)." });
export type SpokeStatus = z.infer<typeof spokeStatusSchema>;

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
  schemaHash: z.string().max(128).optional().meta({
    description:
      "The target's versions the verdicts were compiled against, as sha256:<base64url> of their names, served and storage/referenceable flags and openAPIV3Schemas. Absent while the target does not exist.",
  }),
  overallLossless: z.boolean().optional().meta({
    description: 'Whether the config compiles and every spoke converts both ways losslessly.',
  }),
  spokeStatuses: z.array(spokeStatusSchema).max(32).optional().meta({
    description:
      "Per spoke listed, the compile's verdicts, written with phase and Validated from the same compile; bounded (omitted says what is left out).",
  }),
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
