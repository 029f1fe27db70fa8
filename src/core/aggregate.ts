// What an instance as a whole can serve: the intersection of what its live replicas report.
// A target two of three replicas can serve fails one request in three, so anything short of
// every replica does not count. The control plane never asks a pod; it reads the Leases the
// replicas publish, and a Lease not renewed within its duration is stale (the replica is
// wedged or gone) and does not count.
//
// "Unknown" is an answer of its own: if any live report is truncated or cannot be decoded,
// the intersection cannot be computed, and no partial answer is given instead.
import type { DecodedServedSet } from './served-set-codec.ts';

export interface ReplicaReport {
  /** The replica (pod) that published the Lease. */
  replica: string;
  /** Lease spec.renewTime, in epoch milliseconds; undefined when never renewed. */
  renewTimeMs: number | undefined;
  leaseDurationSeconds: number | undefined;
  report: DecodedServedSet;
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
      unreadable: Array<{ replica: string; why: 'truncated' | 'undecodable'; detail: string }>;
      reportingReplicas: number;
      staleReplicas: number;
      readyReplicas: number;
    };

/** Live while renewTime + leaseDurationSeconds is in the future. */
export function isLive(
  report: Pick<ReplicaReport, 'renewTimeMs' | 'leaseDurationSeconds'>,
  nowMs: number,
): boolean {
  if (report.renewTimeMs === undefined || report.leaseDurationSeconds === undefined) return false;
  return report.renewTimeMs + report.leaseDurationSeconds * 1000 > nowMs;
}

export function aggregate(
  reports: readonly ReplicaReport[],
  readyReplicas: number,
  nowMs: number,
): InstanceAggregate {
  const live = reports.filter((r) => isLive(r, nowMs));
  const reportingReplicas = live.length;
  const staleReplicas = reports.length - live.length;
  const unreadable = live.flatMap((r) => unreadableEntry(r));
  if (unreadable.length > 0)
    return { kind: 'unknown', unreadable, reportingReplicas, staleReplicas, readyReplicas };
  const sets = live.flatMap((r) => (r.report.kind === 'set' ? [r.report] : []));
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

function unreadableEntry(
  r: ReplicaReport,
): Array<{ replica: string; why: 'truncated' | 'undecodable'; detail: string }> {
  if (r.report.kind === 'truncated') {
    return [
      {
        replica: r.replica,
        why: 'truncated',
        detail: `${r.report.servedCount} targets exceed the annotation budget`,
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
