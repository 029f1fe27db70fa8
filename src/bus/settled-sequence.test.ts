import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SettledSequence } from './settled-sequence.ts';

/**
 * A stream that keeps each subject's last message, written to and read at the same time: the
 * reader takes the next message still stored after the last one it took, as an ordered
 * consumer does, and is told how many are stored behind it.
 */
class CompactingStream {
  private readonly stored = new Map<number, string>();
  private readonly lastOf = new Map<string, number>();
  readonly published: { seq: number; subject: string }[] = [];
  private seq = 0;

  publish(subject: string): void {
    this.seq++;
    const replaced = this.lastOf.get(subject);
    if (replaced !== undefined) this.stored.delete(replaced);
    this.stored.set(this.seq, subject);
    this.lastOf.set(subject, this.seq);
    this.published.push({ seq: this.seq, subject });
  }

  next(after: number): { seq: number; subject: string; pending: number } | undefined {
    const behind = [...this.stored.keys()].filter((s) => s > after).sort((a, b) => a - b);
    const [seq] = behind;
    if (seq === undefined) return undefined;
    return { seq, subject: this.stored.get(seq) as string, pending: behind.length - 1 };
  }
}

/** Per subject, the last sequence of it published at or below `seq`. */
function stateAt(published: readonly { seq: number; subject: string }[], seq: number): Map<string, number> {
  const state = new Map<string, number>();
  for (const p of published) if (p.seq <= seq) state.set(p.subject, p.seq);
  return state;
}

/** Writes to four subjects and reads, interleaved. */
const STEPS = fc.array(
  fc.oneof(
    fc.constantFrom('a', 'b', 'c', 'd').map((subject) => ({ subject })),
    fc.constant('read' as const),
  ),
  { maxLength: 120 },
);

/** Runs the steps against the stream (`read` takes the next message), then reads until drained. */
function interleave(
  steps: readonly ({ subject: string } | 'read')[],
  stream: CompactingStream,
  read: () => boolean,
): void {
  for (const step of steps) {
    if (step === 'read') read();
    else stream.publish(step.subject);
  }
  while (read());
}

/** A reader that checks, at each message it takes, that it holds the state at what it vouches for. */
class CheckedReader {
  readonly settled = new SettledSequence();
  private readonly held = new Map<string, number>();
  private readonly stream: CompactingStream;
  handed = 0;

  constructor(stream: CompactingStream) {
    this.stream = stream;
  }

  take(seq: number, subject: string, vouched: number): number {
    this.handed = seq;
    this.held.set(subject, seq);
    for (const [s, at] of stateAt(this.stream.published, vouched))
      expect(this.held.get(s) ?? 0, `${s} at settled ${vouched}`).toBeGreaterThanOrEqual(at);
    return vouched;
  }
}

describe('the sequence a reader of a compacting stream vouches for', () => {
  it('moves with every message while nothing was skipped', () => {
    const s = new SettledSequence();
    expect([s.observe(1, 2), s.observe(2, 1), s.observe(3, 0)]).toEqual([1, 2, 3]);
  });

  it('stops before a skipped record until every message pending behind the gap is taken', () => {
    const s = new SettledSequence();
    s.observe(1, 4);
    // 2 was replaced (by 5, say): 3 arrives with 2 messages behind it.
    expect(s.observe(3, 2)).toBe(1);
    expect(s.observe(4, 1)).toBe(1);
    expect(s.observe(5, 3)).toBe(5);
  });

  it('moves on at the end of the stream, even when what was pending behind a gap is gone since', () => {
    const s = new SettledSequence();
    s.observe(1, 0);
    expect(s.observe(4, 5)).toBe(1);
    expect(s.observe(9, 0)).toBe(9);
  });

  it('ignores a message handed twice (a consumer recreated before its last one was taken)', () => {
    const s = new SettledSequence();
    s.observe(1, 1);
    s.observe(2, 0);
    expect(s.observe(2, 0)).toBe(2);
    expect(s.observe(1, 1)).toBe(2);
  });

  it('never vouches for a sequence whose state the reader does not hold, however writes and reads interleave', () => {
    fc.assert(
      fc.property(STEPS, (steps) => {
        const stream = new CompactingStream();
        const reader = new CheckedReader(stream);
        interleave(steps, stream, () => {
          const m = stream.next(reader.handed);
          if (!m) return false;
          reader.take(m.seq, m.subject, reader.settled.observe(m.seq, m.pending));
          return true;
        });
        // Drained: it vouches for everything it took.
        expect(reader.settled.value).toBe(reader.handed);
      }),
      { numRuns: Number(process.env.SWITCHYARD_FUZZ_RUNS ?? 2_000) },
    );
  });

  it('vouches for every message at once when each gap is filled from the history', () => {
    const s = new SettledSequence();
    s.observe(1, 0);
    // 2 and 3 were replaced; read from the history before 4.
    expect(s.filled(2)).toBe(2);
    expect(s.filled(3)).toBe(3);
    expect(s.observe(4, 7)).toBe(4);
  });

  it('a filled gap does not close a window an unfilled one opened', () => {
    const s = new SettledSequence();
    s.observe(1, 4);
    expect(s.observe(3, 2)).toBe(1);
    expect(s.filled(4)).toBe(1);
    expect(s.observe(5, 0)).toBe(5);
  });

  it('a reader that fills every gap from the history holds the state at each message it is handed, behind or not', () => {
    fc.assert(
      fc.property(STEPS, (steps) => {
        const stream = new CompactingStream();
        const reader = new CheckedReader(stream);
        let caughtUp = false;
        interleave(steps, stream, () => {
          const m = stream.next(reader.handed);
          if (!m) return false;
          // Once caught up, a gap is read from the history (every record ever published).
          if (caughtUp)
            for (const p of stream.published.filter((p) => p.seq > reader.handed && p.seq < m.seq))
              expect(reader.take(p.seq, p.subject, reader.settled.filled(p.seq))).toBe(p.seq);
          const vouched = reader.take(m.seq, m.subject, reader.settled.observe(m.seq, m.pending));
          if (caughtUp) expect(vouched).toBe(m.seq);
          if (m.pending === 0) caughtUp = true;
          return true;
        });
        expect(reader.settled.value).toBe(reader.handed);
      }),
      { numRuns: Number(process.env.SWITCHYARD_FUZZ_RUNS ?? 2_000) },
    );
  });
});
