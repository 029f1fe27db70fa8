/**
 * How a handler failure is treated. Four kinds, each with one consequence
 * (applied by `settlement.ts`):
 *
 * - `conflict`: a Kubernetes 409 (the object changed since it was read). Nak'd
 *   with the short conflict backoff; the retry re-reads current state.
 * - `permanent`: retrying cannot help (e.g. a referenced object is malformed).
 *   Dead-lettered at once, like a message that fails validation.
 * - `infrastructure`: the bus itself failed (stream or bucket missing after a
 *   NATS restart, JetStream not enabled yet, timeout, no responders,
 *   connection closed, the handler's view not caught up with the bus). Nothing is wrong with the message, so it must never
 *   be dead-lettered for it: nak'd with the error backoff, and when the
 *   attempt budget runs out on such an error the message is republished
 *   afresh and the original acked.
 * - `transient`: anything else. Nak'd with the error backoff until
 *   `maxDeliver`, then dead-lettered.
 *
 * Classified by error class, JetStream API code (`../errors.ts`) and
 * Kubernetes status (`src/kube/errors.ts`), never by message text.
 */
// The public entry point does not export `JetStreamNotEnabled`, which the client throws on 503s.
import { jserrors } from '@nats-io/jetstream/internal';
import {
  ClosedConnectionError,
  ConnectionError,
  DrainingConnectionError,
  NoRespondersError,
  TimeoutError,
} from '@nats-io/transport-node';
import { isConflict } from '../../kube/errors.ts';
import { isDuplicateInProcess, isJetStreamUnavailable, isStreamNotFound } from '../errors.ts';
import { ViewBehindError } from '../view-lag.ts';

export type FailureKind = 'conflict' | 'permanent' | 'infrastructure' | 'transient';

/** Throw from a handler to mark a write conflict explicitly. */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
}

/** Throw from a handler when redelivery cannot succeed: the message goes to the dead-letter subject at once. */
export class PermanentError extends Error {
  override readonly name = 'PermanentError';
}

const INFRASTRUCTURE_CLASSES = [
  jserrors.JetStreamNotEnabled,
  TimeoutError,
  NoRespondersError,
  ClosedConnectionError,
  DrainingConnectionError,
  ConnectionError,
  // The handler's view has not caught up with the bus: the bus's state, not the message's fault.
  ViewBehindError,
];

/** A failure of the bus, not of the message: the error or any error in its `cause` chain. */
export function isInfrastructureError(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (isStreamNotFound(e) || isJetStreamUnavailable(e) || isDuplicateInProcess(e)) return true;
    if (INFRASTRUCTURE_CLASSES.some((c) => e instanceof c)) return true;
  }
  return false;
}

/** Default classification: explicit error classes first, then bus failures, then an HTTP 409 status. */
export function classifyFailure(err: unknown): FailureKind {
  if (err instanceof PermanentError) return 'permanent';
  if (err instanceof ConflictError) return 'conflict';
  if (isInfrastructureError(err)) return 'infrastructure';
  if (isConflict(err)) return 'conflict';
  return 'transient';
}

/** The error's message alone, for a line that names the failed step itself. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}
