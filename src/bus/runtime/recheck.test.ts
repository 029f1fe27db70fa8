import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { failedAttemptsOf, RECHECK_HEADERS, recheckDueOf, recheckHeaders } from './recheck.ts';

const NOW = Date.UTC(2030, 0, 1);

describe('recheckHeaders', () => {
  it("keeps the trigger's own headers, drops the server's, and says when and why", () => {
    const original = headers();
    original.set('Nats-Msg-Id', 'once');
    original.set('Nats-Scheduler', 'recheck.x.0.k');
    original.set('Switchyard-Origin-Seq', '7');
    const h = recheckHeaders(original, Date.UTC(2030, 0, 1), 'lease\nexpires');
    expect(h.get('Nats-Msg-Id')).toBe('');
    expect(h.get('Nats-Scheduler')).toBe('');
    expect(h.get('Switchyard-Origin-Seq')).toBe('7');
    expect(h.get(RECHECK_HEADERS.due)).toBe('2030-01-01T00:00:00.000Z');
    expect(h.get(RECHECK_HEADERS.reason)).toBe('lease expires');
    expect(recheckDueOf(h)).toBe(Date.UTC(2030, 0, 1));
  });

  it('a trigger that is not a fired re-check has no due time', () => {
    expect(recheckDueOf(undefined)).toBeUndefined();
    expect(recheckDueOf(headers())).toBeUndefined();
  });

  it('carries the count of failed attempts on a retry, and drops it when a decision was returned', () => {
    const retry = recheckHeaders(headers(), NOW, 'apiserver 503', 2);
    expect(failedAttemptsOf(retry)).toBe(2);
    expect(failedAttemptsOf(recheckHeaders(retry, NOW, 'again', 3))).toBe(3);
    expect(failedAttemptsOf(recheckHeaders(retry, NOW, 'lease expires'))).toBe(0);
    expect(recheckHeaders(retry, NOW, 'lease expires').get(RECHECK_HEADERS.failedAttempts)).toBe('');
  });

  it('reads a missing or malformed count as none', () => {
    for (const value of ['', '-1', '1e9', 'two', '9999999', '2.5']) {
      const h = headers();
      h.set(RECHECK_HEADERS.failedAttempts, value);
      expect(failedAttemptsOf(h)).toBe(0);
    }
    expect(failedAttemptsOf(undefined)).toBe(0);
  });
});
