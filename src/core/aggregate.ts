// What an instance as a whole can serve: the intersection of what its live replicas report.
// A target two of three replicas can serve fails one request in three, so anything short of
// every replica does not count. The control plane never asks a pod; it reads the Leases the
// replicas publish, and a Lease not renewed within its duration is stale (the replica is
// wedged or gone) and does not count.
//
// "Unknown" is an answer of its own: if any live report is truncated, cannot be decoded, or comes
// from a replica whose view of the bus is behind, the intersection cannot be computed, and no
// partial answer is given instead.
//
// Clocks: liveness compares a renewTime written by a replica's node with this reader's `now`.
// The assumption is that clocks agree to well within a lease duration (NTP keeps them within
// a second; the duration is 90 s). A renewTime more than one duration ahead of `now` breaks
// the assumption beyond what can be interpreted, so that Lease is *undecidable* ("cannot
// tell", like an unreadable report) instead of live until some far future. A reader whose own
// clock runs ahead sees Leases stale, never live: it waits, it never overstates.
import type { DecodedServedSet } from './served-set-codec.ts';

export interface ReplicaReport {
  /** The Pod that published the Lease: its spec.holderIdentity, which is the Pod's name. */
  replica: string;
  /** Lease spec.renewTime, in epoch milliseconds; undefined when never renewed. */
  renewTimeMs: number | undefined;
  leaseDurationSeconds: number | undefined;
  report: DecodedServedSet;
}

/** Why a live Lease's report cannot be used. */
export type UnreadableWhy = 'truncated' | 'undecodable' | 'renewTimeAhead' | 'viewBehind';

export interface Unreadable {
  replica: string;
  why: UnreadableWhy;
  detail: string;
}

export type InstanceAggregate =
  | {
      kind: 'known';
      /** Targets every live replica serves, sorted. */
      servedTargets: string[];
      /** Targets no live replica rules out but some cannot settle yet (views still converging). */
      unsettledTargets: string[];
      reportingReplicas: number;
      staleReplicas: number;
      readyReplicas: number;
    }
  | {
      kind: 'unknown';
      /** The live replicas whose report cannot be used, with why. */
      unreadable: Unreadable[];
      reportingReplicas: number;
      staleReplicas: number;
      readyReplicas: number;
    };

/**
 * The state of a Lease at `nowMs`, in the order a reader trusts it: live while renewTime +
 * leaseDurationSeconds is in the future; stale once it is past (or never renewed); `ahead`
 * when renewTime is more than one duration ahead of the reader's clock (see the clocks note).
 */
export type LeaseState = 'live' | 'stale' | 'ahead';

export type LeaseTiming = Pick<ReplicaReport, 'renewTimeMs' | 'leaseDurationSeconds'>;

export function leaseState(lease: LeaseTiming, nowMs: number): LeaseState {
  if (lease.renewTimeMs === undefined || lease.leaseDurationSeconds === undefined) return 'stale';
  const durationMs = lease.leaseDurationSeconds * 1000;
  if (lease.renewTimeMs - durationMs > nowMs) return 'ahead';
  return lease.renewTimeMs + durationMs > nowMs ? 'live' : 'stale';
}

export function isLive(lease: LeaseTiming, nowMs: number): boolean {
  return leaseState(lease, nowMs) === 'live';
}

/**
 * When time alone next changes this Lease's state: a live Lease expires, an `ahead` one comes
 * within one duration of the reader's clock. Undefined for a stale Lease: only a renewal
 * changes it.
 */
export function nextLeaseTransitionMs(lease: LeaseTiming, nowMs: number): number | undefined {
  if (lease.renewTimeMs === undefined || lease.leaseDurationSeconds === undefined) return undefined;
  const durationMs = lease.leaseDurationSeconds * 1000;
  const state = leaseState(lease, nowMs);
  if (state === 'live') return lease.renewTimeMs + durationMs;
  if (state === 'ahead') return lease.renewTimeMs - durationMs;
  return undefined;
}

export function aggregate(
  reports: readonly ReplicaReport[],
  readyReplicas: number,
  nowMs: number,
): InstanceAggregate {
  const states = reports.map((r) => leaseState(r, nowMs));
  const counted = reports.filter((_, i) => states[i] !== 'stale');
  const reportingReplicas = counted.length;
  const staleReplicas = reports.length - counted.length;
  const unreadable = counted.flatMap((r) => unreadableEntry(r, nowMs));
  if (unreadable.length > 0)
    return { kind: 'unknown', unreadable, reportingReplicas, staleReplicas, readyReplicas };
  const sets = counted.flatMap((r) => (r.report.kind === 'set' ? [r.report] : []));
  const { served, unsettled } = intersect(sets);
  return {
    kind: 'known',
    servedTargets: [...served].sort(),
    unsettledTargets: [...unsettled].sort(),
    reportingReplicas,
    staleReplicas,
    readyReplicas,
  };
}

function unreadableEntry(r: ReplicaReport, nowMs: number): Unreadable[] {
  if (leaseState(r, nowMs) === 'ahead') {
    const aheadSeconds = Math.round(((r.renewTimeMs ?? nowMs) - nowMs) / 1000);
    return [
      {
        replica: r.replica,
        why: 'renewTimeAhead',
        detail: `renewTime is ${aheadSeconds}s ahead of this reader's clock, more than the lease duration`,
      },
    ];
  }
  if (r.report.kind === 'truncated') {
    return [
      {
        replica: r.replica,
        why: 'truncated',
        detail: `${r.report.servedCount} targets exceed the annotation budget`,
      },
    ];
  }
  if (r.report.kind === 'viewBehind') {
    return [
      {
        replica: r.replica,
        why: 'viewBehind',
        detail: `its view of the bus is not current (${r.report.servedCount} plans held)`,
      },
    ];
  }
  if (r.report.kind === 'undecodable')
    return [{ replica: r.replica, why: 'undecodable', detail: r.report.reason }];
  return [];
}

type ServedReport = Extract<DecodedServedSet, { kind: 'set' }>;

// A target is served if every replica serves it; unsettled if every replica serves it or cannot
// tell, and at least one cannot tell.
function intersect(sets: readonly ServedReport[]): { served: Set<string>; unsettled: Set<string> } {
  const [first, ...others] = sets;
  if (first === undefined) return { served: new Set(), unsettled: new Set() };
  const served = new Set<string>();
  const unsettled = new Set<string>();
  for (const candidate of [...first.served, ...first.unsettled]) {
    let allServe = first.served.has(candidate);
    let possible = true;
    for (const other of others) {
      if (other.served.has(candidate)) continue;
      allServe = false;
      if (!other.unsettled.has(candidate)) {
        possible = false;
        break;
      }
    }
    if (allServe) served.add(candidate);
    else if (possible) unsettled.add(candidate);
  }
  return { served, unsettled };
}
