// `switchyard replay`: take a concern's recorded decisions again, offline, from the recorded
// history, and say for each whether it comes out byte for byte the same.
//
// One pass over the history. The decisions to replay (stream DECISIONS, filtered by concern, key
// and bound) are read first and sorted by the view sequence each was decided on; then a view of
// the concern's kinds is rebuilt by applying the records of K8S in stream order, and each decision
// is taken again when the view has reached its sequence, before the next record is applied.
//
// Every record of K8S is read, the kinds the concern does not decide on too: an ordered consumer
// filtered to assign's kinds read two thirds of the records in ten times the time of all of them
// (nats-server 2.15.2; BENCHMARKS.md, "Replay"). The view skips the other kinds by subject.
//
// K8S keeps every change for the record retention; objects unchanged for longer are only in its
// mirror K8S_LATEST, so the view starts from those (latest records older than K8S's first). A
// decision made on a view older than K8S's first record cannot be rebuilt: it is reported
// `unavailable`, never guessed.
import { DeliverPolicy, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import { type DecisionRecord, decodeDecisionRecord } from '../bus/messages.ts';
import { escapeToken } from '../bus/subjects.ts';
import { STREAMS } from '../bus/topology.ts';
import { ObjectView } from '../bus/view.ts';
import { compareDecisions, DECIDERS, type Verdict } from './deciders.ts';

export interface ReplayOptions {
  concern: string;
  /** Only this key's decisions (e.g. `crdconfig/widgets`). */
  key?: string;
  /** Only decisions made on a view at or before this K8S sequence. */
  untilSeq?: number;
  /** Only decisions made at or before this time. */
  until?: Date;
  /** Called now and then on long work: records applied of how many. */
  onProgress?: (applied: number, total: number) => void;
}

export interface ReplayedDecision {
  key: string;
  viewSeq: number;
  decidedAt: string;
  /** Where the record is in DECISIONS. */
  recordSeq: number;
  recorded: unknown;
  /** Absent when `unavailable`. */
  replayed?: unknown;
  verdict: Verdict | 'unavailable';
}

/** A record on DECISIONS that does not read as a decision: reported, never a reason to stop. */
export interface UnreadableDecision {
  recordSeq: number;
  subject: string;
  reason: string;
}

export interface ReplayReport {
  concern: string;
  /** The first sequence K8S still holds: decisions on older views cannot be replayed. */
  historyFrom: number;
  recordsApplied: number;
  decisions: ReplayedDecision[];
  unreadable: UnreadableDecision[];
}

const PROGRESS_EVERY = 5_000;

export async function replay(
  js: JetStreamClient,
  jsm: JetStreamManager,
  opts: ReplayOptions,
  log: Logger,
): Promise<ReplayReport> {
  const decider = DECIDERS[opts.concern];
  if (!decider) {
    throw new Error(
      `${opts.concern} records no decisions to replay; these do: ${Object.keys(DECIDERS).join(', ')}`,
    );
  }
  const { readable, unreadable } = await readDecisions(js, opts);
  const pending = readable.sort((a, b) => a.record.viewSeq - b.record.viewSeq || a.seq - b.seq);
  const history = (await jsm.streams.info(STREAMS.records)).state;
  const historyFrom = history.messages === 0 ? history.last_seq + 1 : history.first_seq;
  const lastNeeded = Math.min(history.last_seq, pending.at(-1)?.record.viewSeq ?? 0);
  const view = new ObjectView(decider.viewKinds, log);
  const decisions: ReplayedDecision[] = [];
  let next = 0;
  const takeAgainUpTo = (seq: number) => {
    for (; next < pending.length && (pending[next]?.record.viewSeq ?? 0) <= seq; next++) {
      const { record, seq: recordSeq } = pending[next] as { record: DecisionRecord; seq: number };
      const { key, viewSeq, decidedAt, decision: recorded } = record;
      if (viewSeq < historyFrom - 1) {
        decisions.push({ key, viewSeq, decidedAt, recordSeq, recorded, verdict: 'unavailable' });
        continue;
      }
      const replayed = decider.decide(view, key, decidedAt) ?? null;
      const verdict = compareDecisions(recorded, replayed);
      decisions.push({ key, viewSeq, decidedAt, recordSeq, recorded, replayed, verdict });
    }
  };

  // Objects whose latest change is older than the history: the view's state before K8S's first.
  await readStream(js, STREAMS.latest, { until: historyFrom - 1 }, (m) => {
    if (m.seq < historyFrom) view.apply(m);
  });
  takeAgainUpTo(historyFrom - 1);
  let applied = 0;
  const total = Math.max(0, lastNeeded - historyFrom + 1);
  if (next < pending.length && total > 0) {
    await readStream(js, STREAMS.records, { from: historyFrom, until: lastNeeded }, (m) => {
      takeAgainUpTo(m.seq - 1);
      view.apply(m);
      applied++;
      if (applied % PROGRESS_EVERY === 0) opts.onProgress?.(applied, total);
    });
  }
  takeAgainUpTo(Number.MAX_SAFE_INTEGER);
  view.stop();
  return { concern: opts.concern, historyFrom, recordsApplied: applied, decisions, unreadable };
}

/** The concern's recorded decisions within the bounds, with where each is in DECISIONS. */
async function readDecisions(
  js: JetStreamClient,
  opts: ReplayOptions,
): Promise<{ readable: { record: DecisionRecord; seq: number }[]; unreadable: UnreadableDecision[] }> {
  const filter = `decision.${opts.concern}.${opts.key === undefined ? '>' : escapeToken(opts.key)}`;
  const readable: { record: DecisionRecord; seq: number }[] = [];
  const unreadable: UnreadableDecision[] = [];
  await readStream(js, STREAMS.decisions, { filter }, (m) => {
    const decoded = decodeDecisionRecord(m.data);
    if (!decoded.ok) {
      unreadable.push({ recordSeq: m.seq, subject: m.subject, reason: decoded.reason });
      return;
    }
    const record = decoded.value;
    if (opts.untilSeq !== undefined && record.viewSeq > opts.untilSeq) return;
    if (opts.until !== undefined && Date.parse(record.decidedAt) > opts.until.getTime()) return;
    readable.push({ record, seq: m.seq });
  });
  return { readable, unreadable };
}

/**
 * Every message of `stream` matching `filter`, in order, from `from` up to `until` (inclusive),
 * through an ordered consumer; resolves once it has handed over the last one there is.
 */
async function readStream(
  js: JetStreamClient,
  stream: string,
  range: { filter?: string; from?: number; until?: number },
  onMessage: (m: JsMsg) => void,
): Promise<void> {
  if (range.until !== undefined && range.until < (range.from ?? 1)) return;
  const consumer = await js.consumers.get(stream, {
    ...(range.filter && { filter_subjects: [range.filter] }),
    ...(range.from !== undefined
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: range.from }
      : { deliver_policy: DeliverPolicy.All }),
  });
  if ((await consumer.info()).num_pending === 0) return;
  const messages = await consumer.consume({ max_messages: 1_000 });
  try {
    for await (const m of messages) {
      if (range.until !== undefined && m.seq > range.until) break;
      onMessage(m);
      if (m.info.pending === 0 || m.seq === range.until) break;
    }
  } finally {
    await messages.close();
  }
}
