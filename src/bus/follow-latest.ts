import { DeliverPolicy, type JetStreamClient, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';

export interface LatestFollower {
  /** Resolves once every message that was on the stream when following began has been handed over. */
  readonly caughtUp: Promise<void>;
  stop(): void;
}

/**
 * Follows the latest message of every subject matching `filters`, then every
 * new one, with an ordered consumer (it recreates itself after a reconnect or
 * a NATS restart, resuming after the last sequence it handed over).
 *
 * "Caught up" is read from each message's `pending` count, never from the
 * stream's `last_seq`: per-subject limits and expired tombstones leave interior
 * gaps, and the last sequence may belong to a message that is gone. A filter
 * that matches nothing is caught up at once, so an empty stream is no wait.
 */
export async function followLatest(opts: {
  js: JetStreamClient;
  stream: string;
  filters: string[];
  onMessage: (m: JsMsg) => void;
  log: Logger;
}): Promise<LatestFollower> {
  const consumer = await opts.js.consumers.get(opts.stream, {
    filter_subjects: opts.filters,
    deliver_policy: DeliverPolicy.LastPerSubject,
  });
  let markCaughtUp: () => void = () => undefined;
  const caughtUp = new Promise<void>((resolve) => {
    markCaughtUp = resolve;
  });
  if ((await consumer.info()).num_pending === 0) markCaughtUp();
  const messages = await consumer.consume();
  let stopped = false;
  void (async () => {
    for await (const m of messages) {
      opts.onMessage(m);
      if (m.info.pending === 0) markCaughtUp();
    }
  })().catch((err) => {
    if (!stopped) opts.log.error({ err, stream: opts.stream }, 'stopped following the stream');
  });
  return {
    caughtUp,
    stop() {
      stopped = true;
      void messages.stop();
    },
  };
}
