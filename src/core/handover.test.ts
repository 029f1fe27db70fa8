import { describe, expect, it } from 'vitest';
import type { InstanceAggregate } from './aggregate.ts';
import {
  decideHandover,
  type HandoverInput,
  STALL_AFTER_MS,
  shouldHoldPlan,
  UNREPORTED_GRACE_MS,
} from './handover.ts';

const T = 'gadgets.example.com';
const known = (served: string[], reporting: number, ready: number, extra: Partial<InstanceAggregate> = {}) =>
  ({
    kind: 'known',
    servedTargets: served,
    unsettledTargets: [],
    reportingReplicas: reporting,
    staleReplicas: 0,
    readyReplicas: ready,
    ...extra,
  }) as InstanceAggregate;

function input(overrides: Partial<HandoverInput>): HandoverInput {
  return {
    target: T,
    destination: 'b',
    currentServiceName: 'a-webhook-server',
    instances: new Set(['a', 'b']),
    destinationAggregate: known([T], 2, 2),
    waitedMs: 0,
    ...overrides,
  };
}

describe('handover decision', () => {
  it.each([
    {
      scenario: 'first apply: the target names no webhook Service yet',
      given: { currentServiceName: undefined, destinationAggregate: known([], 0, 0) },
      action: 'patch',
      status: 'True',
      reason: 'FirstApply',
    },
    {
      scenario: 'first apply: the target names a Service that is no instance of ours',
      given: { currentServiceName: 'legacy-converter', destinationAggregate: known([], 0, 2) },
      action: 'patch',
      status: 'True',
      reason: 'FirstApply',
    },
    {
      scenario: 'no move: the target already names the destination',
      given: { currentServiceName: 'b-webhook-server', destinationAggregate: known([], 0, 0) },
      action: 'patch',
      status: 'True',
      reason: 'NoMove',
    },
    {
      scenario: 'the destination has no ready replicas',
      given: { destinationAggregate: known([], 0, 0) },
      action: 'wait',
      status: 'False',
      reason: 'DestinationNotReady',
    },
    {
      scenario: 'waiting for the destination to publish anything',
      given: { destinationAggregate: known([], 0, 2), waitedMs: UNREPORTED_GRACE_MS - 1 },
      action: 'wait',
      status: 'False',
      reason: 'HandoverAwaitingReports',
    },
    {
      scenario: 'nothing published after the grace period: proceed, and say it was not verified',
      given: { destinationAggregate: known([], 0, 2), waitedMs: UNREPORTED_GRACE_MS },
      action: 'patch',
      status: 'True',
      reason: 'HandoverUnverified',
    },
    {
      scenario: 'the destination publishes but every Lease is stale: wedged, not silent',
      given: {
        destinationAggregate: known([], 0, 2, { staleReplicas: 2 }),
        waitedMs: UNREPORTED_GRACE_MS * 2,
      },
      action: 'wait',
      status: 'False',
      reason: 'HandoverPending',
    },
    {
      scenario: 'fewer replicas report than are ready',
      given: { destinationAggregate: known([T], 1, 2) },
      action: 'wait',
      status: 'False',
      reason: 'HandoverPending',
    },
    {
      scenario: 'not every replica serves the target yet',
      given: { destinationAggregate: known([], 2, 2) },
      action: 'wait',
      status: 'False',
      reason: 'HandoverPending',
    },
    {
      scenario: 'a truncated report blocks, however long it takes',
      given: {
        destinationAggregate: {
          kind: 'unknown',
          unreadable: [
            { replica: 'b-1', why: 'truncated', detail: '60000 targets exceed the annotation budget' },
          ],
          reportingReplicas: 2,
          staleReplicas: 0,
          readyReplicas: 2,
        } as InstanceAggregate,
        waitedMs: STALL_AFTER_MS * 3,
      },
      action: 'wait',
      status: 'False',
      reason: 'HandoverUnknown',
    },
    {
      scenario: 'an undecodable report blocks',
      given: {
        destinationAggregate: {
          kind: 'unknown',
          unreadable: [{ replica: 'b-0', why: 'undecodable', detail: 'unsupported format version "v9"' }],
          reportingReplicas: 2,
          staleReplicas: 0,
          readyReplicas: 2,
        } as InstanceAggregate,
      },
      action: 'wait',
      status: 'False',
      reason: 'HandoverUnknown',
    },
    {
      scenario: 'a wait that outlasts the stall threshold is called stalled',
      given: { destinationAggregate: known([], 2, 2), waitedMs: STALL_AFTER_MS },
      action: 'wait',
      status: 'False',
      reason: 'HandoverStalled',
    },
    {
      scenario: 'verified: every live replica of the destination serves the target',
      given: {},
      action: 'patch',
      status: 'True',
      reason: 'HandoverReady',
    },
  ])('$scenario → $action, $reason', ({ given, action, status, reason }) => {
    const decision = decideHandover(input(given as Partial<HandoverInput>));
    expect(decision.action, decision.condition.message).toBe(action);
    expect(decision.condition).toMatchObject({ type: 'HandoverReady', status, reason });
  });

  it('never patches a move while the destination is not verified, short of nothing being published', () => {
    const waits = [known([], 2, 2), known([T], 1, 3), known([], 0, 0)];
    for (const destinationAggregate of waits) {
      for (const waitedMs of [0, UNREPORTED_GRACE_MS, STALL_AFTER_MS * 10]) {
        expect(decideHandover(input({ destinationAggregate, waitedMs })).action).toBe('wait');
      }
    }
  });

  it('keeps the verdict of the last move once it is done', () => {
    const previous = {
      type: 'HandoverReady',
      status: 'True',
      reason: 'HandoverUnverified',
      message: 'm',
    } as const;
    const decision = decideHandover(input({ currentServiceName: 'b-webhook-server', previous }));
    expect(decision.condition).toBe(previous);
  });

  it('says in the message what it waits for', () => {
    const d = decideHandover(input({ destinationAggregate: known([T], 1, 3) }));
    expect(d.condition.message).toBe(`moving ${T} from a to b: 1 of 3 ready replicas report`);
  });
});

describe('which replicas hold a plan', () => {
  it.each([
    { scenario: 'assigned to my instance', assigned: 'a', service: undefined, holds: true },
    {
      scenario: 'moved away, but the live target still names my Service',
      assigned: 'b',
      service: 'a-webhook-server',
      holds: true,
    },
    { scenario: 'moved away and repointed', assigned: 'b', service: 'b-webhook-server', holds: false },
    { scenario: 'unresolvable, target names nobody', assigned: undefined, service: undefined, holds: false },
    {
      scenario: 'a Service of a similarly named instance is not mine',
      assigned: 'b',
      service: 'a-b-webhook-server',
      holds: false,
    },
  ])('$scenario → $holds', ({ assigned, service, holds }) => {
    expect(shouldHoldPlan('a', assigned, service)).toBe(holds);
  });
});
