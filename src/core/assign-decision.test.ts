import { describe, expect, it } from 'vitest';
import { ASSIGNED_CONDITION, decideConfigAssignment, decideInstanceAssignment } from './assign-decision.ts';
import type { Resolution } from './assignment.ts';
import { targetListStatus } from './status-lists.ts';

const T0 = '2026-03-01T12:00:00Z';
const T1 = '2026-03-01T12:05:00Z';
const pool = (instance: string): Resolution => ({ ok: true, instance, decidedBy: 'Pool' });
const missingPin: Resolution = { ok: false, reason: 'PinnedInstanceMissing', message: 'create it' };

describe('a config’s assignment status', () => {
  it('a first assignment writes the instance and path, and is a move from nowhere', () => {
    const d = decideConfigAssignment(undefined, 'widgets.example.com', pool('a'), T0);
    expect(d.write).toMatchObject({
      assignedWebhookServer: 'a',
      webhookPath: '/convert/widgets.example.com',
    });
    expect(d.write?.conditions[0]).toMatchObject({
      type: ASSIGNED_CONDITION,
      status: 'True',
      reason: 'Pool',
    });
    expect(d.move).toEqual({ to: 'a' });
  });

  it('a status that already says it writes nothing and moves nothing (no request on a no-op)', () => {
    const first = decideConfigAssignment(undefined, 'widgets.example.com', pool('a'), T0);
    const status = { ...first.write, conditions: first.write?.conditions };
    expect(decideConfigAssignment(status, 'widgets.example.com', pool('a'), T1)).toEqual({
      write: undefined,
      move: undefined,
    });
  });

  it('a new winner is a move from the old instance; the transition time moves with the status only', () => {
    const first = decideConfigAssignment(undefined, 'w.example.com', pool('a'), T0);
    const d = decideConfigAssignment(first.write, 'w.example.com', pool('d'), T1);
    expect(d.move).toEqual({ from: 'a', to: 'd' });
    expect(d.write?.assignedWebhookServer).toBe('d');
    expect(d.write?.conditions[0].lastTransitionTime).toBe(T0);
  });

  it('an unresolvable config keeps naming the instance that serves it and says why, without a move', () => {
    const first = decideConfigAssignment(undefined, 'w.example.com', pool('a'), T0);
    const d = decideConfigAssignment(first.write, 'w.example.com', missingPin, T1);
    expect(d.move).toBeUndefined();
    expect(d.write?.assignedWebhookServer).toBe('a');
    expect(d.write?.conditions[0]).toMatchObject({
      status: 'False',
      reason: 'PinnedInstanceMissing',
      lastTransitionTime: T1,
    });
  });

  it('an unresolvable config never assigned names nothing', () => {
    const d = decideConfigAssignment(undefined, 'w.example.com', missingPin, T0);
    expect(d.write).not.toHaveProperty('assignedWebhookServer');
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
