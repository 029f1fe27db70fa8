// lease-aggregate: one instance's served status from its replicas' Leases (BRIEF §5).
//
// Keyed by instance (`work.lease-aggregate.<p>.<instance>`), so one instance is aggregated by
// one replica at a time. The router sends work on a Lease's content change (never on a
// heartbeat: those go to HEARTBEATS and only refresh the view's renewTime), on a change of the
// instance's EndpointSlices, and on changes of the configs and targets the expected set is
// computed from. Time is the one cause without an event: a Lease that stops renewing goes stale
// at renewTime + leaseDurationSeconds, so the handler returns a durable re-check for exactly the
// next such moment (`core/instance-aggregate.ts` says when), never a poll.
//
// Order of effects: handover work first, the status second. The status is this concern's only
// memory of what it last decided; written first, a crash before the publish would leave a
// retry that sees "no change" and never sends the handover work. The other way round, a crash
// only repeats handover work, which is idempotent.
import type { JetStreamClient } from '@nats-io/jetstream';
import { KINDS, TARGET_VIEW_KINDS } from '../api/resources.ts';
import type { WorkItem } from '../bus/messages.ts';
import { done, type Handler, recheckAt } from '../bus/runtime/index.ts';
import type { ObjectView } from '../bus/view.ts';
import {
  decideInstanceAggregate,
  handoverTargets,
  type LeaseFacts,
  type PodReport,
  waitingTargets,
} from '../core/instance-aggregate.ts';
import type { KubeWriter } from '../kube/writer.ts';
import { countServedLeaseReport } from '../metrics/worker-metrics.ts';
import type { Clock } from '../runtime/clock.ts';
import {
  readExpectationView,
  readExpectedSets,
  readInstance,
  readInstanceLeases,
  readReadyPods,
} from '../views/view-reads.ts';
import { enqueueWork } from './enqueue-work.ts';
import { HANDOVER_WORK } from './handover/wakes.ts';

export const LEASE_AGGREGATE = 'lease-aggregate';

/** What the view must hold: the instance, its replicas, and what the expected set is computed from. */
export const LEASE_AGGREGATE_VIEW_KINDS = [
  'webhookserver',
  'lease',
  'endpointslice',
  'crdconfig',
  'xrdconfig',
  ...TARGET_VIEW_KINDS,
] as const;

/** What the handler reads: the view's read side (a test passes a fake). */
export type LeaseAggregateView = Pick<ObjectView, 'waitFor' | 'record' | 'list' | 'renewTime'>;

export interface LeaseAggregateDeps {
  view: LeaseAggregateView;
  writer: Pick<KubeWriter, 'applyStatus'>;
  /** Where handover work is published. */
  js: Pick<JetStreamClient, 'publish'>;
  clock: Clock;
  /** Partition count of the handover concern (config bus.partitions.handover). */
  handoverPartitions: number;
  /** Where an instance without spec.namespace runs: the operator's namespace. */
  defaultNamespace: string;
}

export function leaseAggregateHandler(deps: LeaseAggregateDeps): Handler<WorkItem> {
  return async (item, ctx) => {
    await deps.view.waitFor(item.seq);
    const read = readInstance(deps.view, item.key);
    // Deleted: nothing to write; its targets re-resolve through assign.
    if (read.kind === 'absent') return done;
    // An instance that does not parse cannot be aggregated; a fix to it is a new record and a new trigger.
    if (read.kind === 'unreadable') {
      ctx.log.warn({ reason: read.reason }, 'instance unreadable; not aggregated');
      return done;
    }
    const instance = read.object;
    const name = instance.metadata.name;
    const namespace = instance.spec.namespace ?? deps.defaultNamespace;
    const expectation = readExpectationView(deps.view);
    const nowMs = deps.clock.now();
    const leases = readInstanceLeases(deps.view, name, namespace);
    const decision = decideInstanceAggregate({
      leases,
      readyPods: readReadyPods(deps.view, name, namespace),
      expected: readExpectedSets(deps.view)(name),
      current: instance.status,
      nowMs,
    });
    countLeaseReports(leases, decision.reports);
    if (decision.changed) {
      const targets = handoverTargets(waitingTargets(expectation, name), decision.changedTargets);
      // All at once: a report often releases many targets, and each handover waits on its own.
      await Promise.all(
        targets.map((target) =>
          enqueueWork(deps.js, HANDOVER_WORK, deps.handoverPartitions, { key: target, causeSeq: item.seq }),
        ),
      );
      await deps.writer.applyStatus(
        KINDS.webhookserver,
        {
          apiVersion: KINDS.webhookserver.apiVersion,
          kind: KINDS.webhookserver.kind,
          metadata: { name },
          status: decision.status,
        },
        // Based on exactly the status the decision compared with: a stale attempt gets 409.
        {
          signal: ctx.signal,
          ...(instance.metadata.resourceVersion && { resourceVersion: instance.metadata.resourceVersion }),
        },
      );
      ctx.log.info(
        {
          reportingReplicas: decision.status.reportingReplicas,
          servedTargetCount: decision.status.servedTargetCount,
          reports: decision.reports.filter((r) => r.state !== 'live'),
          handover: targets.length,
        },
        'served status written',
      );
    }
    if (decision.nextExpiryMs === undefined) return done;
    return recheckAt(decision.nextExpiryMs, deps.clock.now(), 'a Lease changes state with time');
  };
}

/** Each Lease read, for metrics: its state (a truncated or undecodable one is alerted on) and its size. */
function countLeaseReports(leases: readonly LeaseFacts[], reports: readonly PodReport[]): void {
  const bytes = new Map(leases.map((l) => [l.name, l.servedSet?.length]));
  for (const report of reports) countServedLeaseReport(report.state, bytes.get(report.lease));
}
