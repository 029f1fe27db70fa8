// Whether every work item reached a terminal outcome, read off the streams themselves: WORK and
// FANOUT are work queues, so a message is gone once a handler acked it (done, or re-checked:
// a waiting re-check is a schedule on `recheck.>`, not work), and one that could not be
// processed went to DLQ. So, once the system is quiet, no `work.>` message and no fan-out item
// is left, and DLQ holds no message it did not hold before the fault.
import type { JetStreamManager } from '@nats-io/jetstream';
import { type DeadLetterEntry, parseDeadLetter } from '../../../src/bus/dead-letters.ts';
import { STREAMS } from '../../../src/bus/topology.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';

export interface WorkLeft {
  /** Messages on `work.>` in WORK: queued or in flight. */
  work: number;
  /** Their subjects, for the message when they do not drain. */
  workSubjects: Record<string, number>;
  fanout: number;
}

export async function workLeft(jsm: JetStreamManager): Promise<WorkLeft> {
  const work = await jsm.streams.info(STREAMS.work, { subjects_filter: 'work.>' });
  const workSubjects = work.state.subjects ?? {};
  const fanout = await jsm.streams.info(STREAMS.fanout);
  return {
    work: Object.values(workSubjects).reduce((a, b) => a + b, 0),
    workSubjects,
    fanout: fanout.state.messages,
  };
}

/**
 * Waits until no work is left, seen twice in a row half a second apart (a re-check firing in
 * between is work that is done a moment later, not work that is stuck); what was left at the
 * end if it never drained within `timeoutMs`.
 */
export async function waitWorkDrained(
  jsm: JetStreamManager,
  timeoutMs: number,
): Promise<{ drained: true } | { drained: false; left: WorkLeft }> {
  let last: WorkLeft | undefined;
  let emptyBefore = false;
  try {
    await waitFor(
      'WORK and FANOUT to drain',
      async () => {
        last = await workLeft(jsm).catch(() => undefined);
        const empty = last !== undefined && last.work === 0 && last.fanout === 0;
        const twice = empty && emptyBefore;
        emptyBefore = empty;
        return twice ? true : undefined;
      },
      { timeoutMs, intervalMs: 500 },
    );
    return { drained: true };
  } catch {
    return { drained: false, left: last ?? { work: -1, workSubjects: {}, fanout: -1 } };
  }
}

/** DLQ's last sequence: the dead letters stored after it are new. */
export async function deadLetterMark(jsm: JetStreamManager): Promise<number> {
  return (await jsm.streams.info(STREAMS.deadLetters)).state.last_seq;
}

/** The dead letters stored after `mark`, with their reasons. */
export async function deadLettersSince(jsm: JetStreamManager, mark: number): Promise<DeadLetterEntry[]> {
  const last = await deadLetterMark(jsm);
  const out: DeadLetterEntry[] = [];
  for (let seq = mark + 1; seq <= last; seq++) {
    const m = await jsm.streams.getMessage(STREAMS.deadLetters, { seq }).catch(() => undefined);
    if (m === undefined || m === null) continue;
    out.push(
      parseDeadLetter({ seq: m.seq, subject: m.subject, time: m.time, headers: m.header, data: m.data }),
    );
  }
  return out;
}

/** One line per dead letter: where it came from and why. */
export function describeDeadLetter(d: DeadLetterEntry): string {
  const r = d.record;
  return r
    ? `DLQ#${d.seq} ${r.originalSubject} (${r.kind}, ${r.deliveryCount} deliveries): ${r.reason.slice(0, 300)}`
    : `DLQ#${d.seq} ${d.subject}: ${d.malformed ?? 'not a dead-letter record'}`;
}
