// The standard Kubernetes condition (metav1.Condition), shared by every status in the API.
import { z } from 'zod';

export const conditionStatusSchema = z.enum(['True', 'False', 'Unknown']);
export type ConditionStatus = z.infer<typeof conditionStatusSchema>;

export const conditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: conditionStatusSchema,
  observedGeneration: z.int().min(0).optional(),
  lastTransitionTime: z.iso.datetime(),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof conditionSchema>;

export const conditionsSchema = z
  .array(conditionSchema)
  .max(32)
  .meta({
    description: 'Latest observations of the object, one per type.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });
