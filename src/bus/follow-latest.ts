import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type OrderedConsumerOptions,
} from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { errorMessage } from './runtime/errors.ts';
import { SettledSequence } from './settled-sequence.ts';
import { subjectMatches } from './subjects.ts';

/** What a follower hands over: a message of the followed stream, or of its history. */
export type FollowedMessage = Pick<JsMsg, 'subject' | 'seq' | 'data'>;

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
  onMessage: (m: FollowedMessage, settledSeq: number) => void;
  log: Logger;
  /**
   * The stream that `stream` compacts, under the same sequences (K8S for K8S_LATEST). Once caught
   * up, the records a gap skipped (replaced while this reader was behind) are read from it, in
   * order, before the message after the gap: the reader then vouches for every message it
   * handed, however long it stays behind. Without it, or when the history cannot fill a gap
   * whole, the settled sequence waits (settled-sequence.ts).
   */
  history?: string;
}): Promise<LatestFollower> {
  let handedSeq = 0;
  let isCaughtUp = false;
  const settled = new SettledSequence();
  let stopped = false;
  let markCaughtUp: () => void = () => undefined;
  const caughtUp = new Promise<void>((resolve) => {
    markCaughtUp = () => {
      isCaughtUp = true;
      resolve();
    };
  });
  let current: ConsumerMessages | undefined;
  const history = opts.history === undefined ? undefined : historyReader(opts.js, opts.history, opts.log);

  /**
   * Hands over the records of the gap before `m`, read from the history, or nothing when it
   * cannot have them all: then `m` opens a window (settled-sequence.ts).
   */
  async function fillGapBefore(m: JsMsg, messages: ConsumerMessages): Promise<void> {
    const gap = m.seq - handedSeq - 1;
    if (!history || !isCaughtUp || gap === 0 || gap > HISTORY_MAX_GAP) return;
    const records = await history.read(handedSeq + 1, m.seq - 1);
    if (records === undefined || current !== messages) return;
    for (const r of records) {
      if (opts.filters.some((f) => subjectMatches(f, r.subject))) opts.onMessage(r, settled.filled(r.seq));
      else settled.filled(r.seq);
      handedSeq = r.seq;
    }
  }

  async function follow(from: Partial<OrderedConsumerOptions>): Promise<void> {
    const consumer = await opts.js.consumers.get(opts.stream, { filter_subjects: opts.filters, ...from });
    if ((await consumer.info()).num_pending === 0) markCaughtUp();
    const messages = await consumer.consume({ expires: FOLLOW_PULL_EXPIRES_MS });
    current = messages;
    void (async () => {
      for await (const m of messages) {
        if (m.seq <= handedSeq) continue;
        await fillGapBefore(m, messages);
        // A restart while the gap was read: the new consumer hands this message over.
        if (current !== messages || m.seq <= handedSeq) continue;
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

/** How many records of a gap are asked for at once; a wider gap takes several rounds. */
const HISTORY_CONCURRENCY = 64;
/**
 * The widest gap read from the history. A wider one is a reader back from a long stall, about to
 * drain what the mirror kept: the window rule lets it vouch again once it has, sooner than
 * thousands of gets would.
 */
const HISTORY_MAX_GAP = 4_096;

/**
 * Reads a range of sequences from a stream that keeps every record, one get per sequence: no
 * consumer, so reading the history needs no right on its consumers (the router's is there). The
 * stream's own get, not a direct get: a mirror with allow_direct answers direct gets for its
 * origin too (mirror_direct), from what it kept, and would say "not found" for a replaced record
 * whenever it answered first. Resolves to undefined when a sequence of the range is not there
 * (aged out, or an expired tombstone) or the bus did not answer: the caller falls back to
 * waiting for the gap to close.
 */
function historyReader(js: JetStreamClient, stream: string, log: Logger) {
  let jsm: Promise<JetStreamManager> | undefined;
  return {
    async read(from: number, to: number): Promise<FollowedMessage[] | undefined> {
      jsm ??= js.jetstreamManager();
      const records: FollowedMessage[] = [];
      try {
        const manager = await jsm;
        for (let first = from; first <= to; first += HISTORY_CONCURRENCY) {
          const seqs = Array.from(
            { length: Math.min(HISTORY_CONCURRENCY, to - first + 1) },
            (_, i) => first + i,
          );
          const got = await Promise.all(seqs.map((seq) => manager.streams.getMessage(stream, { seq })));
          for (const r of got) {
            if (r === null) return undefined;
            records.push({ subject: r.subject, seq: r.seq, data: r.data });
          }
        }
        return records;
      } catch (err) {
        jsm = undefined;
        log.warn(
          { stream, from, to, err: errorMessage(err) },
          'could not read a gap from the history; waiting for it to close',
        );
        return undefined;
      }
    },
  };
}
