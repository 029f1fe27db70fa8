import { describe, expect, it } from 'vitest';
import { extendedLease, leaseFrom, leaseHeld, leaseTimings, nextBeatDelayMs, pullExpiryMs } from './lease.ts';

describe('handler lease arithmetic', () => {
  it('keeps a margin of max(1 s, ack_wait/5) and heartbeats three times per ack_wait', () => {
    expect(leaseTimings(30_000)).toEqual({ ackWaitMs: 30_000, marginMs: 6_000, heartbeatMs: 10_000 });
    expect(leaseTimings(3_000)).toEqual({ ackWaitMs: 3_000, marginMs: 1_000, heartbeatMs: 1_000 });
  });

  it('refuses an ack_wait too short to hold a lease with a pull and a heartbeat inside it', () => {
    expect(() => leaseTimings(2_000)).toThrow(/at least 3000/);
  });

  it('lets a pull wait at most half a lease, so a message never arrives with its lease nearly gone', () => {
    expect(pullExpiryMs(10_000, leaseTimings(30_000))).toBe(10_000);
    expect(pullExpiryMs(10_000, leaseTimings(5_000))).toBe(2_000);
    expect(pullExpiryMs(10_000, leaseTimings(3_000))).toBe(1_000);
  });

  it('confirms progress every heartbeat, or sooner when half of the remaining lease is gone', () => {
    const t = leaseTimings(30_000);
    expect(nextBeatDelayMs(24_000, 0, t)).toBe(10_000);
    // A message that arrived late in its pull: 8 s of lease left, beat after 4 s.
    expect(nextBeatDelayMs(24_000, 16_000, t)).toBe(4_000);
    expect(nextBeatDelayMs(24_000, 30_000, t)).toBe(0);
  });

  it('ends the lease before the server can redeliver: delivery + ack_wait − margin', () => {
    const t = leaseTimings(30_000);
    expect(leaseFrom(1_000, t)).toBe(25_000);
    expect(leaseHeld(25_000, 24_999)).toBe(true);
    expect(leaseHeld(25_000, 25_000)).toBe(false);
  });

  it('moves the lease to send time + ack_wait − margin when progress is confirmed in time', () => {
    const t = leaseTimings(30_000);
    // Sent at 10 s, confirmed at 10.002 s, lease was until 24 s.
    expect(extendedLease(24_000, 10_000, 10_002, t)).toBe(34_000);
  });

  it('counts from the SEND time, not the reply, so a slow reply cannot stretch the lease past the server timer', () => {
    const t = leaseTimings(30_000);
    expect(extendedLease(24_000, 10_000, 23_000, t)).toBe(34_000);
  });

  it('extends nothing when the confirmation arrives after the lease lapsed: it may be another attempt’s', () => {
    const t = leaseTimings(30_000);
    // An event-loop stall: the reply is read at 40 s, after the lease ended at 24 s.
    expect(extendedLease(24_000, 10_000, 40_000, t)).toBeUndefined();
  });

  it('never shortens a lease with a confirmation of an older request', () => {
    const t = leaseTimings(30_000);
    expect(extendedLease(34_000, 5_000, 20_000, t)).toBe(34_000);
  });
});
