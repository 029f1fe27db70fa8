import type { JsMsg } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AttemptLease } from './attempt.ts';
import { leaseTimings } from './lease.ts';

const timings = leaseTimings(3_000); // margin 1 s, heartbeat 1 s: a lease of 2 s from the pull
const msg = { reply: '$JS.ACK.S.c.1.1.1.0.0' } as unknown as JsMsg;

/** A connection whose progress requests are answered after `replyDelayMs` (or never). */
function connection(replyDelayMs: () => number | undefined) {
  const sent: number[] = [];
  const nc = {
    request: () => {
      sent.push(Date.now());
      const delay = replyDelayMs();
      return new Promise((resolve) => {
        if (delay !== undefined) setTimeout(resolve, delay);
      });
    },
  } as unknown as NatsConnection;
  return { nc, sent };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a handler attempt’s lease', () => {
  it('is kept by progress the server confirms in time', async () => {
    const { nc, sent } = connection(() => 5);
    const lease = new AttemptLease(nc, msg, timings, Date.now, 0);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(lease.held()).toBe(true);
    expect(sent.length, 'about one progress request per heartbeat').toBeGreaterThanOrEqual(9);
    lease.end();
  });

  it('lapses when progress goes unanswered: the signal aborts and nothing more is sent', async () => {
    const { nc, sent } = connection(() => undefined);
    const lease = new AttemptLease(nc, msg, timings, Date.now, 0);
    await vi.advanceTimersByTimeAsync(1_999);
    expect(lease.held()).toBe(true);
    await vi.advanceTimersByTimeAsync(1);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.held()).toBe(false);
    await expect(lease.abandoned).resolves.toMatch(/lease lapsed/);
    const before = sent.length;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(sent.length, 'an abandoned attempt sends no more progress').toBe(before);
  });

  it('does not take a confirmation that arrives after the lease lapsed (it may be another attempt’s)', async () => {
    // The first request (at 1 s) is answered at 2.5 s, after the lease ended at 2 s.
    const { nc } = connection(() => 1_500);
    const lease = new AttemptLease(nc, msg, timings, Date.now, 0);
    await vi.advanceTimersByTimeAsync(2_600);
    expect(lease.held()).toBe(false);
    expect(lease.abandonedBecause).toMatch(/lease lapsed/);
  });

  it('cutting a handler short aborts its signal but keeps the lease for the grace', async () => {
    const { nc } = connection(() => 5);
    const lease = new AttemptLease(nc, msg, timings, Date.now, 0);
    lease.cutShort('deadline');
    expect(lease.signal.aborted).toBe(true);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(lease.held()).toBe(true);
    lease.end();
  });
});
