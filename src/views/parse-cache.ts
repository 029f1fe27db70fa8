// What a recorded object parses to, once per object: the view replaces an object with a new one
// on every record and never changes one in place, so a parse holds for as long as the object is
// in the view. Apart from view-reads.ts so that a view's projections (projection.ts) can keep the
// parsed form without the view depending on its readers.
import { type ZodType, z } from 'zod';
import type { RecordedObject } from '../bus/messages.ts';

interface SchemaParses {
  /** The schema compiled ahead of time: same results and messages, two to four times as fast. */
  compiled: ZodType;
  results: WeakMap<RecordedObject, z.ZodSafeParseResult<unknown>>;
}

const parses = new WeakMap<ZodType, SchemaParses>();

/**
 * `schema.safeParse(object)`, once per recorded object: the view replaces an object with a new
 * one on every record and never changes one in place, so the result holds for as long as the
 * object is in the view. Handlers read every config and instance on every decision; parsing
 * them each time made a 1,000-config move spend most of its CPU in zod (bench/handover.ts).
 * The schema is compiled (`z.compile`) on its first use: a replica parses every config at start,
 * and its first thousand take a third less time that way, the ~40 ms of compiling included.
 * Callers must not modify what it returns.
 */
export function parseRecorded<T>(schema: ZodType<T>, object: RecordedObject): z.ZodSafeParseResult<T> {
  const bySchema = parsesOf(schema);
  let result = bySchema.results.get(object);
  if (!result) {
    result = bySchema.compiled.safeParse(object);
    bySchema.results.set(object, result);
  }
  return result as z.ZodSafeParseResult<T>;
}

/**
 * The object as `schema` parses it, remembered as its own parse (`parseRecorded` returns it
 * itself), or `object` unchanged when it does not parse. For a view that keeps many objects of a
 * kind its readers always parse: the view holds one copy, not the record and its parse. Only for
 * a schema whose parse of its own output is that output (defaults and stripped keys, no
 * transforms).
 */
export function parsedForm(schema: ZodType, object: RecordedObject): RecordedObject {
  const bySchema = parsesOf(schema);
  const result = bySchema.compiled.safeParse(object);
  if (!result.success) {
    bySchema.results.set(object, result);
    return object;
  }
  const parsed = result.data as RecordedObject;
  bySchema.results.set(parsed, result);
  return parsed;
}

function parsesOf(schema: ZodType): SchemaParses {
  let bySchema = parses.get(schema);
  if (!bySchema) {
    bySchema = { compiled: z.compile(schema), results: new WeakMap() };
    parses.set(schema, bySchema);
  }
  return bySchema;
}
