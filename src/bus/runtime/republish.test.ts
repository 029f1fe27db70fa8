import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { RECHECK_HEADERS } from './recheck.ts';
import { originOf, REPUBLISHED_FROM_HEADER, republishHeaders } from './republish.ts';

describe('republishing afresh', () => {
  it('keeps the first origin across republishes', () => {
    expect(originOf(undefined, 'FANOUT', 7)).toBe('FANOUT:7');
    const h = headers();
    h.set(REPUBLISHED_FROM_HEADER, 'FANOUT:3');
    expect(originOf(h, 'FANOUT', 7)).toBe('FANOUT:3');
  });

  it('drops the server headers, so the original message id cannot deduplicate the copy away', () => {
    const h = headers();
    h.set('Nats-Msg-Id', 'm-1');
    h.set('Nats-Expected-Last-Subject-Sequence', '4');
    h.set('Trace', 'abc');
    const out = republishHeaders(h, 'S:1');
    expect(out.has('Nats-Msg-Id')).toBe(false);
    expect(out.has('Nats-Expected-Last-Subject-Sequence')).toBe(false);
    expect(out.get('Trace')).toBe('abc');
    expect(out.get(REPUBLISHED_FROM_HEADER)).toBe('S:1');
  });

  it('starts the count of failed attempts over', () => {
    const h = headers();
    h.set(RECHECK_HEADERS.failedAttempts, '4');
    expect(republishHeaders(h, 'S:1').has(RECHECK_HEADERS.failedAttempts)).toBe(false);
  });
});
