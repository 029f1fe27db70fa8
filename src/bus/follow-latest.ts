import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JsMsg,
  type OrderedConsumerOptions,
} from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { SettledSequence } from './settled-sequence.ts';

export interface LatestFollower {
  /** Resolves once every message that was on the stream when following began has been handed over. */
  readonly caughtUp: Promise<void>;
  /** The stream sequence of the last message handed over (0 before the first). */
  readonly handedSeq: number;
  /**
   * The sequence the handed messages vouch for (settled-sequence.ts): below `handedSeq` while a
   * record skipped because it was replaced has not been made up for by the one that replaced it.
   */
  readonly settledSeq: number;
  /**
   * Drops the current consumer and follows again from the message after the last one handed
   * over: what a reader does when the client's own recovery stalls.
   */
  restart(): Promise<void>;
  stop(): void;
}

/**
 * How long one pull waits before the client asks again. The client derives its idle heartbeat
 * (half of this) and, after a reconnect, the delay between its checks that the consumer still
 * exists (the whole of it) from this value. Its default, 30 s, left a view stalled for about
 * 40 s after a NATS restart (JetStream was not answering yet at the first check, and the next
 * came 30 s later: shared/notes/what-a-nats-restart-does-today.md); 5 s bounds that stall to a
 * few seconds at the cost of one empty pull request per 5 s per follower when the stream is idle.
 */
export const FOLLOW_PULL_EXPIRES_MS = 5_000;

/**
 * Follows the latest message of every subject matching `filters`, then every
 * new one, with an ordered consumer (it recreates itself after a reconnect or
 * a NATS restart, resuming after the last sequence it handed over).
 *
 * "Caught up" is read from each message's `pending` count, never from the
 * stream's `last_seq`: per-subject limits and expired tombstones leave interior
 * gaps, and the last sequence may belong to a message that is gone. A filter
 * that matches nothing is caught up at once, so an empty stream is no wait.
 *
 * Messages are handed over in stream order and never twice: after a `restart`, a message the
 * old consumer still had in flight is dropped if its sequence is not past the last one handed.
 * Each comes with the settled sequence after it: what a reader may claim to have reached.
 */
export async function followLatest(opts: {
  js: JetStreamClient;
  stream: string;
  filters: string[];
  onMessage: (m: JsMsg, settledSeq: number) => void;
  log: Logger;
}): Promise<LatestFollower> {
  let handedSeq = 0;
  const settled = new SettledSequence();
  let stopped = false;
  let markCaughtUp: () => void = () => undefined;
  const caughtUp = new Promise<void>((resolve) => {
    markCaughtUp = resolve;
  });
  let current: ConsumerMessages | undefined;

  async function follow(from: Partial<OrderedConsumerOptions>): Promise<void> {
    const consumer = await opts.js.consumers.get(opts.stream, { filter_subjects: opts.filters, ...from });
    if ((await consumer.info()).num_pending === 0) markCaughtUp();
    const messages = await consumer.consume({ expires: FOLLOW_PULL_EXPIRES_MS });
    current = messages;
    void (async () => {
      for await (const m of messages) {
        if (m.seq <= handedSeq) continue;
        handedSeq = m.seq;
        opts.onMessage(m, settled.observe(m.seq, m.info.pending));
        if (m.info.pending === 0) markCaughtUp();
      }
    })().catch((err) => {
      if (!stopped && current === messages)
        opts.log.error({ err, stream: opts.stream }, 'stopped following the stream');
    });
  }

  await follow({ deliver_policy: DeliverPolicy.LastPerSubject });
  return {
    caughtUp,
    get handedSeq() {
      return handedSeq;
    },
    get settledSeq() {
      return settled.value;
    },
    async restart() {
      if (stopped) return;
      const previous = current;
      current = undefined;
      void previous?.stop();
      await follow(
        handedSeq === 0
          ? { deliver_policy: DeliverPolicy.LastPerSubject }
          : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: handedSeq + 1 },
      );
    },
    stop() {
      stopped = true;
      void current?.stop();
    },
  };
}
