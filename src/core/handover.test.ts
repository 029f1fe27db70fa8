import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { HandoverProgress } from '../api/conversion-config.ts';
import type { ReplicaReport } from './aggregate.ts';
import {
  assignmentChanged,
  DEFAULT_HANDOVER_POLICY,
  decideAfterRepoint,
  decideHandover,
  decideMissingTarget,
  type GateDecision,
  type HandoverInput,
  type HandoverReason,
  shouldHoldPlan,
} from './handover.ts';
import type { RouteState } from './routing.ts';
import type { DecodedServedSet } from './served-set-codec.ts';

const T = 'gadgets.example.com';
const NOW = Date.parse('2026-03-01T12:00:00.000Z');
const GRACE = DEFAULT_HANDOVER_POLICY.unreportedGraceMs;
const STALL = DEFAULT_HANDOVER_POLICY.stallAfterMs;
const DURATION_S = 90;

const serves = (served: string[], unsettled: string[] = []): DecodedServedSet => ({
  kind: 'set',
  served: new Set(served),
  unsettled: new Set(unsettled),
});
/** A Lease of Pod `pod` renewed `ageSeconds` ago (negative: ahead of the reader's clock). */
const lease = (pod: string, report: DecodedServedSet = serves([T]), ageSeconds = 5): ReplicaReport => ({
  replica: pod,
  renewTimeMs: NOW - ageSeconds * 1000,
  leaseDurationSeconds: DURATION_S,
  report,
});
const iso = (ms: number) => new Date(ms).toISOString();
/** status.handover of a wait for `destination` that began `waitedMs` ago, silent for `silentMs`. */
const waiting = (destination: string, waitedMs: number, silentMs?: number): HandoverProgress => ({
  destination,
  waitingSince: iso(NOW - waitedMs),
  ...(silentMs === undefined ? {} : { silentSince: iso(NOW - silentMs) }),
});

function input(overrides: Partial<HandoverInput> = {}): HandoverInput {
  return {
    target: T,
    destination: 'b',
    currentServiceName: 'a-webhook-server',
    assigned: 'b',
    replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2')] },
    nowMs: NOW,
    // The confirmation has tests of its own below.
    policy: { ...DEFAULT_HANDOVER_POLICY, confirmMs: 0 },
    ...overrides,
  };
}
/** The gate's decision on a status that names the destination (never a hold). */
function decided(given: HandoverInput): GateDecision {
  const decision = decideHandover(given);
  if (decision.action === 'hold') throw new Error(`held: ${decision.message}`);
  return decision;
}
const silentB = (readyPods = ['b-1']) => ({ readyPods, leases: [] });

describe('handover decision', () => {
  it.each<{ scenario: string; given: Partial<HandoverInput>; action: string; reason: HandoverReason }>([
    {
      scenario: 'first apply: the target names no webhook Service yet, the destination has a ready Pod',
      given: { currentServiceName: undefined, replicas: silentB() },
      action: 'patch',
      reason: 'FirstApply',
    },
    {
      scenario: 'first apply waits for a ready Pod of the destination',
      given: { currentServiceName: undefined, replicas: { readyPods: [], leases: [] } },
      action: 'wait',
      reason: 'DestinationNotReady',
    },
    {
      scenario: 'no move: the target already names the destination',
      given: { currentServiceName: 'b-webhook-server', replicas: { readyPods: [], leases: [] } },
      action: 'patch',
      reason: 'NoMove',
    },
    {
      scenario: 'a move from a deleted instance is gated on the destination, not a first apply',
      given: {
        replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1', serves([])), lease('b-2', serves([]))] },
      },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'a move from a foreign Service is gated on the destination',
      given: {
        currentServiceName: 'legacy-converter',
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([]))] },
      },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'the destination has no ready Pods',
      given: { replicas: { readyPods: [], leases: [lease('b-1')] } },
      action: 'wait',
      reason: 'DestinationNotReady',
    },
    {
      scenario: 'waiting for a ready, silent destination to publish anything',
      given: { replicas: silentB(), progress: waiting('b', GRACE, GRACE - 1) },
      action: 'wait',
      reason: 'HandoverAwaitingReports',
    },
    {
      scenario: 'silent while ready for the whole grace: proceed, and say it was not verified',
      given: { replicas: silentB(), progress: waiting('b', GRACE, GRACE) },
      action: 'patch',
      reason: 'HandoverUnverified',
    },
    {
      scenario:
        'grace after DestinationNotReady: time spent unready does not count (repro: ready 1, waited 120 s)',
      given: { replicas: silentB(), progress: waiting('b', 120_000) },
      action: 'wait',
      reason: 'HandoverAwaitingReports',
    },
    {
      scenario: 'a destination change mid-wait restarts the grace',
      given: { replicas: silentB(), progress: waiting('c', 5 * 60_000, 5 * 60_000) },
      action: 'wait',
      reason: 'HandoverAwaitingReports',
    },
    {
      scenario: 'every Lease of the destination is stale: wedged, not silent, and no unverified move',
      given: {
        replicas: {
          readyPods: ['b-1', 'b-2'],
          leases: [lease('b-1', serves([T]), 91), lease('b-2', serves([T]), 91)],
        },
        progress: waiting('b', GRACE * 3, GRACE * 3),
      },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'every Lease stale past the stall bound: stalled',
      given: {
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), 300)] },
        progress: waiting('b', STALL),
      },
      action: 'wait',
      reason: 'HandoverStalled',
    },
    {
      scenario: 'a ready Pod without a Lease while another reports',
      given: { replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1')] } },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'a terminating Pod with a live Lease does not stand in for a silent ready Pod',
      given: { replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-old'), lease('b-1')] } },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'a ready Pod whose Lease is stale',
      given: {
        replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2', serves([T]), 91)] },
      },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'not every ready Pod serves the target yet',
      given: { replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2', serves([]))] } },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'an unsettled target (a view that differs from the writer’s) is not served',
      given: {
        replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2', serves([], [T]))] },
      },
      action: 'wait',
      reason: 'HandoverPending',
    },
    {
      scenario: 'a truncated report blocks, however long it takes',
      given: {
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', { kind: 'truncated', servedCount: 60_000 })] },
        progress: waiting('b', STALL * 3),
      },
      action: 'wait',
      reason: 'HandoverUnknown',
    },
    {
      scenario: 'an undecodable report blocks',
      given: {
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', { kind: 'undecodable', reason: 'checksum' })] },
      },
      action: 'wait',
      reason: 'HandoverUnknown',
    },
    {
      scenario: 'a renewTime more than one duration ahead of the reader is undecidable, and blocks',
      given: { replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), -(DURATION_S + 1))] } },
      action: 'wait',
      reason: 'HandoverUnknown',
    },
    {
      scenario: 'a renewTime a little ahead of the reader (within one duration) is live',
      given: { replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), -30)] } },
      action: 'patch',
      reason: 'HandoverReady',
    },
    {
      scenario: 'a wait that outlasts the stall threshold is called stalled',
      given: {
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([]))] },
        progress: waiting('b', STALL),
      },
      action: 'wait',
      reason: 'HandoverStalled',
    },
    {
      scenario: 'verified: every ready Pod of the destination has a live report serving the target',
      given: {},
      action: 'patch',
      reason: 'HandoverReady',
    },
    {
      scenario: 'verified: a Lease of a Pod that is not ready does not veto',
      given: { replicas: { readyPods: ['b-1'], leases: [lease('b-1'), lease('b-starting', serves([]))] } },
      action: 'patch',
      reason: 'HandoverReady',
    },
  ])('$scenario → $action, $reason', ({ given, action, reason }) => {
    const decision = decided(input(given));
    expect(decision.action, decision.condition.message).toBe(action);
    expect(decision.condition).toMatchObject({
      type: 'HandoverReady',
      status: action === 'patch' ? 'True' : 'False',
      reason,
    });
  });

  it('never patches a move while the destination is not verified, short of it publishing nothing', () => {
    const unverified = [
      { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2', serves([]))] },
      { readyPods: ['b-1', 'b-2', 'b-3'], leases: [lease('b-1'), lease('b-old')] },
      { readyPods: [], leases: [] },
      { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), 120)] },
    ];
    for (const replicas of unverified) {
      for (const waitedMs of [0, GRACE, STALL * 10]) {
        const progress = waiting('b', waitedMs, waitedMs);
        expect(decided(input({ replicas, progress })).action).toBe('wait');
      }
    }
  });

  it('counts the grace only from when the destination is ready and silent, and carries it in status.handover', () => {
    // Unready for 5 minutes: the wait began then, the grace has not.
    const unready = decided(
      input({ replicas: { readyPods: [], leases: [] }, progress: waiting('b', 5 * 60_000) }),
    );
    expect(unready.progress).toEqual(waiting('b', 5 * 60_000));
    // Ready and silent now: the grace starts now and is stored.
    const first = decided(input({ replicas: silentB(), progress: unready.progress }));
    expect(first.progress).toEqual({ ...waiting('b', 5 * 60_000), silentSince: iso(NOW) });
    expect(first.recheckAtMs).toBe(NOW + GRACE);
    // Looked at again when the recheck falls due: the grace is up.
    const later = decided(input({ replicas: silentB(), progress: first.progress, nowMs: NOW + GRACE }));
    expect(later).toMatchObject({
      action: 'patch',
      condition: { reason: 'HandoverUnverified' },
      progress: undefined,
    });
  });

  it('restarts the grace when the destination stops being silent', () => {
    const progress = waiting('b', GRACE * 2, GRACE * 2);
    const published = decided(
      input({ replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([]))] }, progress }),
    );
    expect(published.progress?.silentSince).toBeUndefined();
  });

  it('restarts every clock when the destination changes', () => {
    const d = decided(input({ replicas: silentB(), progress: waiting('c', STALL * 2, STALL * 2) }));
    expect(d.progress).toEqual({ destination: 'b', waitingSince: iso(NOW), silentSince: iso(NOW) });
    expect(d.condition.reason).toBe('HandoverAwaitingReports');
  });

  it('takes a configured grace', () => {
    const policy = { ...DEFAULT_HANDOVER_POLICY, unreportedGraceMs: 30_000 };
    const d = decided(input({ replicas: silentB(), progress: waiting('b', 30_000, 30_000), policy }));
    expect(d.condition.reason).toBe('HandoverUnverified');
    expect(d.condition.message).toMatch(/while ready for 30s/);
  });

  it('says when all Leases are stale that it waits rather than proceeds, and schedules the stall', () => {
    const d = decided(input({ replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), 100)] } }));
    expect(d.condition.message).toMatch(/all 1 Leases of b are stale/);
    expect(d.condition.message).toMatch(/waits instead of proceeding unverified/);
    expect(d.recheckAtMs).toBe(NOW + STALL);
  });

  it('schedules a re-check when a live Lease expires, or an ahead one becomes readable', () => {
    const live = decided(input({ replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([]), 10)] } }));
    expect(live.recheckAtMs).toBe(NOW - 10_000 + DURATION_S * 1000);
    const ahead = decided(
      input({ replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([T]), -200)] } }),
    );
    expect(ahead.recheckAtMs).toBe(NOW + 200_000 - DURATION_S * 1000);
  });

  it('has nothing to re-check once patched', () => {
    expect(decided(input())).toMatchObject({ progress: undefined, recheckAtMs: undefined });
  });

  it('never trusts a stored start time ahead of its clock or unreadable', () => {
    for (const waitingSince of [iso(NOW + STALL * 2), 'not a time']) {
      const d = decided(
        input({
          replicas: silentB(),
          progress: { destination: 'b', waitingSince, silentSince: waitingSince },
        }),
      );
      expect(d.progress).toEqual({ destination: 'b', waitingSince: iso(NOW), silentSince: iso(NOW) });
    }
  });

  it('keeps the verdict of the last move once it is done, when it is about this destination', () => {
    const previous = {
      type: 'HandoverReady',
      status: 'True',
      reason: 'HandoverUnverified',
      message: 'm',
    } as const;
    const decision = decided(
      input({ currentServiceName: 'b-webhook-server', previous, previousDestination: 'b' }),
    );
    expect(decision.condition).toBe(previous);
    expect(decision).toMatchObject({ action: 'patch', progress: undefined, recheckAtMs: undefined });
  });

  it.each<{ scenario: string; previousDestination: string | undefined; status: 'True' | 'False' }>([
    {
      scenario: 'a True verdict about an earlier destination (stopped between repoint and status write)',
      previousDestination: 'a',
      status: 'True',
    },
    {
      scenario: 'a True verdict about no recorded destination (written before it was recorded)',
      previousDestination: undefined,
      status: 'True',
    },
    {
      scenario: 'a False verdict about this destination (the wait that preceded the repoint)',
      previousDestination: 'b',
      status: 'False',
    },
  ])('says NoMove afresh over $scenario', ({ previousDestination, status }) => {
    const previous = {
      type: 'HandoverReady',
      status,
      reason: status === 'True' ? 'HandoverReady' : 'HandoverPending',
      message: `moving ${T} from Service x-webhook-server to a: all 2 ready Pods of a serve it`,
    } as const;
    const decision = decided(
      input({ currentServiceName: 'b-webhook-server', previous, previousDestination }),
    );
    expect(decision.condition).toEqual({
      type: 'HandoverReady',
      status: 'True',
      reason: 'NoMove',
      message: `${T} is already served by b (Service b-webhook-server)`,
    });
    expect(decision).toMatchObject({ action: 'patch', progress: undefined, recheckAtMs: undefined });
  });

  it('names the ready Pods it waits for', () => {
    const d = decided(
      input({ replicas: { readyPods: ['b-2', 'b-1', 'b-3'], leases: [lease('b-1'), lease('b-old')] } }),
    );
    expect(d.condition.message).toBe(
      `moving ${T} from Service a-webhook-server to b: 1 of 3 ready Pods report; no live report from b-2, b-3`,
    );
  });
});

describe('the gate acts only on the instance the status names', () => {
  it.each<{ scenario: string; given: Partial<HandoverInput> }>([
    { scenario: 'a move whose new instance assign has not recorded yet', given: { assigned: 'a' } },
    { scenario: 'a first apply before the first assignment is recorded', given: { assigned: undefined } },
    {
      scenario: 'a target already naming the resolved instance while the status names another',
      given: { assigned: 'a', currentServiceName: 'b-webhook-server' },
    },
  ])('holds, touching and stating nothing: $scenario', ({ given }) => {
    const decision = decideHandover(input(given));
    expect(decision).toEqual({
      action: 'hold',
      reason: 'AwaitingAssignment',
      message: expect.stringContaining(`${T} resolves to b`),
    });
  });

  it('says, while the destination has no ready Pod, that assign records the move once it has one', () => {
    const held = decideHandover(input({ assigned: 'a', replicas: { readyPods: [], leases: [] } }));
    expect(held).toMatchObject({
      action: 'hold',
      message: expect.stringContaining('once b has a ready Pod'),
    });
    const ready = decideHandover(input({ assigned: 'a' }));
    expect(ready).toMatchObject({ action: 'hold', message: expect.not.stringContaining('ready Pod') });
  });

  it('never states a verdict about an instance the status does not name (any input)', () => {
    const instance = fc.constantFrom('a', 'b', 'c');
    const service = fc.option(
      instance.map((i) => `${i}-webhook-server`),
      { nil: undefined },
    );
    const pods = fc.uniqueArray(fc.constantFrom('b-1', 'b-2'));
    const verdict = fc.option(
      fc.record({
        instance,
        reason: fc.constantFrom('FirstApply', 'NoMove', 'HandoverReady', 'HandoverUnverified' as const),
        message: fc.constant('m'),
      }),
      { nil: undefined },
    );
    fc.assert(
      fc.property(
        fc.option(instance, { nil: undefined }),
        service,
        pods,
        pods,
        verdict,
        fc.option(instance, { nil: undefined }),
        (assigned, currentServiceName, readyPods, reporting, recorded, previousDestination) => {
          const given = input({
            assigned,
            currentServiceName,
            recorded,
            previousDestination,
            previous: { type: 'HandoverReady', status: 'True', reason: 'HandoverReady', message: 'earlier' },
            replicas: { readyPods, leases: reporting.map((p) => lease(p)) },
          });
          const decision = decideHandover(given);
          if (decision.action === 'hold') return assigned !== 'b';
          expect(assigned, 'a decision about b while the status names another').toBe('b');
          // A verdict (True) is only stated with a patch: the target names b once it is written.
          return decision.condition.status !== 'True' || decision.action === 'patch';
        },
      ),
    );
  });

  it('states the verdict the repoint recorded on the target when its status write was lost', () => {
    const recorded = { instance: 'b', reason: 'HandoverUnverified' as const, message: 'moved unverified' };
    const d = decided(
      input({
        currentServiceName: 'b-webhook-server',
        recorded,
        previous: undefined,
        previousDestination: 'b',
      }),
    );
    expect(d).toMatchObject({
      action: 'patch',
      condition: { status: 'True', reason: 'HandoverUnverified', message: 'moved unverified' },
    });
    const aboutA = decided(
      input({ currentServiceName: 'b-webhook-server', recorded: { ...recorded, instance: 'a' } }),
    );
    expect(aboutA.condition.reason, 'a verdict about another instance is not this one').toBe('NoMove');
  });

  it('a target that does not exist: False TargetNotFound, nothing waits', () => {
    expect(decideMissingTarget({ target: T, kind: 'CustomResourceDefinition', destination: 'b' })).toEqual({
      action: 'wait',
      condition: {
        type: 'HandoverReady',
        status: 'False',
        reason: 'TargetNotFound',
        message: `CustomResourceDefinition "${T}" does not exist; it is pointed at b once it is created`,
      },
      progress: undefined,
      recheckAtMs: undefined,
    });
  });

  it('the reset assign writes with a new instance is False and names both instances', () => {
    expect(assignmentChanged(T, 'b', 'a')).toEqual({
      type: 'HandoverReady',
      status: 'False',
      reason: 'AssignmentChanged',
      message: `assigned to b (was a); ${T} is pointed at it once b can serve it`,
    });
    expect(assignmentChanged(T, 'b', undefined).message).toBe(
      `assigned to b; ${T} is pointed at it once b can serve it`,
    );
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
    expect(shouldHoldPlan('a', assigned, service === undefined ? [] : [service])).toBe(holds);
  });

  describe('the confirmation before a verified repoint', () => {
    const CONFIRM = DEFAULT_HANDOVER_POLICY.confirmMs;
    const confirming = (given: Partial<HandoverInput>) =>
      decided(input({ policy: DEFAULT_HANDOVER_POLICY, ...given }));

    it('waits until the same ready Pods have served the target for the confirmation, then patches', () => {
      const first = confirming({});
      expect(first).toMatchObject({ action: 'wait', condition: { reason: 'HandoverPending' } });
      expect(first.condition.message).toContain('confirming that they go on serving it for 10s');
      expect(first.recheckAtMs).toBe(NOW + CONFIRM);
      const pending = confirming({ progress: first.progress, nowMs: NOW + CONFIRM - 1 });
      expect(pending.action).toBe('wait');
      expect(pending.progress, 'the same confirmation, not a new one').toEqual(first.progress);
      const done = confirming({ progress: first.progress, nowMs: NOW + CONFIRM });
      expect(done).toMatchObject({ action: 'patch', condition: { status: 'True', reason: 'HandoverReady' } });
      expect(done.condition.message).toContain('and did for 10s');
    });

    it('starts over when the ready Pods change: a replica that died meanwhile is not vouched for', () => {
      const first = confirming({});
      // b-2 died: not ready any more, and its replacement b-3 reports.
      const replaced = { readyPods: ['b-1', 'b-3'], leases: [lease('b-1'), lease('b-2'), lease('b-3')] };
      const later = confirming({ replicas: replaced, progress: first.progress, nowMs: NOW + CONFIRM });
      expect(later.action).toBe('wait');
      expect(later.recheckAtMs).toBe(NOW + 2 * CONFIRM);
      // While b-2 is only unready, the one Pod left confirms on its own clock.
      const alone = confirming({
        replicas: { readyPods: ['b-1'], leases: [lease('b-1'), lease('b-2')] },
        progress: first.progress,
        nowMs: NOW + CONFIRM,
      });
      expect(alone.action, 'one Pod fewer is another set of Pods').toBe('wait');
    });

    it('starts over when a Pod stops reporting the target in between', () => {
      const first = confirming({});
      const gap = confirming({
        replicas: { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2', serves([]))] },
        progress: first.progress,
        nowMs: NOW + 3_000,
      });
      expect(gap.progress?.confirming).toBeUndefined();
      const again = confirming({ progress: gap.progress, nowMs: NOW + CONFIRM });
      expect(again.action, 'the confirmation restarted after the gap').toBe('wait');
    });

    it('counts from when the ready Pods and their reports last changed, as recorded, when that is known', () => {
      const twoPods = { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2')] };
      const waitedLong = waiting('b', 60_000);
      const settled = confirming({
        replicas: { ...twoPods, stableSinceMs: NOW - CONFIRM },
        progress: waitedLong,
      });
      expect(settled, 'the replicas have served it unchanged for the whole confirmation').toMatchObject({
        action: 'patch',
        condition: { reason: 'HandoverReady' },
      });
      const recent = confirming({
        replicas: { ...twoPods, stableSinceMs: NOW - 4_000 },
        progress: waitedLong,
      });
      expect(recent.action).toBe('wait');
      expect(recent.recheckAtMs).toBe(NOW - 4_000 + CONFIRM);
      // A change recorded since (a Pod flapped, a report changed) restarts it, whatever was kept.
      const changed = confirming({
        replicas: { ...twoPods, stableSinceMs: NOW + 1_000 },
        progress: recent.progress,
        nowMs: NOW + 2_000,
      });
      expect(changed.action).toBe('wait');
      expect(changed.recheckAtMs).toBe(NOW + 1_000 + CONFIRM);
    });

    it('never counts from before the wait began: a replica hung just before the move gets the whole confirmation to show it', () => {
      const twoPods = { readyPods: ['b-1', 'b-2'], leases: [lease('b-1'), lease('b-2')] };
      const young = confirming({
        replicas: { ...twoPods, stableSinceMs: NOW - 3_600_000 },
        progress: waiting('b', 3_000),
      });
      expect(young.action).toBe('wait');
      expect(young.recheckAtMs).toBe(NOW - 3_000 + CONFIRM);
    });

    it('does not hold a first apply or a move with no Lease at all: nothing serves the first, nothing vouches for the other', () => {
      expect(confirming({ currentServiceName: undefined, replicas: silentB() }).action).toBe('patch');
    });
  });
});

describe('an XRD target: the apiserver routes by the CRDs Crossplane generates from it', () => {
  const route = (
    crd: string,
    serviceName: string | undefined,
    over: Partial<RouteState> = {},
  ): RouteState => ({
    crd,
    exists: true,
    established: true,
    serviceName,
    agrees: false,
    ...over,
  });
  const followed = (service: string) => [
    route(T, service, { agrees: true }),
    route(`claim${T}`, service, { agrees: true }),
  ];

  it('states the verdict only once every generated CRD says what the XRD says', () => {
    const routes = [route(T, 'b-webhook-server', { agrees: true }), route(`claim${T}`, 'a-webhook-server')];
    const d = decided(input({ currentServiceName: 'b-webhook-server', routes }));
    expect(d.action).toBe('wait');
    expect(d.condition).toMatchObject({ status: 'False', reason: 'AwaitingCrossplane' });
    expect(d.condition.message).toContain(`CRD claim${T} names Service a-webhook-server`);
    const all = decided(
      input({ currentServiceName: 'b-webhook-server', routes: followed('b-webhook-server') }),
    );
    expect(all).toMatchObject({ action: 'patch', condition: { status: 'True', reason: 'NoMove' } });
  });

  it('says which generated CRD does not exist yet', () => {
    const d = decided(
      input({ currentServiceName: 'b-webhook-server', routes: [route(T, undefined, { exists: false })] }),
    );
    expect(d.condition).toMatchObject({ reason: 'AwaitingCrossplane' });
    expect(d.condition.message).toContain(`CRD ${T} does not exist`);
  });

  it('after the repoint, waits for Crossplane instead of stating the verdict it earned', () => {
    const given = input({ routes: followed('a-webhook-server') });
    const gate = decided(given);
    expect(gate).toMatchObject({ action: 'patch', condition: { reason: 'HandoverReady' } });
    if (gate.action !== 'patch') throw new Error('not a patch');
    // Compared with the XRD as patched: both CRDs still name a.
    const lagging = [route(T, 'a-webhook-server'), route(`claim${T}`, 'a-webhook-server')];
    const after = decideAfterRepoint(given, gate.condition, lagging);
    expect(after).toMatchObject({
      action: 'wait',
      condition: { status: 'False', reason: 'AwaitingCrossplane' },
    });
    expect(after.condition.message).toContain('(HandoverReady)');
    expect(decideAfterRepoint(given, gate.condition, followed('b-webhook-server'))).toMatchObject({
      action: 'patch',
      condition: { status: 'True', reason: 'HandoverReady' },
    });
  });

  it('a CRD target states its verdict at once after the repoint: it is what the apiserver routes by', () => {
    const given = input();
    const gate = decided(given);
    if (gate.action !== 'patch') throw new Error('not a patch');
    expect(decideAfterRepoint(given, gate.condition, undefined)).toEqual(gate);
  });

  it('an XRD that names no Service while a generated CRD still names one is a move, not a first apply', () => {
    const d = decided(
      input({
        currentServiceName: undefined,
        routes: [route(T, 'a-webhook-server')],
        replicas: { readyPods: ['b-1'], leases: [lease('b-1', serves([]))] },
      }),
    );
    expect(d).toMatchObject({ action: 'wait', condition: { reason: 'HandoverPending' } });
    expect(d.condition.message).toContain('from Service a-webhook-server');
  });

  it('a first apply waits until the target and what it routes by are Established', () => {
    const d = decided(
      input({
        currentServiceName: undefined,
        replicas: silentB(),
        notEstablished: `Crossplane has not generated CRD ${T} yet`,
      }),
    );
    expect(d).toMatchObject({ action: 'wait', condition: { reason: 'TargetNotEstablished' } });
    expect(d.condition.message).toContain(`Crossplane has not generated CRD ${T} yet`);
  });

  it('a generated CRD pointed elsewhere after it followed is reported as drift', () => {
    const d = decided(
      input({
        currentServiceName: 'b-webhook-server',
        routes: [route(T, 'x-webhook-server'), route(`claim${T}`, 'b-webhook-server', { agrees: true })],
        previous: { type: 'HandoverReady', status: 'True', reason: 'HandoverReady', message: 'moved' },
        previousDestination: 'b',
      }),
    );
    expect(d).toMatchObject({ action: 'wait', condition: { reason: 'RoutingDrifted' } });
    expect(d.condition.message).toContain(`CRD ${T} names Service x-webhook-server`);
  });

  it('a copy still to come after a CA rotation of the same destination is not drift', () => {
    const d = decided(
      input({
        currentServiceName: 'b-webhook-server',
        routes: [route(T, 'b-webhook-server')],
        previous: { type: 'HandoverReady', status: 'True', reason: 'HandoverReady', message: 'moved' },
        previousDestination: 'b',
      }),
    );
    expect(d.condition.reason).toBe('AwaitingCrossplane');
  });

  it('never states True while a generated CRD disagrees with the target (property)', () => {
    const arbRoute = fc.record({
      crd: fc.constantFrom(T, `claim${T}`),
      exists: fc.boolean(),
      established: fc.boolean(),
      serviceName: fc.option(fc.constantFrom('a-webhook-server', 'b-webhook-server'), { nil: undefined }),
      agrees: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(arbRoute, { minLength: 1, maxLength: 2 }),
        fc.option(fc.constantFrom('a-webhook-server', 'b-webhook-server'), { nil: undefined }),
        (routes, currentServiceName) => {
          const d = decideHandover(input({ currentServiceName, routes, replicas: silentB(['b-1']) }));
          if (d.action === 'hold' || d.condition.status !== 'True') return;
          // A True verdict about b without a repoint: the target already named b, and every route agreed.
          if (d.action === 'patch' && currentServiceName === 'b-webhook-server')
            expect(routes.every((r) => r.agrees)).toBe(true);
        },
      ),
    );
  });
});
