// What a handler runtime counts, for whoever observes it (metrics/worker-metrics.ts reads them at each scrape).

/** Monotonic counters (and one gauge) for metrics export. */
export interface HandlerCounters {
  /** Handler succeeded and the ack was sent. */
  processed: number;
  /** Nak'd for a later retry (conflicts included). */
  retried: number;
  /** Handler asked to look again later: a re-check was scheduled and the trigger acked. */
  rechecks: number;
  /** Of `retried`, those that were Kubernetes conflicts. */
  conflicts: number;
  /** Published to the dead-letter subject (all kinds). */
  deadLettered: number;
  /** Of `deadLettered`, those that failed decoding or validation. */
  invalid: number;
  /** A dead-letter publish failed; the message was nak'd to try again. */
  deadLetterFailures: number;
  /** Arrived after stop and given back at once (nak). */
  released: number;
  /** Attempt budget spent on bus failures only: published again afresh, the original acked. */
  republished: number;
  /** Handlers cut short by the deadline or the drain timeout. */
  timedOut: number;
  /** Attempts given up without a settle (lease lapsed, or no settle in the grace): redelivered after ack_wait. */
  abandoned: number;
  /** The ack confirmation failed; the message may be redelivered (handlers are idempotent). */
  ackFailures: number;
  /** Consumers re-added after they were found missing. */
  consumersRecreated: number;
  /** Handlers running right now (gauge). */
  inFlight: number;
}

/** Every counter at zero: a runtime's at start. */
export function noHandlerCounters(): HandlerCounters {
  return {
    processed: 0,
    retried: 0,
    rechecks: 0,
    conflicts: 0,
    deadLettered: 0,
    invalid: 0,
    deadLetterFailures: 0,
    released: 0,
    republished: 0,
    timedOut: 0,
    abandoned: 0,
    ackFailures: 0,
    consumersRecreated: 0,
    inFlight: 0,
  };
}
