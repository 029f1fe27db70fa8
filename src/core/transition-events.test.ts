import { describe, expect, it } from 'vitest';
import type { HandoverCondition } from './handover.ts';
import { assignedEvent, handoverWaitEvent, repointEvent } from './transition-events.ts';

const condition = (
  reason: HandoverCondition['reason'],
  status: 'True' | 'False' = 'True',
): HandoverCondition => ({
  type: 'HandoverReady',
  status,
  reason,
  message: `because ${reason}`,
});

describe('transition events', () => {
  it('a repoint is one transition per target version and destination', () => {
    const e = repointEvent({
      target: 'w.x.io',
      readVersion: '42',
      from: 'a-webhook-server',
      to: 'b-webhook-server',
      condition: condition('HandoverReady'),
    });
    expect(e).toEqual({
      type: 'Normal',
      reason: 'HandoverReady',
      action: 'RepointConversion',
      note: 'w.x.io now converts through Service b-webhook-server (was a-webhook-server): because HandoverReady',
      key: 'repoint/w.x.io/42/b-webhook-server',
    });
    const unverified = repointEvent({
      target: 'w.x.io',
      readVersion: '43',
      from: undefined,
      to: 'b-webhook-server',
      condition: condition('HandoverUnverified'),
    });
    expect(unverified.type, 'a move nobody confirmed is worth a look').toBe('Warning');
    expect(unverified.note).not.toContain('was');
  });

  it('a wait records an Event only on entering a state that needs a person', () => {
    const at = (previousReason: string | undefined, reason: HandoverCondition['reason']) =>
      handoverWaitEvent({ target: 't', previousReason, condition: condition(reason, 'False'), since: 'T1' });
    expect(at('HandoverPending', 'HandoverStalled')).toMatchObject({
      type: 'Warning',
      reason: 'HandoverStalled',
      key: 'wait/t/HandoverStalled/T1',
    });
    expect(at(undefined, 'HandoverUnknown')?.reason).toBe('HandoverUnknown');
    expect(at('HandoverStalled', 'HandoverStalled'), 'still stalled').toBeUndefined();
    for (const reason of ['HandoverPending', 'HandoverAwaitingReports', 'DestinationNotReady'] as const)
      expect(at(undefined, reason), reason).toBeUndefined();
  });

  it('an assignment says whether the target moves or is placed for the first time', () => {
    expect(assignedEvent({ target: 't', readVersion: '5', move: { from: 'a', to: 'b' } })).toMatchObject({
      reason: 'Reassigned',
      key: 'assign/t/5/b',
    });
    expect(assignedEvent({ target: 't', readVersion: '5', move: { to: 'b' } }).reason).toBe('Assigned');
  });
});
