import { gunzipSync, gzipSync } from 'node:zlib';
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

/** A UTC timestamp as `toISOString` writes it (any fraction of a second). */
const OBSERVED_AT_FORMAT = { offset: false, local: false, precision: null } as const;
const OBSERVED_AT = z.regexes.datetime(OBSERVED_AT_FORMAT);

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
    observedAt: z.iso.datetime(OBSERVED_AT_FORMAT),
    /**
     * Set when the object did not fit the bus even compressed: `object` then
     * holds only its apiVersion, kind and metadata. A reader knows the object
     * exists at that resourceVersion but not its content, and fails closed.
     */
    omitted: z.object({ reason: z.literal('too-large'), bytes: z.number().int().positive() }).optional(),
  }),
  z.object({
    op: z.literal('delete'),
    object: recordedObjectSchema,
    observedBy: z.enum(['watch', 'relist-gap']),
    observedAt: z.iso.datetime(OBSERVED_AT_FORMAT),
  }),
]);
export type ObjectEvent = z.infer<typeof objectEventSchema>;

/**
 * What `objectEventSchema` accepts and returns unchanged, checked by hand. Every view decodes
 * every record with it, a replica thousands before it is ready, and zod, which copies each
 * loose object it reads, took a quarter of that read. The property tests hold the two to the same
 * answer; zod reads what this refuses: an invalid record, for the message, or one with fields
 * zod strips.
 */
export function isObjectEvent(value: unknown): value is ObjectEvent {
  if (!isPlainObject(value) || typeof value.observedAt !== 'string' || !isRecordedObject(value.object))
    return false;
  let keys = 4;
  if (value.op === 'upsert') {
    if (value.observedBy !== 'watch' && value.observedBy !== 'list') return false;
    if (value.omitted !== undefined) {
      if (!isOmission(value.omitted)) return false;
      keys++;
    }
  } else if (value.op !== 'delete' || (value.observedBy !== 'watch' && value.observedBy !== 'relist-gap'))
    return false;
  return keyCount(value) === keys && OBSERVED_AT.test(value.observedAt);
}

function isRecordedObject(value: unknown): boolean {
  if (!isPlainObject(value) || !isPlainObject(value.metadata)) return false;
  const { apiVersion, kind, metadata } = value;
  return (
    (apiVersion === undefined || typeof apiVersion === 'string') &&
    (kind === undefined || typeof kind === 'string') &&
    isNonEmptyString(metadata.name) &&
    (metadata.namespace === undefined || typeof metadata.namespace === 'string') &&
    isNonEmptyString(metadata.uid) &&
    isNonEmptyString(metadata.resourceVersion)
  );
}

function isOmission(value: unknown): boolean {
  return (
    isPlainObject(value) &&
    value.reason === 'too-large' &&
    Number.isSafeInteger(value.bytes) &&
    (value.bytes as number) > 0 &&
    keyCount(value) === 2
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value: unknown): boolean {
  return typeof value === 'string' && value.length > 0;
}

function keyCount(object: object): number {
  let n = 0;
  for (const _ in object) n++;
  return n;
}

/** `decodeMessage(objectEventSchema, data)`, with the check by hand first. */
export function decodeObjectEvent(data: Uint8Array): Decoded<ObjectEvent> {
  return decodeMessage(objectEventSchema, data, isObjectEvent);
}

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

/**
 * Payloads above this size are gzip-compressed: large CRDs (several MiB of
 * OpenAPI schema) shrink about tenfold and fit NATS' default 1 MiB max_payload,
 * while small messages stay readable in `nats stream view`.
 */
export const COMPRESS_ABOVE_BYTES = 64 * 1024;
/** A compressed payload never inflates past this: a hostile message cannot exhaust memory. */
export const MAX_INFLATED_BYTES = 64 * 1024 * 1024;
const GZIP_MAGIC = [0x1f, 0x8b];
/** One of each for the process: every record a view reads is decoded, and a decoder is not free to make. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });
const UTF8_ENCODER = new TextEncoder();

export function encodeMessage<T>(schema: z.ZodType<T>, value: T): Uint8Array {
  const json = UTF8_ENCODER.encode(JSON.stringify(schema.parse(value)));
  return json.byteLength > COMPRESS_ABOVE_BYTES ? new Uint8Array(gzipSync(json)) : json;
}

function isGzip(data: Uint8Array): boolean {
  return data[0] === GZIP_MAGIC[0] && data[1] === GZIP_MAGIC[1];
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; reason: string };

/**
 * A payload's JSON value, inflated first when gzip-compressed; throws when it is not strict
 * UTF-8 JSON (a lenient decoder would turn a corrupted key into U+FFFD and pass it on).
 */
export function parsePayload(data: Uint8Array): unknown {
  // JSON never starts with 0x1f, so the gzip magic alone tells a compressed payload.
  const text = isGzip(data) ? gunzipSync(data, { maxOutputLength: MAX_INFLATED_BYTES }) : data;
  return JSON.parse(UTF8.decode(text));
}

/**
 * Parses and validates a payload; never throws. `accepts`, when given, is a faster check of
 * what the schema accepts unchanged; the schema then reads only what it refuses.
 */
export function decodeMessage<T>(
  schema: z.ZodType<T>,
  data: Uint8Array,
  accepts?: (value: unknown) => value is T,
): Decoded<T> {
  let json: unknown;
  try {
    json = parsePayload(data);
  } catch (err) {
    return { ok: false, reason: `not JSON (or not inflatable): ${(err as Error).message}` };
  }
  if (accepts?.(json)) return { ok: true, value: json };
  const result = schema.safeParse(json);
  if (!result.success) return { ok: false, reason: z.prettifyError(result.error) };
  return { ok: true, value: result.data };
}

/**
 * A handler's work item on `work.<concern>.<partition>.<key…>`: which key to
 * reconcile, and the stream sequence (in K8S) of the record that caused it.
 * It is a trigger, not a state: the handler waits until its view has reached
 * `seq` and then decides on the view (docs/handlers.md).
 */
export const workItemSchema = z.object({
  /** The key in readable form, e.g. `crdconfig/widgets-config` or a target name. */
  key: z.string().min(1),
  /** K8S sequence of the causing record; 0 when nothing recorded caused it (a manual kick). */
  seq: z.int().min(0),
});
export type WorkItem = z.infer<typeof workItemSchema>;

/**
 * Handover work on `work.handover.<partition>.<target>`. Assign emits it for exactly
 * the configs whose resolved instance changed (first assignment included), with
 * what it saw as hints (`config`, `from`, `to`, for logs and replay);
 * lease-aggregate emits it, without hints, for the targets waiting on an
 * instance whose served set changed. The handover handler decides on its view
 * either way (a newer move may have superseded this one).
 */
export const handoverWorkSchema = workItemSchema.extend({
  /** The target (CRD or XRD name): `key` repeats it, so every work item reads the same way. */
  key: z.string().min(1),
  /** The config that resolves the target, `<Kind>/<name>` (assign only). */
  config: z.string().min(1).optional(),
  /** The instance the config's status named before; absent on a first assignment (assign only). */
  from: z.string().min(1).optional(),
  /** The instance the target resolves to now (assign only). */
  to: z.string().min(1).optional(),
  /**
   * The destination's trust bundle may differ from the one the target publishes (the instances
   * handler, on a CA rotation or a foreign caBundle): read it, even for a target that already
   * names the destination. Without it the handover keeps a bundle the target already publishes
   * for its destination's Service, and reads the bundle only for a move.
   */
  trust: z.literal(true).optional(),
});
export type HandoverWork = z.infer<typeof handoverWorkSchema>;

/**
 * What a handler decided about one key, recorded on `decision.<concern>.<key>` (stream
 * DECISIONS) before it acts on it. `viewSeq` is the view's K8S sequence at the moment of the
 * decision and `decidedAt` the clock it read: with the records up to `viewSeq`, the same function
 * decides the same thing again, which `switchyard replay` checks byte for byte. `decision` is
 * the handler's own JSON (for assign: `ConfigAssignmentDecision`).
 */
export const decisionRecordSchema = z.object({
  concern: z.string().min(1),
  key: z.string().min(1),
  viewSeq: z.int().min(0),
  decidedAt: z.iso.datetime(OBSERVED_AT_FORMAT),
  decision: z.unknown().refine((value) => value !== undefined, { message: 'a decision is required' }),
});
export type DecisionRecord = z.infer<typeof decisionRecordSchema>;

/**
 * What `decisionRecordSchema` accepts and returns unchanged, checked by hand: a replay reads
 * every recorded decision. Property-tested against the schema like `isObjectEvent`.
 */
export function isDecisionRecord(value: unknown): value is DecisionRecord {
  return (
    isPlainObject(value) &&
    isNonEmptyString(value.concern) &&
    isNonEmptyString(value.key) &&
    Number.isSafeInteger(value.viewSeq) &&
    (value.viewSeq as number) >= 0 &&
    typeof value.decidedAt === 'string' &&
    OBSERVED_AT.test(value.decidedAt) &&
    value.decision !== undefined &&
    keyCount(value) === 5
  );
}

export function decodeDecisionRecord(data: Uint8Array): Decoded<DecisionRecord> {
  return decodeMessage(decisionRecordSchema, data, isDecisionRecord);
}
