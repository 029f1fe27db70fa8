// What one ConversionWebhookServer can serve, as its status says it: the lease-aggregate
// decision. Pure: it takes the instance's Leases (with the latest renewTime the view knows, so
// heartbeats count for liveness), its ready Pods, the reader's expected set and `now`, and says
// what the status should be, whether that differs from the status as stored, when time alone
// next changes the answer, and which targets' served state moved.
//
// Why "write only on change" holds by construction: every field the decision owns is a function
// of the Leases' *states* (live/stale/unreadable) and contents, never of renewTime itself, and
// every message is free of clocks and counters that tick. A renewal that keeps a Lease live
// therefore produces an identical status, and the handler writes nothing.
//
// Why the status alone is the memory: handlers are stateless, so "what changed" is computed
// against the stored status (the served list, the reporting count, the condition). Above the
// status list bound the previous list is not stored; then any digest change counts as a change
// of every target, which costs handover work, never a missed move.
//
// Decoding goes through the shared expected set (`expected-set.ts`), the same one the replica
// encoded against, so a digest-form report reads the same here as it meant there; a bucket
// whose views differ reads as unsettled, never as served.
import type { Condition } from '../api/conditions.ts';
import { webhookServiceName } from '../api/constants.ts';
import type { WebhookServerStatus } from '../api/webhook-server.ts';
import {
  aggregate,
  type InstanceAggregate,
  leaseState,
  nextLeaseTransitionMs,
  type ReplicaReport,
} from './aggregate.ts';
import { type ConditionState, findCondition, sameCondition, setCondition } from './conditions.ts';
import { type ExpectationView, resolutionsOf } from './expected-set.ts';
import type { DestinationReplicas } from './handover.ts';
import { compareNames } from './name-list.ts';
import { type DecodedServedSet, decodeServedSetOnce, type ExpectedSet } from './served-set-codec.ts';
import { targetListStatus } from './status-lists.ts';

/** The condition this decision owns on a ConversionWebhookServer. */
export const SERVED_TARGETS_KNOWN = 'ServedTargetsKnown';

export type ServedTargetsReason =
  | 'AllReported'
  | 'AwaitingReports'
  | 'NoReadyPods'
  | 'ReportTruncated'
  | 'ReportUndecodable'
  | 'ReportRenewTimeAhead'
  | 'ReportViewBehind';

/** A served-set Lease as read off the view: plain data. */
export interface LeaseFacts {
  /** metadata.name, `<prefix>-served-<pod>`. */
  name: string;
  /** spec.holderIdentity: the Pod that publishes it. */
  holder: string | undefined;
  /** The latest renewTime the view knows (record or heartbeat), epoch ms. */
  renewTimeMs: number | undefined;
  leaseDurationSeconds: number | undefined;
  /** The served-set annotation's value, if any. */
  servedSet: string | undefined;
}

/** How one Lease's report reads at `now`, in the order a reader trusts it. */
export type ReportState = 'live' | 'stale' | 'truncated' | 'undecodable' | 'futureSkewed' | 'viewBehind';

export interface PodReport {
  pod: string;
  lease: string;
  state: ReportState;
  /** Why an unreadable report cannot be used; free of clocks, so it is stable across renewals. */
  detail?: string;
}

export interface InstanceAggregateInput {
  leases: readonly LeaseFacts[];
  /** Ready Pods of the instance's Service (EndpointSlice endpoints, by targetRef name). */
  readyPods: readonly string[];
  /** `expectedSets(view)(instance)`: what the replicas encoded against. */
  expected: ExpectedSet;
  current: WebhookServerStatus | undefined;
  nowMs: number;
}

/** The status fields this decision owns; the served list fields are absent while unknown. */
export interface ServedStatus {
  reportingReplicas: number;
  servedTargets?: string[];
  servedTargetCount?: number;
  servedTargetsDigest?: string;
  conditions: Condition[];
}

export interface InstanceAggregateDecision {
  /** The gate's input, decoded the same way: the handover handler needs no second decoder. */
  replicas: DestinationReplicas;
  aggregate: InstanceAggregate;
  /** One per Lease, sorted by Pod. */
  reports: PodReport[];
  status: ServedStatus;
  /** Whether `status` differs from the stored one: write only then. */
  changed: boolean;
  /** Targets whose served state moved; `all` when the instance-level facts moved. */
  changedTargets: ReadonlySet<string> | 'all';
  /** When time alone next changes the answer (a live Lease expires, a skewed one comes in range). */
  nextExpiryMs: number | undefined;
}

/** Ready Pods named in a condition message before "and N more": bounded, and stable. */
const MESSAGE_POD_LIMIT = 10;

export function decideInstanceAggregate(input: InstanceAggregateInput): InstanceAggregateDecision {
  const { nowMs } = input;
  const leases = [...input.leases].sort((a, b) => compareNames(a.name, b.name));
  const replicaReports = leases.map((l) => replicaReportOf(l, input.expected));
  const readyPods = [...new Set(input.readyPods)].sort(compareNames);
  const result = aggregate(replicaReports, readyPods.length, nowMs);
  const reports = leases
    .map((l, i) => podReportOf(l, replicaReports[i] as ReplicaReport, nowMs))
    .sort((a, b) => compareNames(a.pod, b.pod) || compareNames(a.lease, b.lease));
  const condition = servedTargetsCondition(result, reports, readyPods);
  const status = servedStatus(result, condition, input.current, new Date(nowMs).toISOString());
  return {
    replicas: { readyPods, leases: replicaReports },
    aggregate: result,
    reports,
    status,
    changed: statusChanged(status, input.current),
    changedTargets: changedTargets(status, input.current),
    nextExpiryMs: nextExpiryMs(replicaReports, nowMs),
  };
}

/**
 * The targets that wait on `instance`: the resolver assigns them there, their config is usable,
 * and what the apiserver routes the target by does not name only the instance's Service yet. Only they need handover work
 * when what the instance serves changes.
 */
export function waitingTargets(view: ExpectationView, instance: string): string[] {
  const resolutions = resolutionsOf(view);
  const unusable = new Set(view.configs.filter((c) => !c.usable).map((c) => c.target));
  const service = webhookServiceName(instance);
  const out: string[] = [];
  for (const [target, resolution] of resolutions) {
    if (!resolution.ok || resolution.instance !== instance || unusable.has(target)) continue;
    const services = view.targets.get(target);
    if (services !== undefined && !(services.length === 1 && services[0] === service)) out.push(target);
  }
  return out.sort(compareNames);
}

/** The targets of `waiting` whose served state moved. */
export function handoverTargets(waiting: readonly string[], changed: ReadonlySet<string> | 'all'): string[] {
  return changed === 'all' ? [...waiting] : waiting.filter((t) => changed.has(t));
}

function replicaReportOf(lease: LeaseFacts, expected: ExpectedSet): ReplicaReport {
  return {
    replica: lease.holder ?? lease.name,
    renewTimeMs: lease.renewTimeMs,
    leaseDurationSeconds: lease.leaseDurationSeconds,
    report: reportOf(lease.servedSet, expected),
  };
}

function reportOf(value: string | undefined, expected: ExpectedSet): DecodedServedSet {
  if (value === undefined) return { kind: 'undecodable', reason: 'the Lease has no served-set annotation' };
  return decodeServedSetOnce(value, expected);
}

function podReportOf(lease: LeaseFacts, report: ReplicaReport, nowMs: number): PodReport {
  const base = { pod: report.replica, lease: lease.name };
  const timing = leaseState(report, nowMs);
  if (timing === 'stale') return { ...base, state: 'stale' };
  if (timing === 'ahead') {
    return {
      ...base,
      state: 'futureSkewed',
      detail: "renewTime is more than one lease duration ahead of this reader's clock",
    };
  }
  const decoded = report.report;
  if (decoded.kind === 'truncated') {
    return {
      ...base,
      state: 'truncated',
      detail: `${decoded.servedCount} targets exceed the annotation budget`,
    };
  }
  if (decoded.kind === 'viewBehind') {
    return {
      ...base,
      state: 'viewBehind',
      detail: `its view of the bus is not current (${decoded.servedCount} plans held)`,
    };
  }
  if (decoded.kind === 'undecodable') return { ...base, state: 'undecodable', detail: decoded.reason };
  return { ...base, state: 'live' };
}

type UnreadableState = Exclude<ReportState, 'live' | 'stale'>;

function isUnreadable(r: PodReport): r is PodReport & { state: UnreadableState } {
  return r.state !== 'live' && r.state !== 'stale';
}

const UNREADABLE_REASON: Record<UnreadableState, ServedTargetsReason> = {
  truncated: 'ReportTruncated',
  undecodable: 'ReportUndecodable',
  futureSkewed: 'ReportRenewTimeAhead',
  viewBehind: 'ReportViewBehind',
};

/**
 * Unknown first (an unreadable live report blocks moves: it is a verdict), then ready Pods
 * without a live report (the intersection says nothing about the instance yet), then none ready.
 */
function servedTargetsCondition(
  result: InstanceAggregate,
  reports: readonly PodReport[],
  readyPods: readonly string[],
): ConditionState {
  const unreadable = reports.filter(isUnreadable);
  const [first] = unreadable;
  if (first !== undefined) {
    return {
      type: SERVED_TARGETS_KNOWN,
      status: 'False',
      reason: UNREADABLE_REASON[first.state],
      message: `cannot tell what the instance serves: ${listBounded(unreadable.map((r) => `${r.pod} (${r.state}: ${r.detail})`))}`,
    };
  }
  if (readyPods.length === 0) {
    return { type: SERVED_TARGETS_KNOWN, status: 'False', reason: 'NoReadyPods', message: 'no ready Pods' };
  }
  const live = new Set(reports.filter((r) => r.state === 'live').map((r) => r.pod));
  const silent = readyPods.filter((p) => !live.has(p));
  const counts = `${readyPods.length} ready Pods, ${result.reportingReplicas} live reports`;
  if (silent.length > 0) {
    return {
      type: SERVED_TARGETS_KNOWN,
      status: 'False',
      reason: 'AwaitingReports',
      message: `${counts}; ready Pods without a live report: ${listBounded(silent)}`,
    };
  }
  return { type: SERVED_TARGETS_KNOWN, status: 'True', reason: 'AllReported', message: counts };
}

function listBounded(items: readonly string[]): string {
  const shown = items.slice(0, MESSAGE_POD_LIMIT).join(', ');
  const more = items.length - MESSAGE_POD_LIMIT;
  return more > 0 ? `${shown} and ${more} more` : shown;
}

function servedStatus(
  result: InstanceAggregate,
  condition: ConditionState,
  current: WebhookServerStatus | undefined,
  nowIso: string,
): ServedStatus {
  const ours = setCondition(current?.conditions, condition, nowIso).filter((c) => c.type === condition.type);
  const base = { reportingReplicas: result.reportingReplicas, conditions: ours };
  if (result.kind === 'unknown') return base;
  const list = targetListStatus(result.servedTargets);
  return {
    ...base,
    ...(list.targets !== undefined && { servedTargets: list.targets }),
    servedTargetCount: list.count,
    servedTargetsDigest: list.digest,
  };
}

function statusChanged(next: ServedStatus, current: WebhookServerStatus | undefined): boolean {
  return (
    next.reportingReplicas !== current?.reportingReplicas ||
    next.servedTargetCount !== current?.servedTargetCount ||
    next.servedTargetsDigest !== current?.servedTargetsDigest ||
    !sameList(next.servedTargets, current?.servedTargets) ||
    !sameCondition(
      findCondition(next.conditions, SERVED_TARGETS_KNOWN),
      findCondition(current?.conditions, SERVED_TARGETS_KNOWN),
    )
  );
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * A move of the count or the condition is an instance-level change (a Pod started or stopped
 * reporting, a report became unreadable): every waiting target's gate may flip. Otherwise only
 * the targets that entered or left the list; all of them when a list is not stored.
 */
function changedTargets(
  next: ServedStatus,
  current: WebhookServerStatus | undefined,
): ReadonlySet<string> | 'all' {
  const nextCondition = findCondition(next.conditions, SERVED_TARGETS_KNOWN);
  const instanceLevel =
    next.reportingReplicas !== current?.reportingReplicas ||
    !sameCondition(nextCondition, findCondition(current?.conditions, SERVED_TARGETS_KNOWN));
  if (instanceLevel) return 'all';
  if (next.servedTargetsDigest === current?.servedTargetsDigest) return new Set();
  if (next.servedTargets === undefined || current?.servedTargets === undefined) return 'all';
  const before = new Set(current.servedTargets);
  const after = new Set(next.servedTargets);
  return new Set([...before, ...after].filter((t) => before.has(t) !== after.has(t)));
}

function nextExpiryMs(reports: readonly ReplicaReport[], nowMs: number): number | undefined {
  let next: number | undefined;
  for (const r of reports) {
    const at = nextLeaseTransitionMs(r, nowMs);
    if (at !== undefined && (next === undefined || at < next)) next = at;
  }
  return next;
}
