import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareResourceVersions, type RecordSummary, supersedes } from './supersedes.ts';

const upsert = (uid: string, resourceVersion: string): RecordSummary => ({
  op: 'upsert',
  uid,
  resourceVersion,
});
const tombstone = (uid: string, resourceVersion: string): RecordSummary => ({
  op: 'delete',
  uid,
  resourceVersion,
});

describe('supersedes: never store an older state of an object over a newer one', () => {
  it.each([
    ['nothing stored yet', upsert('a', '5'), undefined, true],
    ['a newer version of the same object', upsert('a', '7'), upsert('a', '5'), true],
    ['a lagging replica’s older version', upsert('a', '5'), upsert('a', '7'), false],
    ['the same version again', upsert('a', '5'), upsert('a', '5'), false],
    ['the deletion of the stored object', tombstone('a', '5'), upsert('a', '5'), true],
    ['a relist-gap tombstone carrying an older version', tombstone('a', '3'), upsert('a', '5'), true],
    ['an old upsert after the deletion (resurrection)', upsert('a', '5'), tombstone('a', '5'), false],
    ['an upsert past the dedup window after the deletion', upsert('a', '9'), tombstone('a', '5'), false],
    ['a recreated object (new uid) after the deletion', upsert('b', '12'), tombstone('a', '10'), true],
    ['the old incarnation’s tombstone after the recreation', tombstone('a', '10'), upsert('b', '12'), false],
    ['the old incarnation’s upsert after the recreation', upsert('a', '8'), upsert('b', '12'), false],
    ['versions compared as numbers, not text', upsert('a', '10'), upsert('a', '9'), true],
  ])('%s → %s', (_name, candidate, stored, expected) => {
    expect(supersedes(candidate, stored)).toBe(expected);
  });

  it('compares versions beyond 2^53 exactly', () => {
    expect(compareResourceVersions('9007199254740993', '9007199254740992')).toBe(1);
  });

  it('accepts a version it cannot order unless it is the same record', () => {
    expect(supersedes(upsert('a', 'x2'), upsert('a', 'x1'))).toBe(true);
    expect(supersedes(upsert('a', 'x1'), upsert('a', 'x1'))).toBe(false);
  });

  it('keeps the newest of any arrival order (a replica may lag by any amount)', () => {
    const record = fc.record({
      op: fc.constantFrom<'upsert' | 'delete'>('upsert', 'delete'),
      uid: fc.constant('a'),
      resourceVersion: fc.integer({ min: 1, max: 50 }).map(String),
    });
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 12 }), (arrivals) => {
        let stored: RecordSummary | undefined;
        for (const r of arrivals) if (supersedes(r, stored)) stored = r;
        const deletion = arrivals.find((r) => r.op === 'delete');
        if (deletion) {
          expect(stored?.op).toBe('delete');
        } else {
          const newest = Math.max(...arrivals.map((r) => Number(r.resourceVersion)));
          expect(stored?.resourceVersion).toBe(String(newest));
        }
      }),
    );
  });
});
