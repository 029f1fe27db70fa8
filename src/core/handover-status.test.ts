import { describe, expect, it } from 'vitest';
import type { ConfigStatus } from '../api/conversion-config.ts';
import type { ReplicaReport } from './aggregate.ts';
import { DEFAULT_HANDOVER_POLICY, decideHandover, type HandoverInput } from './handover.ts';
import { decideHandoverStatus, progressOf, QUIET_WAIT_MS } from './handover-status.ts';

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

/** The Lease of Pod `pod`, renewed a second ago, serving T. */
const servingLease = (pod: string): ReplicaReport => ({
  replica: pod,
  renewTimeMs: NOW - 1_000,
  leaseDurationSeconds: 90,
  report: { kind: 'set', served: new Set([T]), unsettled: new Set() },
});

describe('a young move waiting on its replicas', () => {
  const assigned = (atMs: number): ConfigStatus => ({
    assignedWebhookServer: 'b',
    handoverDestination: 'b',
    conditions: [
      {
        type: 'HandoverReady',
        status: 'False',
        reason: 'AssignmentChanged',
        message: `assigned to b (was a); ${T} is pointed at it once b can serve it`,
        lastTransitionTime: new Date(atMs).toISOString(),
      },
    ],
  });
  const confirmingLook = (status: ConfigStatus) =>
    look(status, {
      currentServiceName: 'a-webhook-server',
      replicas: { readyPods: ['b-1'], leases: [servingLease('b-1')], stableSinceMs: NOW - 1_000 },
      progress: progressOf(status, 'b'),
      policy: DEFAULT_HANDOVER_POLICY,
    });

  it('is not written while assign’s AssignmentChanged about it stands and the move is young', () => {
    const quiet = confirmingLook(assigned(NOW - 5_000));
    expect(quiet.status.conditions[0].reason).toBe('HandoverPending');
    expect(quiet.changed, 'AssignmentChanged already says it waits for b').toBe(false);
  });

  it('is written once the move has waited the quiet period, with its reason and progress', () => {
    const old = confirmingLook(assigned(NOW - QUIET_WAIT_MS));
    expect(old.changed).toBe(true);
    expect(old.status.conditions[0].reason).toBe('HandoverPending');
    expect(old.status.handover?.waitingSince, 'the wait counts from the assignment').toBe(
      new Date(NOW - QUIET_WAIT_MS).toISOString(),
    );
  });

  it('a wait that needs a person, or a verdict, is written at once', () => {
    const young = assigned(NOW - 1_000);
    const unknown = look(young, {
      currentServiceName: 'a-webhook-server',
      replicas: {
        readyPods: ['b-1'],
        leases: [{ ...servingLease('b-1'), report: { kind: 'undecodable', reason: 'not base64' } }],
      },
      progress: progressOf(young, 'b'),
    });
    expect(unknown.status.conditions[0].reason).toBe('HandoverUnknown');
    expect(unknown.changed).toBe(true);
    const confirmed = assigned(NOW - DEFAULT_HANDOVER_POLICY.confirmMs);
    const verified = look(confirmed, {
      currentServiceName: 'a-webhook-server',
      replicas: { readyPods: ['b-1'], leases: [servingLease('b-1')], stableSinceMs: NOW - 60_000 },
      progress: progressOf(confirmed, 'b'),
      policy: DEFAULT_HANDOVER_POLICY,
    });
    expect(verified.status.conditions[0]).toMatchObject({ status: 'True', reason: 'HandoverReady' });
    expect(verified.changed).toBe(true);
  });

  it('resumes its stall clock from the assignment, and a wait for another destination from nothing of it', () => {
    expect(progressOf(assigned(NOW - 5_000), 'b')).toEqual({
      destination: 'b',
      waitingSince: new Date(NOW - 5_000).toISOString(),
    });
    expect(progressOf(assigned(NOW - 5_000), 'c')).toBeUndefined();
    const stored = { destination: 'b', waitingSince: EARLIER };
    expect(progressOf({ ...assigned(NOW), handover: stored }, 'b')).toBe(stored);
  });
});
