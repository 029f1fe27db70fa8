import { headers } from '@nats-io/transport-node';
import { describe, expect, it } from 'vitest';
import { RECHECK_HEADERS, recheckDueOf, recheckHeaders } from './recheck.ts';

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
});
