import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  fnv1a32,
  keyOfPartitionedSubject,
  partitionedSubject,
  partitionFilter,
  partitionOf,
} from './partition.ts';

describe('fnv1a32', () => {
  it('matches the published FNV-1a-32 test vectors', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });
});

describe('partitionOf', () => {
  // Recorded from nats-server 2.9.10, and again from 2.15.2 (identical), with the mapping
  // "ctl.*": "ctl.{{partition(16,1)}}.{{wildcard(1)}}" (the server-chosen partition of `ctl.<key>`).
  // If these drift, publishers and a server-side mapping would disagree on which consumer owns a key.
  const server16: Array<[string, number]> = [
    ['default/web', 11],
    ['kube-system/coredns', 7],
    ['a', 12],
    ['b', 5],
    ['switchyard-config-7', 10],
    ['x_y-z', 0],
    ['0', 15],
    ['foos~2eexample~2ecom', 7],
    ['ünïcode', 11],
  ];
  it.each(server16)('puts %s in the partition the server mapping chooses (%i of 16)', (key, expected) => {
    expect(partitionOf(key, 16)).toBe(expected);
  });

  it('concatenates tokens without a separator, as the server does', () => {
    expect(partitionOf(['kube-system', 'coredns'], 8)).toBe(partitionOf('kube-systemcoredns', 8));
  });

  it('is always within [0, n)', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 1024 }), (key, n) => {
        const p = partitionOf(key, n);
        return Number.isInteger(p) && p >= 0 && p < n;
      }),
    );
  });

  it('rejects a non-positive partition count', () => {
    expect(() => partitionOf('a', 0)).toThrow(/positive integer/);
  });
});

describe('partitioned subjects', () => {
  it('builds <prefix>.<partition>.<key> and reads the key back', () => {
    const s = partitionedSubject('work.handover', ['ns', 'name'], 16);
    expect(s).toBe(`work.handover.${partitionOf(['ns', 'name'], 16)}.ns.name`);
    expect(keyOfPartitionedSubject('work.handover', s)).toBe('ns.name');
    expect(partitionFilter('work.handover', 3)).toBe('work.handover.3.>');
  });

  it('refuses tokens that would change the subject shape', () => {
    expect(() => partitionedSubject('w', ['foos.example.com'], 4)).toThrow(/not a valid subject token/);
    expect(() => partitionedSubject('w', ['*'], 4)).toThrow();
    expect(() => partitionedSubject('w', [], 4)).toThrow();
  });
});
