import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { WebhookServerStatus } from '../api/webhook-server.ts';
import { leaseState } from './aggregate.ts';
import { type ExpectationView, expectedSets, type ViewConfig } from './expected-set.ts';
import {
  decideInstanceAggregate,
  handoverTargets,
  type InstanceAggregateInput,
  type LeaseFacts,
  SERVED_TARGETS_KNOWN,
  waitingTargets,
} from './instance-aggregate.ts';
import { type ExpectedSet, encodeServedSet, expectedSetOf } from './served-set-codec.ts';

const NOW = 1_700_000_000_000;
const NO_EXPECTATION = expectedSetOf([]);

/** A replica's Lease, its annotation written by the real encoder. */
function lease(
  pod: string,
  served: string[],
  opts: { ageSeconds?: number; expected?: ExpectedSet; value?: string } = {},
): LeaseFacts {
  return {
    name: `switchyard-served-${pod}`,
    holder: pod,
    renewTimeMs: NOW - (opts.ageSeconds ?? 5) * 1000,
    leaseDurationSeconds: 90,
    servedSet: opts.value ?? encodeServedSet(served, opts.expected ?? NO_EXPECTATION),
  };
}

function decide(leases: LeaseFacts[], readyPods: string[], extra: Partial<InstanceAggregateInput> = {}) {
  return decideInstanceAggregate({
    leases,
    readyPods,
    expected: NO_EXPECTATION,
    current: undefined,
    nowMs: NOW,
    ...extra,
  });
}

/** The status as the apiserver would store it after the handler applied the decision. */
function stored(status: ReturnType<typeof decide>['status']): WebhookServerStatus {
  return { ...status };
}

const conditionOf = (d: ReturnType<typeof decide>) =>
  d.status.conditions.find((c) => c.type === SERVED_TARGETS_KNOWN);

describe('the lease aggregate of an instance', () => {
  const cases: Array<{
    name: string;
    leases: LeaseFacts[];
    ready: string[];
    served: string[] | undefined;
    reporting: number;
    reason: string;
    states: Record<string, string>;
  }> = [
    {
      name: 'two replicas with overlapping sets: the intersection',
      leases: [lease('p1', ['a.x.io', 'b.x.io']), lease('p2', ['b.x.io', 'c.x.io'])],
      ready: ['p1', 'p2'],
      served: ['b.x.io'],
      reporting: 2,
      reason: 'AllReported',
      states: { p1: 'live', p2: 'live' },
    },
    {
      name: 'a stale Lease neither vetoes nor vouches',
      leases: [lease('p1', ['a.x.io', 'b.x.io']), lease('p2', [], { ageSeconds: 91 })],
      ready: ['p1', 'p2'],
      served: ['a.x.io', 'b.x.io'],
      reporting: 1,
      reason: 'AwaitingReports',
      states: { p1: 'live', p2: 'stale' },
    },
    {
      name: 'a truncated report: cannot tell, no list at all',
      leases: [lease('p1', ['a.x.io']), lease('p2', [], { value: 'v2.t.5000' })],
      ready: ['p1', 'p2'],
      served: undefined,
      reporting: 2,
      reason: 'ReportTruncated',
      states: { p1: 'live', p2: 'truncated' },
    },
    {
      name: 'a replica whose view is behind the bus: cannot tell',
      leases: [lease('p1', ['a.x.io']), lease('p2', [], { value: 'v2.b.7' })],
      ready: ['p1', 'p2'],
      served: undefined,
      reporting: 2,
      reason: 'ReportViewBehind',
      states: { p1: 'live', p2: 'viewBehind' },
    },
    {
      name: 'garbage in the annotation: undecodable',
      leases: [lease('p1', ['a.x.io']), lease('p2', [], { value: 'v2.n.!!!' })],
      ready: ['p1', 'p2'],
      served: undefined,
      reporting: 2,
      reason: 'ReportUndecodable',
      states: { p1: 'live', p2: 'undecodable' },
    },
    {
      name: 'no annotation: undecodable',
      leases: [{ ...lease('p1', []), servedSet: undefined }],
      ready: ['p1'],
      served: undefined,
      reporting: 1,
      reason: 'ReportUndecodable',
      states: { p1: 'undecodable' },
    },
    {
      name: 'renewTime more than a duration ahead: future-skewed, cannot tell',
      leases: [lease('p1', ['a.x.io']), lease('p2', ['a.x.io'], { ageSeconds: -200 })],
      ready: ['p1', 'p2'],
      served: undefined,
      reporting: 2,
      reason: 'ReportRenewTimeAhead',
      states: { p1: 'live', p2: 'futureSkewed' },
    },
    {
      name: 'a ready Pod without a Lease: the list says nothing about the instance yet',
      leases: [lease('p1', ['a.x.io'])],
      ready: ['p1', 'p2'],
      served: ['a.x.io'],
      reporting: 1,
      reason: 'AwaitingReports',
      states: { p1: 'live' },
    },
    {
      name: 'no ready Pods',
      leases: [],
      ready: [],
      served: [],
      reporting: 0,
      reason: 'NoReadyPods',
      states: {},
    },
  ];

  for (const c of cases) {
    it(c.name, () => {
      const d = decide(c.leases, c.ready);
      expect(d.status.servedTargets).toEqual(c.served);
      expect(d.status.reportingReplicas).toBe(c.reporting);
      expect(conditionOf(d)?.reason).toBe(c.reason);
      expect(Object.fromEntries(d.reports.map((r) => [r.pod, r.state]))).toEqual(c.states);
      expect(d.changed).toBe(true);
      if (c.served === undefined) {
        expect(d.status.servedTargetCount, 'an unknown aggregate must not publish a count').toBeUndefined();
        expect(conditionOf(d)?.message).toContain('p');
      }
    });
  }

  it('says when time alone changes it: the first live Lease to expire, or a skewed one coming into range', () => {
    const d = decide(
      [lease('p1', [], { ageSeconds: 10 }), lease('p2', [], { ageSeconds: 30 })],
      ['p1', 'p2'],
    );
    expect(d.nextExpiryMs).toBe(NOW - 30_000 + 90_000);
    const skewed = decide([lease('p1', [], { ageSeconds: -200 })], ['p1']);
    expect(skewed.nextExpiryMs).toBe(NOW + 200_000 - 90_000);
    expect(decide([lease('p1', [], { ageSeconds: 100 })], ['p1']).nextExpiryMs).toBeUndefined();
  });

  it('drops a Lease that stops renewing at its expiry, and reports the instance-level change', () => {
    const leases = [lease('p1', ['a.x.io', 'b.x.io']), lease('p2', ['a.x.io'], { ageSeconds: 60 })];
    const before = decide(leases, ['p1', 'p2']);
    expect(before.status.servedTargets).toEqual(['a.x.io']);
    const after = decide(leases, ['p1', 'p2'], {
      nowMs: before.nextExpiryMs ?? 0,
      current: stored(before.status),
    });
    expect(after.status.servedTargets).toEqual(['a.x.io', 'b.x.io']);
    expect(after.status.reportingReplicas).toBe(1);
    expect(after.changed).toBe(true);
    expect(after.changedTargets).toBe('all');
  });

  it('names the targets that entered or left the list when nothing else moved', () => {
    const first = decide([lease('p1', ['a.x.io', 'b.x.io'])], ['p1']);
    const second = decide([lease('p1', ['b.x.io', 'c.x.io'])], ['p1'], { current: stored(first.status) });
    expect(second.changed).toBe(true);
    expect(second.changedTargets).toEqual(new Set(['a.x.io', 'c.x.io']));
  });

  it('keeps the condition transition time across rewrites of the same status', () => {
    const first = decide([lease('p1', ['a.x.io'])], ['p1']);
    const later = decide([lease('p1', ['a.x.io'])], ['p1'], {
      nowMs: NOW + 10_000,
      current: stored(first.status),
    });
    expect(conditionOf(later)?.lastTransitionTime).toBe(conditionOf(first)?.lastTransitionTime);
  });
});

describe('properties of the lease aggregate', () => {
  const targetArb = fc.constantFrom('a.x.io', 'b.x.io', 'c.x.io', 'd.x.io');
  const replicaArb = fc.record({
    served: fc.uniqueArray(targetArb),
    ageSeconds: fc.integer({ min: 0, max: 200 }),
    kind: fc.constantFrom('set', 'set', 'set', 'truncated', 'garbage'),
    ready: fc.boolean(),
  });
  const fleetArb = fc.array(replicaArb, { maxLength: 5 });
  type Fleet = Array<{ served: string[]; ageSeconds: number; kind: string; ready: boolean }>;
  const leasesOf = (fleet: Fleet, shiftSeconds = 0) =>
    fleet.map((r, i) =>
      lease(`p${i}`, r.served, {
        ageSeconds: r.ageSeconds - shiftSeconds,
        ...(r.kind === 'truncated' && { value: 'v2.t.9999' }),
        ...(r.kind === 'garbage' && { value: `v2.n.${r.served.join('')}%` }),
      }),
    );
  const readyOf = (fleet: Fleet) => fleet.flatMap((r, i) => (r.ready ? [`p${i}`] : []));

  it('a heartbeat alone (renewTime moves, every Lease keeps its state) changes nothing', () => {
    fc.assert(
      fc.property(fleetArb, fc.integer({ min: 1, max: 600 }), (fleet, elapsedSeconds) => {
        const leases = leasesOf(fleet);
        const first = decide(leases, readyOf(fleet));
        const now = NOW + elapsedSeconds * 1000;
        // Every live Lease renews just now; the stale ones stay as they were (and stay stale).
        const renewed = leases.map((l) => (leaseState(l, NOW) === 'live' ? { ...l, renewTimeMs: now } : l));
        // A Lease ahead of the clock comes into range with time alone, by design: not a heartbeat.
        fc.pre(renewed.every((l) => leaseState(l, now) === leaseState(l, NOW)));
        const next = decide(renewed, readyOf(fleet), { current: stored(first.status), nowMs: now });
        expect(next.changed).toBe(false);
        expect(next.changedTargets).toEqual(new Set());
      }),
    );
  });

  it('does not depend on the order of Leases or ready Pods', () => {
    fc.assert(
      fc.property(fleetArb, fc.integer(), (fleet, seed) => {
        const leases = leasesOf(fleet);
        const ready = readyOf(fleet);
        const shuffle = <T>(xs: T[]) =>
          xs
            .map((x, i) => ({ x, k: (i * 2654435761 + seed) >>> 0 }))
            .sort((a, b) => a.k - b.k)
            .map((e) => e.x);
        const a = decide(leases, ready);
        const b = decide(shuffle(leases), shuffle(ready));
        expect(b.status).toEqual(a.status);
        expect(b.reports).toEqual(a.reports);
        expect(b.nextExpiryMs).toBe(a.nextExpiryMs);
      }),
    );
  });

  it('never lists a target a live, ready replica does not report, and never counts a stale Lease', () => {
    fc.assert(
      fc.property(fleetArb, (fleet) => {
        const d = decide(leasesOf(fleet), readyOf(fleet));
        const live = fleet.filter((r) => r.ageSeconds < 90);
        expect(d.status.reportingReplicas).toBe(live.length);
        for (const t of d.status.servedTargets ?? []) {
          for (const r of live) expect(r.served, `${t} listed though a live replica lacks it`).toContain(t);
        }
        if (live.some((r) => r.kind !== 'set')) expect(d.status.servedTargets).toBeUndefined();
      }),
    );
  });
});

describe('decoding against the shared expected set', () => {
  const many = Array.from({ length: 1500 }, (_, i) => `t${String(i).padStart(4, '0')}.x.io`);
  const config = (target: string): ViewConfig => ({
    config: `CRDConversionConfig/${target}`,
    target,
    usable: true,
  });
  const viewOf = (targets: string[]): ExpectationView => ({
    configs: targets.map(config),
    instances: [{ metadata: { name: 'a' }, spec: { default: true } }],
    targets: new Map(targets.map((t) => [t, []])),
  });

  it('reads the digest form the replica wrote from the same view, missing targets excluded', () => {
    const expected = expectedSets(viewOf(many))('a');
    const served = many.filter((t) => t !== 't0007.x.io');
    const value = encodeServedSet(served, expected);
    expect(value.startsWith('v2.e.'), 'the fixture must exercise the digest form').toBe(true);
    const d = decide([lease('p1', [], { value })], ['p1'], { expected });
    expect(d.status.servedTargetCount).toBe(1499);
    expect(d.status.servedTargets, 'above the list bound only count and digest').toBeUndefined();
  });

  it('a reader whose view differs cannot settle the differing bucket, and never overstates', () => {
    const writer = expectedSets(viewOf(many))('a');
    const value = encodeServedSet(many, writer);
    const reader = expectedSets(viewOf([...many, 'zz-new.x.io']))('a');
    const d = decide([lease('p1', [], { value })], ['p1'], { expected: reader });
    expect(d.aggregate.kind).toBe('known');
    expect(d.status.servedTargetCount).toBeLessThan(many.length);
    expect(d.aggregate.kind === 'known' && d.aggregate.unsettledTargets).toContain('zz-new.x.io');
  });
});

describe('which targets get handover work', () => {
  const view: ExpectationView = {
    configs: [
      { config: 'CRDConversionConfig/w', target: 'widgets.x.io', usable: true },
      { config: 'CRDConversionConfig/g', target: 'gadgets.x.io', usable: true },
      { config: 'CRDConversionConfig/h', target: 'here.x.io', usable: true },
      { config: 'CRDConversionConfig/i', target: 'invalid.x.io', usable: false },
      { config: 'CRDConversionConfig/e', target: 'elsewhere.x.io', pinnedTo: 'b', usable: true },
    ],
    instances: [
      { metadata: { name: 'a' }, spec: { default: true } },
      { metadata: { name: 'b' }, spec: {} },
    ],
    targets: new Map([
      ['widgets.x.io', ['b-webhook-server']],
      ['gadgets.x.io', []],
      ['here.x.io', ['a-webhook-server']],
      ['invalid.x.io', ['b-webhook-server']],
      ['elsewhere.x.io', ['a-webhook-server']],
    ]),
  };

  it('waiting: assigned to the instance, usable, and not yet pointing at it', () => {
    expect(waitingTargets(view, 'a')).toEqual(['gadgets.x.io', 'widgets.x.io']);
    expect(waitingTargets(view, 'b')).toEqual(['elsewhere.x.io']);
  });

  it('only the waiting targets whose served state changed, or all of them on an instance-level change', () => {
    const waiting = waitingTargets(view, 'a');
    expect(handoverTargets(waiting, new Set(['widgets.x.io', 'here.x.io']))).toEqual(['widgets.x.io']);
    expect(handoverTargets(waiting, 'all')).toEqual(waiting);
    expect(handoverTargets(waiting, new Set())).toEqual([]);
  });
});
