import { describe, expect, it } from 'vitest';
import type { ReplayReport } from '../replay/replay.ts';
import { formatReplay, parseReplayArgs, redriveKeys } from './replay.ts';

const report: ReplayReport = {
  concern: 'assign',
  historyFrom: 5,
  recordsApplied: 40,
  unreadable: [{ recordSeq: 9, subject: 'decision.assign.x', reason: 'not JSON' }],
  decisions: [
    { key: 'crdconfig/a', viewSeq: 3, decidedAt: 't0', recordSeq: 1, recorded: {}, verdict: 'unavailable' },
    {
      key: 'crdconfig/b',
      viewSeq: 9,
      decidedAt: 't1',
      recordSeq: 2,
      recorded: { move: { to: 'x' } },
      replayed: { move: { to: 'x' } },
      verdict: 'same',
    },
    {
      key: 'crdconfig/b',
      viewSeq: 12,
      decidedAt: 't2',
      recordSeq: 3,
      recorded: { move: { to: 'x' } },
      replayed: { move: { to: 'y' } },
      verdict: 'different',
    },
  ],
};

describe('switchyard replay arguments', () => {
  it('reads the bounds, the key, the concern and the switches', () => {
    expect(parseReplayArgs(['--key=crdconfig/a', '--until-seq=40', '--redrive', '-o', 'json'])).toEqual({
      concern: 'assign',
      key: 'crdconfig/a',
      untilSeq: 40,
      redrive: true,
      allLines: false,
      output: 'json',
    });
    expect(parseReplayArgs(['--until=2026-12-01T10:00:00Z']).until?.toISOString()).toBe(
      '2026-12-01T10:00:00.000Z',
    );
  });

  it('refuses what it cannot read, and two bounds at once', () => {
    expect(() => parseReplayArgs(['--until-seq=x'])).toThrow('replay: --until-seq=x is not a K8S sequence');
    expect(() => parseReplayArgs(['--until=yesterday'])).toThrow(
      'replay: --until=yesterday is not an RFC 3339 time',
    );
    expect(() => parseReplayArgs(['--frobnicate'])).toThrow('replay: unknown argument --frobnicate');
    expect(() => parseReplayArgs(['--key='])).toThrow('replay: --key needs a value');
    expect(() => parseReplayArgs(['--until-seq=3', '--until=2026-12-01T10:00:00Z'])).toThrow(/not both/);
  });
});

describe('switchyard replay output', () => {
  it('shows what differs and what cannot be replayed, then counts', () => {
    const text = formatReplay(report, false);
    expect(text).not.toContain('view 9 ');
    expect(text).toContain(
      'different   crdconfig/b  view 12  t2\n  recorded: {"move":{"to":"x"}}\n  replayed: {"move":{"to":"y"}}',
    );
    expect(text).toContain(
      'unavailable crdconfig/a  view 3  t0\n  decided on a view older than the history kept',
    );
    expect(text).toContain(
      '3 assign decisions taken again from 40 records (history from K8S sequence 5): 1 the same, 1 different, 1 unavailable',
    );
    expect(formatReplay(report, true)).toContain('same        crdconfig/b  view 9  t1');
  });

  it('re-drives each replayed key once, never one it could not replay', () => {
    expect(redriveKeys(report)).toEqual(['crdconfig/b']);
  });
});
