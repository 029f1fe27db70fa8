// The handover gate: when may a target's spec.conversion be pointed at the instance the
// resolver now picks, and what does the config's HandoverReady condition say meanwhile.
//
// A move from A to B is patched only once every live replica of B reports the target
// (reportingReplicas ≥ readyReplicas and the target is in the intersection); until then A keeps
// serving, because A's replicas hold a plan while the live target still names A's Service (see
// `shouldHoldPlan`). A first apply has nothing to hand over from and is patched at once.
//
// Two exceptions decide the rest. If B publishes nothing at all (an old fleet mid-upgrade, or a
// namespace missing the Lease Role), blocking forever would be a regression, so after a grace
// period the move proceeds and says so: HandoverUnverified. A truncated or undecodable report
// is different: B is publishing, and what it says cannot be read, so the move blocks.
import type { ConditionStatus } from '../api/conditions.ts';
import { webhookServiceName } from '../api/constants.ts';
import type { InstanceAggregate } from './aggregate.ts';

export const HANDOVER_READY = 'HandoverReady';

/**
 * How long a move waits for a destination that publishes nothing before proceeding unverified.
 * Twice the replicas' heartbeat (30 s) plus margin: a replica that has just started has had
 * time to publish its first Lease, so silence by then means it does not publish at all.
 */
export const UNREPORTED_GRACE_MS = 90_000;

/** A move still waiting after this long is called stalled, so operators can alert on it. */
export const STALL_AFTER_MS = 10 * 60_000;

export type HandoverReason =
  | 'FirstApply'
  | 'NoMove'
  | 'HandoverReady'
  | 'HandoverUnverified'
  | 'DestinationNotReady'
  | 'HandoverAwaitingReports'
  | 'HandoverPending'
  | 'HandoverUnknown'
  | 'HandoverStalled';

export interface HandoverCondition {
  type: typeof HANDOVER_READY;
  status: ConditionStatus;
  reason: HandoverReason;
  message: string;
}

export type HandoverAction = 'patch' | 'wait';

export interface HandoverDecision {
  action: HandoverAction;
  condition: HandoverCondition;
}

export interface HandoverInput {
  target: string;
  /** The instance the resolver assigns the target to now. */
  destination: string;
  /** The Service name the live target's spec.conversion points at, if it uses a webhook Service. */
  currentServiceName: string | undefined;
  /** Names of all instances that exist: a Service of one of them means a move, not a first apply. */
  instances: ReadonlySet<string>;
  /** The destination's aggregate; readyReplicas is its Deployment's. */
  destinationAggregate: InstanceAggregate;
  /** How long this move has been waiting (since HandoverReady last turned False), 0 if it just began. */
  waitedMs: number;
  /** The current HandoverReady condition, if any: a verdict on the last move outlives it. */
  previous?: HandoverCondition | undefined;
}

export function decideHandover(input: HandoverInput): HandoverDecision {
  const source = instanceBehind(input.currentServiceName, input.instances);
  if (source === input.destination) return noMove(input);
  if (source === undefined) {
    return patch(
      'True',
      'FirstApply',
      `no instance serves ${input.target} yet; pointing it at ${input.destination}`,
    );
  }
  return gateMove(input, source);
}

/**
 * The data-plane rule: a replica holds a compiled plan for a target while its instance is the
 * one assigned, or while the live target still names its instance's Service (compared by
 * Service name only). The second half keeps the losing side serving until the repoint lands,
 * and covers moves made by hand-editing webhookServerRef.
 */
export function shouldHoldPlan(
  instance: string,
  assignedInstance: string | undefined,
  currentServiceName: string | undefined,
): boolean {
  return assignedInstance === instance || currentServiceName === webhookServiceName(instance);
}

function instanceBehind(serviceName: string | undefined, instances: ReadonlySet<string>): string | undefined {
  if (serviceName === undefined) return undefined;
  for (const instance of instances) if (webhookServiceName(instance) === serviceName) return instance;
  return undefined;
}

function noMove(input: HandoverInput): HandoverDecision {
  if (input.previous?.status === 'True') return { action: 'patch', condition: input.previous };
  return patch('True', 'NoMove', `${input.target} is already served by ${input.destination}`);
}

function gateMove(input: HandoverInput, source: string): HandoverDecision {
  const { destination, destinationAggregate: agg, target, waitedMs } = input;
  const move = `moving ${target} from ${source} to ${destination}`;
  if (agg.readyReplicas === 0)
    return wait(input, 'DestinationNotReady', `${move}: ${destination} has no ready replicas`);
  if (agg.reportingReplicas === 0 && agg.staleReplicas > 0) {
    // It does publish (its Lease Role works), but no replica renews: wedged, not silent.
    return wait(
      input,
      'HandoverPending',
      `${move}: all ${agg.staleReplicas} Leases of ${destination} are stale`,
    );
  }
  if (agg.reportingReplicas === 0) {
    if (waitedMs < UNREPORTED_GRACE_MS) {
      return wait(
        input,
        'HandoverAwaitingReports',
        `${move}: waiting for ${destination}'s replicas to publish what they serve`,
      );
    }
    return patch(
      'True',
      'HandoverUnverified',
      `${move} without verification: no replica of ${destination} published a served set within ${UNREPORTED_GRACE_MS / 1000}s ` +
        '(replicas from before Lease publishing, or no Lease Role in its namespace)',
    );
  }
  if (agg.kind === 'unknown') {
    const who = agg.unreadable.map((u) => `${u.replica} (${u.why}: ${u.detail})`).join(', ');
    return wait(input, 'HandoverUnknown', `${move}: blocked, cannot read what ${destination} serves: ${who}`);
  }
  if (agg.reportingReplicas < agg.readyReplicas) {
    return wait(
      input,
      'HandoverPending',
      `${move}: ${agg.reportingReplicas} of ${agg.readyReplicas} ready replicas report`,
    );
  }
  if (!agg.servedTargets.includes(target)) {
    const why = agg.unsettledTargets.includes(target)
      ? 'some replicas report it in a part of their set this view cannot settle yet'
      : 'not every replica can serve it yet';
    return wait(input, 'HandoverPending', `${move}: ${why}`);
  }
  return patch(
    'True',
    'HandoverReady',
    `${move}: all ${agg.reportingReplicas} live replicas of ${destination} serve it`,
  );
}

function patch(status: ConditionStatus, reason: HandoverReason, message: string): HandoverDecision {
  return { action: 'patch', condition: { type: HANDOVER_READY, status, reason, message } };
}

// A wait that outlasts STALL_AFTER_MS keeps waiting, under a reason that says it is stuck.
function wait(input: HandoverInput, reason: HandoverReason, message: string): HandoverDecision {
  const stalled = input.waitedMs >= STALL_AFTER_MS && reason !== 'HandoverUnknown';
  const minutes = Math.floor(input.waitedMs / 60_000);
  return {
    action: 'wait',
    condition: {
      type: HANDOVER_READY,
      status: 'False',
      reason: stalled ? 'HandoverStalled' : reason,
      message: stalled ? `${message} (stalled: waiting for ${minutes} min, was ${reason})` : message,
    },
  };
}
