import { z } from 'zod';

/**
 * Messages of the bus. Every message is validated with its schema when it is
 * published and when it is consumed; a message that fails is dead-lettered,
 * never retried (bus/runtime).
 */

/** The part of an object every message needs; the rest passes through as recorded. */
export const recordedObjectSchema = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().optional(),
    uid: z.string().min(1),
    resourceVersion: z.string().min(1),
  }),
});
export type RecordedObject = z.infer<typeof recordedObjectSchema>;

/**
 * One change of one object, as recorded on `k8s.<kind>.<ns>.<name>`.
 * `upsert` carries the whole object as the apiserver returned it (without
 * managedFields); `delete` carries the last object seen, whether the watch
 * reported the deletion or a relist found the object gone (`observedBy`).
 */
export const objectEventSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('upsert'),
    object: recordedObjectSchema,
    observedBy: z.enum(['watch', 'list']),
    observedAt: z.iso.datetime(),
  }),
  z.object({
    op: z.literal('delete'),
    object: recordedObjectSchema,
    observedBy: z.enum(['watch', 'relist-gap']),
    observedAt: z.iso.datetime(),
  }),
]);
export type ObjectEvent = z.infer<typeof objectEventSchema>;

/**
 * The deduplication id of an object event: two watchers, or one watcher
 * relisting, store each change once. An upsert is identified by uid and
 * resourceVersion; a deletion by uid alone, because a watcher that missed it
 * (a 410 gap) only knows the last resourceVersion it saw.
 */
export function objectEventId(event: ObjectEvent): string {
  const { uid, resourceVersion } = event.object.metadata;
  return event.op === 'delete' ? `${uid}:deleted` : `${uid}:${resourceVersion}`;
}

export function encodeMessage<T>(schema: z.ZodType<T>, value: T): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(schema.parse(value)));
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

/** Parses and validates a payload; never throws. */
export function decodeMessage<T>(schema: z.ZodType<T>, data: Uint8Array): Decoded<T> {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(data));
  } catch (err) {
    return { ok: false, reason: `not JSON: ${(err as Error).message}` };
  }
  const result = schema.safeParse(json);
  if (!result.success) return { ok: false, reason: z.prettifyError(result.error) };
  return { ok: true, value: result.data };
}
