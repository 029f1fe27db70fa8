// The handler runtime's public face, picked by hand: what a concern's handler, its wiring, the
// metrics and the CLI use. Everything else in this folder is the runtime's own machinery
// (leases, lanes, settle actions, republish and re-check plumbing) and is imported only here.
export { ensureConsumer, type HandlerConsumerSpec, planHandlerConsumers } from './consumers.ts';
export { deadLetterHeaders } from './dead-letter.ts';
export {
  ConflictError,
  classifyFailure,
  describeError,
  errorMessage,
  type FailureKind,
  isInfrastructureError,
  PermanentError,
} from './errors.ts';
export type { Handler, HandlerContext } from './handler.ts';
export { type HandlerCounters, noHandlerCounters } from './handler-counters.ts';
export {
  ATTEMPT_SECONDS_BOUNDS,
  type ConsumerState,
  type HandlerRuntime,
  startHandlerRuntime,
} from './handler-runtime.ts';
export { done, type Outcome, recheckAfter, recheckAt } from './outcome.ts';
export { keyOfPartitionedSubject, partitionedSubject, partitionOf } from './partition.ts';
export { RECHECK_HEADERS } from './recheck.ts';
export { DEFAULT_HANDLER_TIMEOUT_MS, type HandlerRuntimeOptions } from './runtime-options.ts';
export { stopOnSignals } from './shutdown.ts';
