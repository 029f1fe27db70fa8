// ConversionWebhookServer: one instance of webhook-server replicas behind a Service. It keeps
// the knobs users of the existing conversion operator know, plus `sharding`, which puts the
// instance into the pool that spreads unpinned targets by weighted rendezvous hashing.
import { z } from 'zod';
import { conditionsSchema } from './conditions.ts';
import { API_VERSION } from './constants.ts';
import { instanceNameSchema, namespaceNameSchema, objectMetaSchema, targetNameSchema } from './names.ts';
import { opaqueObject } from './openapi.ts';

export const WEBHOOK_SERVER_KIND = 'ConversionWebhookServer';

// Weights are relative; the cap only keeps arithmetic and shares in a sane range.
export const MAX_SHARD_WEIGHT = 1000;

export const shardingSchema = z
  .object({
    enabled: z.boolean().meta({ description: 'Whether this instance is a member of the sharding pool.' }),
    weight: z
      .int()
      .min(1)
      .max(MAX_SHARD_WEIGHT)
      .default(1)
      .meta({ description: "Relative share of the pool's targets this instance wins." }),
  })
  .meta({
    description: 'Membership in the pool that spreads unpinned targets by weighted rendezvous hashing.',
  });
export type Sharding = z.infer<typeof shardingSchema>;

export const imageSchema = z.object({
  repository: z.string().min(1).optional(),
  tag: z.string().min(1).optional(),
  digest: z.string().min(1).optional().meta({ description: 'Wins over tag when both are set.' }),
  pullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
});

const stringMap = z.record(z.string(), z.string());

export const webhookServerSpecSchema = z.object({
  default: z
    .boolean()
    .default(false)
    .meta({ description: 'Serve every config with no webhookServerRef while no sharding pool exists.' }),
  namespace: namespaceNameSchema
    .optional()
    .meta({ description: "Namespace of the instance's workloads; the operator's own when unset." }),
  replicas: z.int().min(0).max(1000).default(2),
  sharding: shardingSchema.optional(),
  image: imageSchema.optional(),
  resources: opaqueObject('Container resources (core/v1 ResourceRequirements).').optional(),
  nodeSelector: stringMap.optional(),
  tolerations: z.array(opaqueObject('A core/v1 Toleration.')).max(64).optional(),
  affinity: opaqueObject('Pod affinity (core/v1 Affinity).').optional(),
  priorityClassName: z.string().min(1).optional(),
  serviceAccountName: z.string().min(1).optional(),
  podLabels: stringMap.optional(),
  podAnnotations: stringMap.optional(),
  extraArgs: z.array(z.string()).max(64).optional(),
});
export type WebhookServerSpec = z.infer<typeof webhookServerSpecSchema>;

/**
 * The most target names a status list holds. Above it the list is left out and only its count
 * and digest are published (core/status-lists.ts): two lists of 1,000 names of up to 253 bytes
 * are at most ~0.5 MiB, a third of the apiserver's 1.5 MiB object limit, and a list longer
 * than that is read with `explain`, not `kubectl get`.
 */
export const STATUS_LIST_MAX = 1000;

const sortedTargetList = (description: string) =>
  z
    .array(targetNameSchema)
    .max(STATUS_LIST_MAX)
    .meta({
      description: `${description} Left out above ${STATUS_LIST_MAX} names: see the count and digest.`,
      'x-kubernetes-list-type': 'atomic',
    });

const targetsDigest = (list: string) =>
  z
    .string()
    .regex(/^sha256:[0-9a-f]{64}$/)
    .meta({
      description: `sha256 of the ${list} names in code-unit order, each followed by a newline (LC_ALL=C sort | sha256sum).`,
    });

export const webhookServerStatusSchema = z.object({
  observedGeneration: z.int().min(0).optional(),
  replicas: z.int().min(0).optional(),
  readyReplicas: z.int().min(0).optional(),
  reportingReplicas: z.int().min(0).optional().meta({
    description: 'Live replica Leases that fed servedTargets; below readyReplicas it says nothing.',
  }),
  servedTargets: sortedTargetList(
    'Targets every live replica reports it can serve (sorted). Absent while any report cannot be read.',
  ).optional(),
  servedTargetCount: z.int().min(0).optional(),
  servedTargetsDigest: targetsDigest('served').optional(),
  assignedTargets: sortedTargetList('Targets whose configs resolve to this instance (sorted).').optional(),
  assignedTargetCount: z.int().min(0).optional(),
  assignedTargetsDigest: targetsDigest('assigned').optional(),
  conditions: conditionsSchema.optional(),
});
export type WebhookServerStatus = z.infer<typeof webhookServerStatusSchema>;

export const webhookServerSchema = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(WEBHOOK_SERVER_KIND),
  metadata: objectMetaSchema.extend({ name: instanceNameSchema }),
  spec: webhookServerSpecSchema,
  status: webhookServerStatusSchema.optional(),
});
export type WebhookServer = z.infer<typeof webhookServerSchema>;
