import { describe, expect, it } from 'vitest';
import type { ConfigStatus } from '../api/conversion-config.ts';
import { decideHandover, type HandoverInput } from './handover.ts';
import { decideHandoverStatus } from './handover-status.ts';

const T = 'gadgets.example.com';
const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const NOW_ISO = new Date(NOW).toISOString();
const EARLIER = '2026-03-01T11:00:00.000Z';

const ready = (destination: string, reason = 'HandoverReady') => ({
  type: 'HandoverReady',
  status: 'True' as const,
  reason,
  message: `moving ${T} from Service x-webhook-server to ${destination}: all 2 ready Pods of ${destination} serve it`,
  lastTransitionTime: EARLIER,
});

/** One look of the handler: the gate over the stored status, then the status it would write. */
function look(current: ConfigStatus | undefined, overrides: Partial<HandoverInput> = {}, generation = 1) {
  const input: HandoverInput = {
    target: T,
    destination: 'b',
    currentServiceName: 'b-webhook-server',
    assigned: 'b',
    replicas: { readyPods: ['b-1'], leases: [] },
    nowMs: NOW,
    previous: current?.conditions?.find((c) => c.type === 'HandoverReady') as HandoverInput['previous'],
    previousDestination: current?.handoverDestination,
    ...overrides,
  };
  const decision = decideHandover(input);
  if (decision.action === 'hold') throw new Error(`held: ${decision.message}`);
  return decideHandoverStatus({
    current,
    decision,
    destination: input.destination,
    generation,
    nowIso: NOW_ISO,
  });
}

describe('handover status', () => {
  it('records the destination its verdict is about', () => {
    const first = look(undefined, { currentServiceName: undefined });
    expect(first.changed).toBe(true);
    expect(first.status).toMatchObject({
      conditions: [{ reason: 'FirstApply', status: 'True' }],
      handoverDestination: 'b',
    });
    expect(first.status.handover).toBeUndefined();
  });

  it('after a repoint whose status write was lost: replaces the True verdict about the earlier destination', () => {
    // The status says the move to a was verified; the target already names b's Service (the
    // process stopped after the patch, before its verdict landed).
    const stale: ConfigStatus = { conditions: [ready('a')], handoverDestination: 'a' };
    const after = look(stale);
    expect(after.changed).toBe(true);
    expect(after.status.handoverDestination).toBe('b');
    expect(after.status.conditions[0]).toMatchObject({ status: 'True', reason: 'NoMove' });
    expect(after.status.conditions[0].message).toContain('already served by b');
    expect(after.status.conditions[0].message).not.toContain(' a:');
  });

  it('replaces a True verdict stored before the destination was recorded', () => {
    const legacy: ConfigStatus = { conditions: [ready('a')] };
    const after = look(legacy);
    expect(after.changed).toBe(true);
    expect(after.status).toMatchObject({ conditions: [{ reason: 'NoMove' }], handoverDestination: 'b' });
  });

  it('replaces the wait that preceded a repoint whose verdict was lost', () => {
    const waiting: ConfigStatus = {
      conditions: [{ ...ready('b', 'HandoverPending'), status: 'False' }],
      handoverDestination: 'b',
      handover: { destination: 'b', waitingSince: EARLIER },
    };
    const after = look(waiting);
    expect(after.changed).toBe(true);
    expect(after.status.conditions[0]).toMatchObject({ status: 'True', reason: 'NoMove' });
    expect(after.status.handover, 'nothing waits any more: the apply removes it').toBeUndefined();
  });

  it('keeps the verdict about this destination, and writes nothing', () => {
    const done: ConfigStatus = {
      conditions: [{ ...ready('b'), observedGeneration: 1 }],
      handoverDestination: 'b',
    };
    const after = look(done);
    expect(after.changed).toBe(false);
    expect(after.status.conditions[0]).toEqual(done.conditions?.[0]);
  });

  it('states the verdict again for a new generation of the config, so `kubectl wait` does not take the old one', () => {
    const done: ConfigStatus = {
      conditions: [{ ...ready('b'), observedGeneration: 1 }],
      handoverDestination: 'b',
    };
    const after = look(done, {}, 2);
    expect(after.changed).toBe(true);
    expect(after.status.conditions[0]).toEqual({ ...ready('b'), observedGeneration: 2 });
  });

  it('a wait records its destination too, so a later look knows what the False verdict was about', () => {
    const waiting = look(undefined, {
      currentServiceName: 'a-webhook-server',
      replicas: { readyPods: [], leases: [] },
    });
    expect(waiting.status).toMatchObject({
      conditions: [{ status: 'False', reason: 'DestinationNotReady' }],
      handoverDestination: 'b',
      handover: { destination: 'b' },
    });
  });
});
