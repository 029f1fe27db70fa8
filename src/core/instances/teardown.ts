// The order an instance goes in once nothing holds it (deletion.ts allows): its replicas stop
// first, and only then does anything they need go.
//
// Why: every child is owned by the instance, so once its finalizer is released the garbage
// collector deletes them all at once. The ServiceAccount goes (its tokens stop authenticating:
// 401), the Lease Role and its binding go, and the Deployment's Pods are told to stop. A replica
// stopping first withdraws its served set (publishes the empty set in its Lease), and that write
// then fails: the Lease keeps claiming targets until it goes stale. So the instances handler keeps
// the finalizer, scales the Deployment to 0, and releases the finalizer only once the Deployment
// reports no replica left; the collector then removes the rest. The handler's identity may patch
// a Deployment, not delete one, and needs no more for this.
//
// Evidence, not a clock: a Deployment's `status.replicas` counts only Pods not being deleted, so
// it reads 0 the moment its Pods are told to stop, while they still run their preStop sleep and
// their withdrawal. `status.terminatingReplicas` counts those (Kubernetes 1.35+, feature gate
// DeploymentReplicaSetTerminatingReplicas, on by default). A cluster that does not report it
// leaves nothing on the bus that says when the Pods are gone, and the wait runs to its bound.
//
// Bounded: a Pod whose node is unreachable stays Terminating for as long as the node does, and a
// cluster with no Deployment controller never scales anything. Neither replica can withdraw
// anything then, so waiting longer buys no goodbye: past STOP_WAIT_MS from the start of the stop,
// the finalizer is released anyway, and the log says which replicas were left. The start is the
// DeletionBlocked condition's transition to False (written when the stop begins, so it survives a
// restart of the handler); dependents coming back flip it to True, and the next stop starts anew.
import type { V1Deployment } from '@kubernetes/client-node';
import type { Condition } from '../../api/conditions.ts';
import type { ConditionState } from '../conditions.ts';
import { DELETION_BLOCKED } from './deletion.ts';
import { TERMINATION_GRACE_SECONDS } from './render.ts';

/**
 * How long a stop may take before the finalizer goes without it: the replicas' termination grace
 * (their kubelet kills them at its end), and 30 s for the controllers to delete the Pods after the
 * scale-down and to report them gone.
 */
export const STOP_WAIT_MS = (TERMINATION_GRACE_SECONDS + 30) * 1000;

export interface StopInput {
  /** The Deployment as the scale-down left it; undefined when there is none (its namespace is gone). */
  deployment: V1Deployment | undefined;
  /** The instance's DeletionBlocked condition: a False one says since when its replicas stop. */
  deletionCondition: Condition | undefined;
  nowMs: number;
}

/** What is left of the replicas, as the Deployment reports it. */
export interface ReplicasLeft {
  /** The Deployment controller has seen the scale to 0 (observedGeneration). */
  observed: boolean;
  /** Pods not being deleted. */
  running: number;
  /** Pods being deleted that have not finished; undefined where the cluster does not report it. */
  terminating: number | undefined;
}

export type StopDecision =
  | { action: 'release'; reason: 'ReplicasStopped' | 'NoDeployment' | 'GraceElapsed'; message: string }
  | { action: 'release'; reason: 'StopWaitExpired'; message: string; left: ReplicasLeft }
  | { action: 'wait'; recheckAtMs: number; message: string; left: ReplicasLeft };

export function decideStop(input: StopInput): StopDecision {
  if (input.deployment === undefined)
    return { action: 'release', reason: 'NoDeployment', message: 'no Deployment: no replica to stop' };
  const left = replicasLeft(input.deployment);
  if (left.observed && left.running === 0 && left.terminating === 0)
    return { action: 'release', reason: 'ReplicasStopped', message: 'every replica has stopped' };
  const sinceMs = stoppingSinceMs(input.deletionCondition, input.nowMs);
  const untilMs = sinceMs + STOP_WAIT_MS;
  const waiting = describeLeft(left);
  if (input.nowMs >= untilMs && left.observed && left.running === 0 && left.terminating === undefined) {
    // Not an expired wait: on such a cluster the bound is the only evidence there is.
    return {
      action: 'release',
      reason: 'GraceElapsed',
      message: `the cluster does not report terminating Pods; ${STOP_WAIT_MS / 1000} s, past their termination grace, have passed since the scale to 0`,
    };
  }
  if (input.nowMs >= untilMs) {
    return {
      action: 'release',
      reason: 'StopWaitExpired',
      left,
      message: `replicas not stopped ${STOP_WAIT_MS / 1000} s after the scale to 0 (${waiting}); released without them: a replica still running cannot withdraw its Lease`,
    };
  }
  return {
    action: 'wait',
    recheckAtMs: untilMs,
    left,
    message: `scaled to 0, waiting for its replicas to stop (${waiting}) so each withdraws its Lease while its ServiceAccount and Role still exist; released at ${new Date(untilMs).toISOString()} at the latest`,
  };
}

/**
 * The DeletionBlocked condition while the replicas stop: False (nothing holds the deletion, and
 * no one needs to act), its reason saying why nothing holds it, its message what is still awaited.
 */
export function stoppingCondition(allowed: ConditionState, stop: StopDecision & { action: 'wait' }) {
  return {
    type: DELETION_BLOCKED,
    status: 'False',
    reason: allowed.reason,
    message: `${allowed.message}; ${stop.message}`,
  } satisfies ConditionState;
}

/**
 * A deletion blocked again (a target came to depend on the instance) after a stop had scaled its
 * Deployment to 0: what depends on it needs its replicas back.
 */
export function wasStopped(
  instance: { spec: { replicas: number } },
  deployment: V1Deployment | undefined,
): boolean {
  return deployment?.spec?.replicas === 0 && instance.spec.replicas > 0;
}

export function replicasLeft(deployment: V1Deployment): ReplicasLeft {
  const generation = deployment.metadata?.generation;
  const status = deployment.status ?? {};
  return {
    observed:
      deployment.spec?.replicas === 0 &&
      (generation === undefined || (status.observedGeneration ?? 0) >= generation),
    // omitempty: zero is absent.
    running: status.replicas ?? 0,
    // A pointer: present, zero included, wherever the cluster reports it.
    terminating: status.terminatingReplicas,
  };
}

function describeLeft(left: ReplicasLeft): string {
  if (!left.observed) return 'the Deployment controller has not yet observed the scale to 0';
  if (left.terminating === undefined) {
    return left.running > 0
      ? `${left.running} running`
      : 'the cluster does not report terminating Pods (Deployment status.terminatingReplicas): waiting out their termination grace';
  }
  return `${left.running} running, ${left.terminating} terminating`;
}

/** When the stop began: the condition's flip to False, or now when it has not been written yet. */
function stoppingSinceMs(condition: Condition | undefined, nowMs: number): number {
  if (condition?.status !== 'False') return nowMs;
  const since = Date.parse(condition.lastTransitionTime);
  return Number.isFinite(since) ? Math.min(since, nowMs) : nowMs;
}
