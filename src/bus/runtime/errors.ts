/**
 * How a handler failure is treated. Three kinds, each with one consequence:
 *
 * - `conflict`: a Kubernetes 409 (the object changed since it was read). Nak'd
 *   with the short conflict backoff; the retry re-reads current state.
 * - `permanent`: retrying cannot help (e.g. a referenced object is malformed).
 *   Dead-lettered at once, like a message that fails validation.
 * - `infrastructure`: the bus itself failed (stream or bucket missing after a
 *   NATS restart, JetStream not enabled yet, timeout, no responders,
 *   connection closed). Nothing is wrong with the message, so it must never
 *   be dead-lettered for it: nak'd with the error backoff, and when the
 *   attempt budget runs out on such an error the message is republished
 *   afresh and the original acked.
 * - `retry`: anything else. Nak'd with the error backoff until `maxDeliver`,
 *   then dead-lettered.
 *
 * Classified by error class and JetStream API code, never by message text.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
// The public entry point does not export `JetStreamNotEnabled`, which the client throws on 503s.
import { jserrors } from '@nats-io/jetstream/internal';
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  TimeoutError,
} from '@nats-io/transport-node';

export type FailureKind = 'conflict' | 'permanent' | 'infrastructure' | 'retry';

/** Throw from a handler to mark a write conflict explicitly. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
}

/** Throw from a handler when redelivery cannot succeed: the message goes to the dead-letter subject at once. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown; response?: { statusCode?: unknown } };
  // @kubernetes/client-node 1.x/2.x ApiException carries `code`; older clients and fetch wrappers use
  // `statusCode` or `response.statusCode`.
  for (const v of [e.code, e.statusCode, e.response?.statusCode]) {
    if (typeof v === 'number') return v;
  }
  return undefined;
}

/** `JetStreamNotEnabled` (10076) is missing from nats.js's `JetStreamApiCodes`; nats-server `errors.json`. */
const JETSTREAM_NOT_ENABLED = 10076;
const INFRASTRUCTURE_API_CODES: ReadonlySet<number> = new Set([
  JetStreamApiCodes.StreamNotFound,
  JetStreamApiCodes.JetStreamNotEnabledForAccount,
  JETSTREAM_NOT_ENABLED,
]);
const INFRASTRUCTURE_CLASSES = [
  jserrors.JetStreamNotEnabled,
  TimeoutError,
  NoRespondersError,
  ClosedConnectionError,
  DrainingConnectionError,
  ConnectionError,
];

/** A failure of the bus, not of the message: the error or any error in its `cause` chain. */
export function isInfrastructureError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof JetStreamApiError && (INFRASTRUCTURE_API_CODES.has(e.code) || e.status === 503))
      return true;
    if (INFRASTRUCTURE_CLASSES.some((c) => e instanceof c)) return true;
  }
  return false;
}

/** Default classification: explicit error classes first, then bus failures, then an HTTP 409 status. */
export function classifyFailure(err: unknown): FailureKind {
  if (err instanceof PermanentError) return 'permanent';
  if (err instanceof ConflictError) return 'conflict';
  if (isInfrastructureError(err)) return 'infrastructure';
  if (statusOf(err) === 409) return 'conflict';
  return 'retry';
}

export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
