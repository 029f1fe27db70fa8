import { describe, expect, it } from 'vitest';
import { decideRound, nextPeriodRound, resyncMsgId, roundName, roundSeconds } from './resync.ts';

const MINUTE = 60_000;
const PERIOD = 30 * MINUTE;

describe('period rounds', () => {
  it('fall on one grid: replicas started at different times wait for the same round, due at the same instant', () => {
    const early = nextPeriodRound(Date.UTC(2025, 0, 1, 10, 1), PERIOD);
    const late = nextPeriodRound(Date.UTC(2025, 0, 1, 10, 29, 59), PERIOD);
    expect(late).toEqual(early);
    expect(early.atMs).toBe(Date.UTC(2025, 0, 1, 10, 30));
  });

  it('a round that is due now is the next one only once its instant has passed', () => {
    const due = nextPeriodRound(Date.UTC(2025, 0, 1, 10, 1), PERIOD);
    expect(nextPeriodRound(due.atMs - 1, PERIOD)).toEqual(due);
    expect(nextPeriodRound(due.atMs, PERIOD)).toEqual({ index: due.index + 1, atMs: due.atMs + PERIOD });
  });

  it('refuses a period that would fire without end', () => {
    expect(() => nextPeriodRound(0, 0)).toThrow(/positive/);
  });
});

describe('message ids', () => {
  it('two replicas deriving the same period round publish the same ids, another round other ids', () => {
    const round = {
      kind: 'period',
      index: nextPeriodRound(Date.UTC(2025, 0, 1, 10, 1), PERIOD).index,
    } as const;
    const a = resyncMsgId('assign', round, 'crdconfig/widgets');
    const b = resyncMsgId('assign', { ...round }, 'crdconfig/widgets');
    expect(a).toBe(b);
    expect(resyncMsgId('assign', { kind: 'period', index: round.index + 1 }, 'crdconfig/widgets')).not.toBe(
      a,
    );
  });

  it('start rounds are named by the view sequence: replicas on the same view publish the same ids', () => {
    const at100 = resyncMsgId('handover', { kind: 'start', viewSeq: 100 }, 'widgets.example.com');
    expect(resyncMsgId('handover', { kind: 'start', viewSeq: 100 }, 'widgets.example.com')).toBe(at100);
    expect(resyncMsgId('handover', { kind: 'start', viewSeq: 101 }, 'widgets.example.com')).not.toBe(at100);
  });

  it('ids differ by concern, by key and between a start and a period round', () => {
    const ids = [
      resyncMsgId('instances', { kind: 'start', viewSeq: 7 }, 'a'),
      resyncMsgId('lease-aggregate', { kind: 'start', viewSeq: 7 }, 'a'),
      resyncMsgId('instances', { kind: 'start', viewSeq: 7 }, 'b'),
      resyncMsgId('instances', { kind: 'period', index: 7 }, 'a'),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids[0]).toBe('resync:instances:start-7:a');
    expect(roundName({ kind: 'period', index: 7 })).toBe('period-7');
  });
});

describe('pacing: rounds never pile up', () => {
  it('publishes when nothing of an earlier round waits', () => {
    expect(decideRound(0, false)).toEqual({ publish: true });
  });

  it('skips while an earlier round still waits for release, saying how much', () => {
    const d = decideRound(12_345, false);
    expect(d.publish).toBe(false);
    expect(d.publish === false && d.reason).toContain('12345 items');
  });

  it('a round resumed after a failed publish goes on, though its own first items wait', () => {
    expect(decideRound(500, true)).toEqual({ publish: true });
  });

  it('50,000 targets at 50/s take 1,000 s: longer than a 10-minute period, so the next round is skipped', () => {
    const seconds = roundSeconds(50_000, 50);
    expect(seconds).toBe(1_000);
    const start = Date.UTC(2025, 0, 1, 10, 0);
    const tenMinutes = 10 * MINUTE;
    const next = nextPeriodRound(start, tenMinutes);
    // At the next round's instant, what the first released at 50/s since `start` is still waiting.
    const stillWaiting = 50_000 - ((next.atMs - start) / 1000) * 50;
    expect(stillWaiting).toBeGreaterThan(0);
    expect(decideRound(stillWaiting, false).publish).toBe(false);
  });
});
