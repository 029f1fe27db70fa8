import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { aggregate, isLive, leaseState, nextLeaseTransitionMs, type ReplicaReport } from './aggregate.ts';
import type { DecodedServedSet } from './served-set-codec.ts';

const NOW = 1_700_000_000_000;
const set = (served: string[], unsettled: string[] = []): DecodedServedSet => ({
  kind: 'set',
  served: new Set(served),
  unsettled: new Set(unsettled),
});
const lease = (replica: string, report: DecodedServedSet, ageSeconds = 5): ReplicaReport => ({
  replica,
  renewTimeMs: NOW - ageSeconds * 1000,
  leaseDurationSeconds: 90,
  report,
});

describe('instance aggregate', () => {
  it('is the intersection of the live replicas’ sets', () => {
    const targetArb = fc.constantFrom('a.x.io', 'b.x.io', 'c.x.io', 'd.x.io', 'e.x.io');
    fc.assert(
      fc.property(fc.array(fc.uniqueArray(targetArb), { maxLength: 5 }), (sets) => {
        const result = aggregate(
          sets.map((s, i) => lease(`pod-${i}`, set(s))),
          sets.length,
          NOW,
        );
        const expected =
          sets.length === 0 ? [] : (sets[0] ?? []).filter((t) => sets.every((s) => s.includes(t)));
        expect(result).toMatchObject({
          kind: 'known',
          servedTargets: [...expected].sort(),
          reportingReplicas: sets.length,
        });
      }),
    );
  });

  it('ignores stale Leases: a wedged replica neither vetoes nor vouches', () => {
    const result = aggregate([lease('fresh', set(['a.x.io'])), lease('wedged', set([]), 91)], 2, NOW);
    expect(result).toMatchObject({
      kind: 'known',
      servedTargets: ['a.x.io'],
      reportingReplicas: 1,
      staleReplicas: 1,
    });
  });

  it('treats a Lease as live until renewTime + leaseDurationSeconds, and a never-renewed one as stale', () => {
    expect(isLive({ renewTimeMs: NOW - 89_999, leaseDurationSeconds: 90 }, NOW)).toBe(true);
    expect(isLive({ renewTimeMs: NOW - 90_000, leaseDurationSeconds: 90 }, NOW)).toBe(false);
    expect(isLive({ renewTimeMs: undefined, leaseDurationSeconds: 90 }, NOW)).toBe(false);
  });

  it('bounds clock skew: a renewTime more than one duration ahead is undecidable, not live for ever', () => {
    const ahead = (seconds: number) => ({ renewTimeMs: NOW + seconds * 1000, leaseDurationSeconds: 90 });
    expect(leaseState(ahead(90), NOW)).toBe('live');
    expect(leaseState(ahead(91), NOW)).toBe('ahead');
    expect(leaseState(ahead(10 * 365 * 86_400), NOW)).toBe('ahead');
    // Live at most until renewTime + duration, so at most two durations past the reader's now.
    expect(nextLeaseTransitionMs(ahead(90), NOW)).toBe(NOW + 180_000);
    const result = aggregate(
      [lease('ok', set(['a.x.io'])), lease('skewed', set(['a.x.io']), -3_600)],
      2,
      NOW,
    );
    expect(result).toMatchObject({
      kind: 'unknown',
      unreadable: [{ replica: 'skewed', why: 'renewTimeAhead' }],
    });
  });

  it('is unknown, not partial, when any live report is truncated or undecodable', () => {
    const result = aggregate(
      [
        lease('ok', set(['a.x.io'])),
        lease('big', { kind: 'truncated', servedCount: 60_000 }),
        lease('bad', { kind: 'undecodable', reason: 'unsupported format version "v9"' }),
        lease('behind', { kind: 'viewBehind', servedCount: 3 }),
      ],
      4,
      NOW,
    );
    expect(result).toMatchObject({ kind: 'unknown', reportingReplicas: 4 });
    expect(result.kind === 'unknown' && result.unreadable.map((u) => u.why)).toEqual([
      'truncated',
      'undecodable',
      'viewBehind',
    ]);
  });

  it('does not let a stale unreadable report block', () => {
    const result = aggregate(
      [lease('ok', set(['a.x.io'])), lease('old', { kind: 'truncated', servedCount: 1 }, 300)],
      1,
      NOW,
    );
    expect(result.kind).toBe('known');
  });

  it('keeps targets some replica cannot settle out of the served set, and lists them as unsettled', () => {
    const result = aggregate(
      [lease('p1', set(['a.x.io', 'b.x.io'])), lease('p2', set(['a.x.io'], ['b.x.io']))],
      2,
      NOW,
    );
    expect(result).toMatchObject({ servedTargets: ['a.x.io'], unsettledTargets: ['b.x.io'] });
  });

  it('reports zero replicas when nothing is published', () => {
    expect(aggregate([], 3, NOW)).toMatchObject({
      kind: 'known',
      servedTargets: [],
      reportingReplicas: 0,
      readyReplicas: 3,
    });
  });
});
