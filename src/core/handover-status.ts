// The part of a config's status the handover owns: the HandoverReady condition, the destination
// it is about (status.handoverDestination) and the progress of a waiting move (status.handover).
// Assign also sets the first two, once per new assignment, in the write that records it (a merge
// patch: core/assign-decision.ts); the handover's next statement takes them back. The phase is
// config-status's alone (core/config-status.ts derives Applied from the target's
// spec.conversion): two managers stating one field would undo each other's writes, each write
// waking the other. Pure, so "write only when it changes" is
// decided (and tested) apart from the write.
import type { Condition } from '../api/conditions.ts';
import type { ConfigStatus, HandoverProgress } from '../api/conversion-config.ts';
import { findCondition, sameCondition, setCondition } from './conditions.ts';
import { type GateDecision, HANDOVER_READY } from './handover.ts';

const ASSIGNMENT_CHANGED = 'AssignmentChanged';

export interface HandoverStatus {
  /** Only the HandoverReady entry: a server-side apply states the one list entry this concern owns. */
  conditions: [Condition];
  /** The instance the condition is about, so that a later look knows whether it still holds. */
  handoverDestination: string;
  /** Absent: nothing waits, and the apply removes what this concern stored before. */
  handover?: HandoverProgress;
}

export interface HandoverStatusInput {
  current: ConfigStatus | undefined;
  decision: GateDecision;
  /** The destination the decision was made for (the resolver's answer). */
  destination: string;
  /**
   * The config's metadata.generation the decision read, stated as the condition's
   * observedGeneration: `kubectl wait --for=condition=HandoverReady` after a spec change does not
   * take a verdict about an older spec for the answer.
   */
  generation: number | undefined;
  nowIso: string;
}

export interface HandoverStatusDecision {
  status: HandoverStatus;
  changed: boolean;
}

/**
 * How long a move may wait on its destination's replicas alone (a report still to come, the
 * confirmation) before its status says so. Until then assign's `AssignmentChanged` already says
 * the true thing, that the target is pointed at the destination once it can serve it; writing
 * each look's reason as well doubled a rebalance's status writes (BENCHMARKS.md, "Scale").
 */
export const QUIET_WAIT_MS = 30_000;

export function decideHandoverStatus(input: HandoverStatusInput): HandoverStatusDecision {
  const { current, decision } = input;
  const previous = findCondition(current?.conditions, HANDOVER_READY);
  const [condition] = setCondition(
    previous ? [previous] : [],
    decision.condition,
    input.nowIso,
    input.generation,
  ) as [Condition];
  const status: HandoverStatus = {
    conditions: [condition],
    handoverDestination: input.destination,
    ...(decision.progress && { handover: decision.progress }),
  };
  const changed =
    !sameCondition(previous, condition) ||
    current?.handoverDestination !== input.destination ||
    !sameProgress(current?.handover, decision.progress);
  return { status, changed: changed && !isQuietWait(input, previous) };
}

/** A young move waiting on its replicas, while assign's reset about it still stands. */
function isQuietWait(input: HandoverStatusInput, previous: Condition | undefined): boolean {
  if (input.decision.action !== 'wait' || input.decision.condition.reason !== 'HandoverPending') return false;
  if (previous?.reason !== ASSIGNMENT_CHANGED || input.current?.handoverDestination !== input.destination)
    return false;
  return Date.parse(input.nowIso) - Date.parse(previous.lastTransitionTime) < QUIET_WAIT_MS;
}

/**
 * What the gate resumes a wait from: the stored progress of a wait for this destination; else,
 * while assign's reset about it stands, a wait begun when assign recorded the move (the wait is
 * not written while it is quiet, and its stall clock must not restart at every look).
 */
export function progressOf(
  status: ConfigStatus | undefined,
  destination: string,
): HandoverProgress | undefined {
  if (status?.handover?.destination === destination) return status.handover;
  const condition = findCondition(status?.conditions, HANDOVER_READY);
  if (condition?.reason === ASSIGNMENT_CHANGED && status?.handoverDestination === destination)
    return { destination, waitingSince: condition.lastTransitionTime };
  return status?.handover;
}

function sameProgress(a: HandoverProgress | undefined, b: HandoverProgress | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.destination === b.destination && a.waitingSince === b.waitingSince && a.silentSince === b.silentSince
  );
}
