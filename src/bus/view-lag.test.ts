import { describe, expect, it } from 'vitest';
import { type ViewLagPolicy, ViewLagTracker } from './view-lag.ts';

const policy: ViewLagPolicy = { checkEveryMs: 1_000, maxLagMs: 3_000, restartAfterMs: 5_000 };

function tracker(): ViewLagTracker {
  return new ViewLagTracker(policy, 0);
}

describe('a view’s lag', () => {
  it('cannot tell before the bus answered once', () => {
    const t = tracker();
    expect(t.lag(10)).toMatchObject({ state: 'unknown', confirmedAgoMs: undefined });
    expect(t.lag(10).reason).toContain('not checked yet');
  });

  it('is current from the moment the question was asked, once the view holds the answer', () => {
    const t = tracker();
    t.progress([40, 7], 100);
    t.record({ answered: true, sentAtMs: 1_000, lastSeqs: [40, 7] });
    expect(t.lag(1_200)).toMatchObject({ state: 'current', behindBy: 0, confirmedAgoMs: 200 });
  });

  it('stays current under a steady stream: each answer is reached a moment after it was given', () => {
    const t = tracker();
    let applied = 100;
    for (let second = 1; second <= 20; second++) {
      const now = second * 1_000;
      // Ten records a second; at the question the view is always two behind.
      t.record({ answered: true, sentAtMs: now, lastSeqs: [applied + 2] });
      applied += 10;
      t.progress([applied], now + 50);
      expect(t.lag(now + 60).state, `second ${second}`).toBe('current');
    }
  });

  it('falls behind when it stops applying, and says by how much', () => {
    const t = tracker();
    t.progress([10], 0);
    t.record({ answered: true, sentAtMs: 1_000, lastSeqs: [10] });
    for (let now = 2_000; now <= 6_000; now += 1_000)
      t.record({ answered: true, sentAtMs: now, lastSeqs: [25] });
    const lag = t.lag(6_100);
    expect(lag).toMatchObject({ state: 'behind', behindBy: 15, confirmedAgoMs: 5_100 });
    expect(lag.reason).toContain('up to 15 records behind the bus');
    t.progress([25], 6_200);
    expect(t.lag(6_300)).toMatchObject({ state: 'current', confirmedAgoMs: 300 });
  });

  it('cannot tell when the bus stops answering, once the last confirmation is older than the bound', () => {
    const t = tracker();
    t.record({ answered: true, sentAtMs: 1_000, lastSeqs: [0] });
    t.record({ answered: false, sentAtMs: 2_000, error: 'no answer within 1000 ms' });
    expect(t.lag(3_900).state, 'still within maxLagMs of the confirmation').toBe('current');
    const lag = t.lag(4_100);
    expect(lag.state).toBe('unknown');
    expect(lag.reason).toContain('the bus did not answer: no answer within 1000 ms');
    expect(lag.reason).toContain('last confirmed current 3 s ago');
  });

  it('keeps the newest check: a late answer to an older question does not hide a failure since', () => {
    const t = tracker();
    t.record({ answered: false, sentAtMs: 5_000, error: 'disconnected' });
    t.record({ answered: true, sentAtMs: 4_000, lastSeqs: [99] });
    expect(t.lag(5_100).state).toBe('unknown');
  });

  it('an empty stream (last sequence 0) is reached at once', () => {
    const t = tracker();
    t.record({ answered: true, sentAtMs: 500, lastSeqs: [0, 0] });
    expect(t.lag(600).state).toBe('current');
  });

  it('asks for a restart only when the bus has more and the view applies nothing for restartAfterMs', () => {
    const t = tracker();
    t.progress([3], 0);
    for (let now = 1_000; now <= 12_000; now += 1_000) {
      t.record({ answered: true, sentAtMs: now, lastSeqs: [9] });
      if (now < 5_000) expect(t.shouldRestart(now), `at ${now}`).toBe(false);
    }
    expect(t.shouldRestart(12_000)).toBe(true);
    t.restarted(12_000);
    expect(t.shouldRestart(13_000), 'not twice within the wait').toBe(false);
    expect(t.shouldRestart(17_000)).toBe(true);
    t.progress([4], 17_500);
    expect(t.shouldRestart(18_000), 'it applies again').toBe(false);
  });

  it('never asks for a restart when the bus does not answer: the client reconnects on its own', () => {
    const t = tracker();
    for (let now = 1_000; now <= 30_000; now += 1_000)
      t.record({ answered: false, sentAtMs: now, error: 'disconnected' });
    expect(t.shouldRestart(30_000)).toBe(false);
  });

  it('keeps a bounded number of open questions and settles the newest it reaches', () => {
    const t = tracker();
    for (let i = 1; i <= 50; i++) t.record({ answered: true, sentAtMs: i * 100, lastSeqs: [i] });
    t.progress([50], 5_050);
    expect(t.lag(5_100)).toMatchObject({ state: 'current', confirmedAgoMs: 100 });
  });
});
