import { describe, expect, it } from 'vitest';
import {
  ASSIGNED_CONDITION,
  decideConfigAssignment,
  decideInstanceAssignment,
  type InstanceReadiness,
} from './assign-decision.ts';
import type { Resolution } from './assignment.ts';
import { targetListStatus } from './status-lists.ts';

const T0 = '2026-03-01T12:00:00Z';
const T1 = '2026-03-01T12:05:00Z';
const pool = (instance: string): Resolution => ({ ok: true, instance, decidedBy: 'Pool' });
const missingPin: Resolution = { ok: false, reason: 'PinnedInstanceMissing', message: 'create it' };
const EVERY_READY: InstanceReadiness = { ready: () => true };
/** Only the instances named have a ready replica (an instance that is gone has none). */
const readyOnly = (...ready: string[]): InstanceReadiness => ({ ready: (name) => ready.includes(name) });

describe('a config’s assignment status', () => {
  it('a move onto an instance with no ready replica is held: nothing written, nothing announced, why recorded', () => {
    const onA = decideConfigAssignment(undefined, 'w.example.com', pool('a'), T0, 1, EVERY_READY).write
      ?.status;
    const d = decideConfigAssignment(onA, 'w.example.com', pool('b'), T1, 1, readyOnly('a'));
    expect(d.write).toBeUndefined();
    expect(d.move).toBeUndefined();
    expect(d.held).toMatchObject({ from: 'a', to: 'b' });
    expect(d.held?.message).toContain('b, which has no ready replica yet');
    const released = decideConfigAssignment(onA, 'w.example.com', pool('b'), T1, 1, readyOnly('a', 'b'));
    expect(released.move).toEqual({ from: 'a', to: 'b' });
    expect(released.write?.via).toBe('mergePatch');
    expect(released.held).toBeUndefined();
  });

  it('a first assignment, or a move off an instance that is gone or serves nothing, is recorded at once, ready or not', () => {
    const first = decideConfigAssignment(undefined, 'w.example.com', pool('b'), T0, 1, readyOnly());
    expect(first.move).toEqual({ to: 'b' });
    expect(first.held).toBeUndefined();
    for (const source of ['gone', 'a']) {
      const onSource = decideConfigAssignment(undefined, 'w.example.com', pool(source), T0, 1, EVERY_READY)
        .write?.status;
      const d = decideConfigAssignment(onSource, 'w.example.com', pool('b'), T1, 1, readyOnly('c'));
      expect(d.move).toEqual({ from: source, to: 'b' });
      expect(d.write?.via).toBe('mergePatch');
      expect(d.held).toBeUndefined();
    }
  });

  it('a first assignment writes the instance, the path and a False HandoverReady in one merge patch', () => {
    const d = decideConfigAssignment(undefined, 'widgets.example.com', pool('a'), T0, 1, EVERY_READY);
    expect(d.write).toEqual({
      via: 'mergePatch',
      status: {
        assignedWebhookServer: 'a',
        webhookPath: '/convert/widgets.example.com',
        handoverDestination: 'a',
        conditions: [
          expect.objectContaining({ type: ASSIGNED_CONDITION, status: 'True', reason: 'Pool' }),
          {
            type: 'HandoverReady',
            status: 'False',
            observedGeneration: 1,
            lastTransitionTime: T0,
            reason: 'AssignmentChanged',
            message: 'assigned to a; widgets.example.com is pointed at it once a can serve it',
          },
        ],
      },
    });
    expect(d.move).toEqual({ to: 'a' });
  });

  it('a status that already says it writes nothing and moves nothing (no request on a no-op)', () => {
    const first = decideConfigAssignment(undefined, 'widgets.example.com', pool('a'), T0, 1, EVERY_READY);
    expect(
      decideConfigAssignment(first.write?.status, 'widgets.example.com', pool('a'), T1, 1, EVERY_READY),
    ).toEqual({
      write: undefined,
      move: undefined,
    });
  });

  it('a new winner: the instance and the reset of a True verdict about the old one land in one write', () => {
    const verified = {
      type: 'HandoverReady',
      status: 'True' as const,
      observedGeneration: 3,
      lastTransitionTime: T0,
      reason: 'HandoverReady',
      message: 'moving w.example.com from Service x-webhook-server to a: all 2 ready Pods of a serve it',
    };
    const validated = {
      type: 'Validated',
      status: 'True' as const,
      lastTransitionTime: T0,
      reason: 'Compiled',
      message: '',
    };
    const first = decideConfigAssignment(undefined, 'w.example.com', pool('a'), T0, 3, EVERY_READY);
    const [assigned] = first.write?.status.conditions ?? [];
    const status = {
      assignedWebhookServer: 'a',
      webhookPath: '/convert/w.example.com',
      handoverDestination: 'a',
      conditions: [validated, assigned ?? verified, verified],
    };
    const d = decideConfigAssignment(status, 'w.example.com', pool('d'), T1, 4, EVERY_READY);
    expect(d.move).toEqual({ from: 'a', to: 'd' });
    expect(d.write?.via).toBe('mergePatch');
    expect(d.write?.status).toMatchObject({ assignedWebhookServer: 'd', handoverDestination: 'd' });
    expect(
      d.write?.status.conditions,
      'the list as read, in its order: a merge patch replaces it whole',
    ).toEqual([
      validated,
      {
        ...assigned,
        message: 'resolved to ConversionWebhookServer "d" by weighted rendezvous over the sharding pool',
      },
      {
        type: 'HandoverReady',
        status: 'False',
        observedGeneration: 4,
        lastTransitionTime: T1,
        reason: 'AssignmentChanged',
        message: 'assigned to d (was a); w.example.com is pointed at it once d can serve it',
      },
    ]);
  });

  it('an unresolvable config keeps naming the instance that serves it and says why, without a move', () => {
    const first = decideConfigAssignment(undefined, 'w.example.com', pool('a'), T0, 1, EVERY_READY);
    const d = decideConfigAssignment(first.write?.status, 'w.example.com', missingPin, T1, 1, EVERY_READY);
    expect(d.move).toBeUndefined();
    expect(d.write?.via, 'HandoverReady is the handover’s: assign applies Assigned only').toBe('apply');
    expect(d.write?.status.assignedWebhookServer).toBe('a');
    expect(d.write?.status.conditions).toEqual([
      expect.objectContaining({ status: 'False', reason: 'PinnedInstanceMissing', lastTransitionTime: T1 }),
    ]);
  });

  it('an unresolvable config never assigned names nothing', () => {
    const d = decideConfigAssignment(undefined, 'w.example.com', missingPin, T0, 1, EVERY_READY);
    expect(d.write?.status).not.toHaveProperty('assignedWebhookServer');
    expect(d.write?.status).not.toHaveProperty('handoverDestination');
    expect(d.move).toBeUndefined();
  });
});

describe('an instance’s assigned targets', () => {
  it('writes the sorted list, count and digest once, then nothing', () => {
    const write = decideInstanceAssignment(undefined, ['b.example.com', 'a.example.com']);
    expect(write).toEqual({
      assignedTargets: ['a.example.com', 'b.example.com'],
      assignedTargetCount: 2,
      assignedTargetsDigest: targetListStatus(['a.example.com', 'b.example.com']).digest,
    });
    expect(decideInstanceAssignment(write, ['a.example.com', 'b.example.com'])).toBeUndefined();
  });

  it('an instance with nothing assigned says 0 once', () => {
    expect(decideInstanceAssignment(undefined, [])).toMatchObject({
      assignedTargetCount: 0,
      assignedTargets: [],
    });
  });
});
