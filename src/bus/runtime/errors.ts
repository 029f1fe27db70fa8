/**
 * How a handler failure is treated. Three kinds, each with one consequence:
 *
 * - `conflict`: a Kubernetes 409 (the object changed since it was read). Nak'd
 *   with the short conflict backoff; the retry re-reads current state.
 * - `permanent`: retrying cannot help (e.g. a referenced object is malformed).
 *   Dead-lettered at once, like a message that fails validation.
 * - `retry`: anything else. Nak'd with the error backoff until `maxDeliver`,
 *   then dead-lettered.
 */

export type FailureKind = 'conflict' | 'permanent' | 'retry';

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

/** Default classification: explicit error classes first, then an HTTP 409 status on the error. */
export function classifyFailure(err: unknown): FailureKind {
  if (err instanceof PermanentError) return 'permanent';
  if (err instanceof ConflictError) return 'conflict';
  if (statusOf(err) === 409) return 'conflict';
  return 'retry';
}

export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
