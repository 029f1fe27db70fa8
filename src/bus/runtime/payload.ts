/**
 * What a handler is given: a delivery's payload decoded and checked against the concern's
 * schema, or the reason it is not one, which goes to the dead-letter record as it is. Never
 * throws, whatever the bytes (fuzzed in payload.fuzz.test.ts).
 *
 * The default decoder is the bus's own (`parsePayload`), the one `dlq retry` checks a payload
 * with before re-driving it: the two must agree, or a dead letter the check calls fixed is
 * dead-lettered again (and a lenient UTF-8 decoder would hand a handler a corrupted key).
 */
import { type ZodType, z } from 'zod';
import { parsePayload } from '../messages.ts';
import { describeError } from './errors.ts';

export type AdmittedPayload<T> = { ok: true; value: T } | { ok: false; reason: string };

export function admitPayload<T, M extends { data: Uint8Array }>(
  m: M,
  schema: ZodType<T>,
  decode: (m: M) => unknown = (msg) => parsePayload(msg.data),
): AdmittedPayload<T> {
  let raw: unknown;
  try {
    raw = decode(m);
  } catch (err) {
    return { ok: false, reason: `undecodable payload: ${describeError(err)}` };
  }
  try {
    const parsed = schema.safeParse(raw);
    if (parsed.success) return { ok: true, value: parsed.data };
    return { ok: false, reason: `schema validation failed: ${z.prettifyError(parsed.error)}` };
  } catch (err) {
    return { ok: false, reason: `schema validation failed: ${describeError(err)}` };
  }
}
