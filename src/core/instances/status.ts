// The part of a ConversionWebhookServer's status that its Deployment decides: replica counts,
// Available and Progressing, observedGeneration. The served and assigned lists belong to other
// concerns (lease-aggregate, assign), each applying its own fields with its own field manager.
//
// Available means "some replica can take a conversion", not the Deployment's own Available
// (which, with maxUnavailable 0, is false during every rollout while all old replicas serve).
// Progressing says whether the Deployment is still converging on the instance's spec, and calls
// out a rollout stuck past its progress deadline.
//
// The handler computes this after applying the rendered Deployment, so observedGeneration (the
// instance's generation) states that the children reflect that spec. A decision that changes
// nothing says so, and the handler writes nothing: a heartbeat of Pods is no status write.
import type { V1Deployment } from '@kubernetes/client-node';
import type { Condition } from '../../api/conditions.ts';
import type { WebhookServer } from '../../api/webhook-server.ts';
import { type ConditionState, findCondition, sameCondition, setCondition } from '../conditions.ts';

export const AVAILABLE = 'Available';
export const PROGRESSING = 'Progressing';

export type AvailableReason =
  | 'ReplicasAvailable'
  | 'NoReplicasAvailable'
  | 'ScaledToZero'
  | 'DeploymentMissing'
  | 'Deleting';
export type ProgressingReason =
  | 'RolloutComplete'
  | 'RollingOut'
  | 'ProgressDeadlineExceeded'
  | 'DeploymentMissing'
  | 'Deleting';

/** The fields this concern owns, ready for a status apply. */
export interface InstanceWorkloadStatus {
  observedGeneration: number | undefined;
  replicas: number;
  readyReplicas: number;
  conditions: Condition[];
}

export interface InstanceStatusDecision {
  status: InstanceWorkloadStatus;
  /** False when the instance's status already says all of this: write nothing. */
  changed: boolean;
}

/**
 * `stopping`: the instance is being deleted and its Deployment scaled to 0 (teardown.ts). Its
 * spec no longer says how many replicas there should be, and no replica should take work.
 */
export function instanceStatus(
  instance: WebhookServer,
  deployment: V1Deployment | undefined,
  nowIso: string,
  { stopping = false }: { stopping?: boolean } = {},
): InstanceStatusDecision {
  const generation = instance.metadata.generation;
  const current = instance.status ?? {};
  let conditions = current.conditions;
  const next = stopping
    ? stoppingConditions()
    : [availableCondition(instance, deployment), progressingCondition(instance, deployment)];
  for (const condition of next) {
    conditions = setCondition(conditions, condition, nowIso, generation);
  }
  const own = (conditions ?? []).filter((c) => c.type === AVAILABLE || c.type === PROGRESSING);
  const status: InstanceWorkloadStatus = {
    observedGeneration: generation,
    replicas: deployment?.status?.replicas ?? 0,
    readyReplicas: deployment?.status?.readyReplicas ?? 0,
    conditions: own,
  };
  const changed =
    current.observedGeneration !== status.observedGeneration ||
    current.replicas !== status.replicas ||
    current.readyReplicas !== status.readyReplicas ||
    own.some((c) => !sameCondition(c, findCondition(current.conditions, c.type)));
  return { status, changed };
}

/** A condition of one type, reasons typed by it. */
function conditionOf<Reason extends string>(type: string) {
  return (status: 'True' | 'False', reason: Reason, message: string): ConditionState => ({
    type,
    status,
    reason,
    message,
  });
}

function stoppingConditions(): ConditionState[] {
  const message = 'the instance is being deleted: its replicas are scaled to 0 and stop before it goes';
  return [
    conditionOf<AvailableReason>(AVAILABLE)('False', 'Deleting', message),
    conditionOf<ProgressingReason>(PROGRESSING)('True', 'Deleting', message),
  ];
}

function availableCondition(instance: WebhookServer, deployment: V1Deployment | undefined): ConditionState {
  const state = conditionOf<AvailableReason>(AVAILABLE);
  if (deployment === undefined)
    return state('False', 'DeploymentMissing', 'the Deployment has not been created yet');
  const wanted = instance.spec.replicas;
  if (wanted === 0)
    return state('False', 'ScaledToZero', 'spec.replicas is 0: no replica serves conversions');
  const available = deployment.status?.availableReplicas ?? 0;
  if (available === 0) {
    return state(
      'False',
      'NoReplicasAvailable',
      `0 of ${wanted} replicas available: conversions of its targets fail`,
    );
  }
  return state('True', 'ReplicasAvailable', `${available} of ${wanted} replicas available`);
}

function progressingCondition(instance: WebhookServer, deployment: V1Deployment | undefined): ConditionState {
  const state = conditionOf<ProgressingReason>(PROGRESSING);
  if (deployment === undefined)
    return state('True', 'DeploymentMissing', 'the Deployment has not been created yet');
  const deploymentProgress = deployment.status?.conditions?.find((c) => c.type === 'Progressing');
  if (deploymentProgress?.status === 'False' && deploymentProgress.reason === 'ProgressDeadlineExceeded') {
    return state('False', 'ProgressDeadlineExceeded', deploymentProgress.message ?? 'the rollout is stuck');
  }
  const pending = rolloutPending(instance, deployment);
  if (pending !== undefined) return state('True', 'RollingOut', pending);
  return state('False', 'RolloutComplete', `all ${instance.spec.replicas} replicas run the current spec`);
}

/** What the rollout still waits for, or undefined when the Deployment has converged. */
function rolloutPending(instance: WebhookServer, deployment: V1Deployment): string | undefined {
  const generation = deployment.metadata?.generation;
  const status = deployment.status ?? {};
  if (generation !== undefined && (status.observedGeneration ?? 0) < generation) {
    return 'the Deployment controller has not yet observed the latest spec';
  }
  const wanted = instance.spec.replicas;
  const updated = status.updatedReplicas ?? 0;
  if (updated < wanted) return `${updated} of ${wanted} replicas updated`;
  const total = status.replicas ?? 0;
  if (total > updated) return `${total - updated} old replica(s) still terminating`;
  const available = status.availableReplicas ?? 0;
  if (available < updated) return `${available} of ${updated} updated replicas available`;
  return undefined;
}
