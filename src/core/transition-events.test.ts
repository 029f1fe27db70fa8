import { describe, expect, it } from 'vitest';
import type { HandoverCondition } from './handover.ts';
import { assignedTargetsEvent, handoverWaitEvent, repointBatchEvent } from './transition-events.ts';

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
  it('repoints onto one instance with one verdict are one Event about the instance, named by its first', () => {
    const repoints = Array.from({ length: 12 }, (_, i) => ({
      target: `t${i}.x.io`,
      from: 'a-webhook-server',
      reason: 'HandoverReady',
    }));
    const e = repointBatchEvent({
      instance: 'b',
      service: 'b-webhook-server',
      reason: 'HandoverReady',
      repoints,
      first: { target: 't0.x.io', readVersion: '42' },
    });
    expect(e).toMatchObject({ type: 'Normal', reason: 'HandoverReady', action: 'RepointConversion' });
    expect(e.key).toBe('repoint/b/HandoverReady/t0.x.io/42');
    expect(e.note).toMatch(
      /^12 targets now convert through Service b-webhook-server of instance b: t0\.x\.io \(was a-webhook-server\), /,
    );
    expect(e.note).toContain('and 2 more');
    const unverified = repointBatchEvent({
      instance: 'b',
      service: 'b-webhook-server',
      reason: 'HandoverUnverified',
      repoints: [{ target: 't', from: undefined, reason: 'HandoverUnverified' }],
      first: { target: 't', readVersion: '1' },
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

  it('an instance’s new list is one Event, saying which targets came and went when the lists are known', () => {
    const e = assignedTargetsEvent({
      instance: 's5',
      readVersion: '7',
      before: { targets: ['a', 'b'], count: 2 },
      after: { targets: ['b', 'c', 'd'], count: 3, digest: 'sha256:x' },
    });
    expect(e).toMatchObject({
      type: 'Normal',
      reason: 'AssignedTargetsChanged',
      key: 'assign/s5/7/sha256:x',
    });
    expect(e.note).toBe(
      '3 targets resolve to instance s5 (+2: c, d; −1: a); the handover repoints each once s5 serves it',
    );
    const unlisted = assignedTargetsEvent({
      instance: 's5',
      readVersion: '8',
      before: { count: 4000 },
      after: { count: 4200, digest: 'sha256:y' },
    });
    expect(unlisted.note).toContain('4200 targets resolve to instance s5 (was 4000)');
  });
});
