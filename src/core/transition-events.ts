// Which Kubernetes Event a handler records for what it just did: only transitions a user acts
// on (a target repointed, a move assigned, a handover that stopped making progress), never a
// re-check that changed nothing. Each Event has a key naming the transition, so a redelivered
// message or a second replica deciding the same thing records it once (kube/event-recorder.ts).
// Pure: the handler adds which objects the Event is about and sends it.
import type { Move } from './assign-decision.ts';
import type { HandoverCondition, HandoverReason } from './handover.ts';

export interface TransitionEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
  key: string;
}

/** After the handover's patch of a target's spec.conversion (on `readVersion`, the precondition it carried). */
export function repointEvent(input: {
  target: string;
  readVersion: string;
  from: string | undefined;
  to: string;
  condition: HandoverCondition;
}): TransitionEvent {
  const { target, readVersion, from, to, condition } = input;
  return {
    type: condition.reason === 'HandoverUnverified' ? 'Warning' : 'Normal',
    reason: condition.reason,
    action: 'RepointConversion',
    note: `${target} now converts through Service ${to}${from ? ` (was ${from})` : ''}: ${condition.message}`,
    // One successful patch per target version: the precondition lets no second writer through.
    key: `repoint/${target}/${readVersion}/${to}`,
  };
}

/** Waiting states a user must look at; the others (pending, awaiting reports) resolve themselves. */
const WARNING_WAITS: ReadonlySet<HandoverReason> = new Set(['HandoverStalled', 'HandoverUnknown']);

/** When a waiting handover turns into a state that needs a person: stalled, or undecidable. */
export function handoverWaitEvent(input: {
  target: string;
  previousReason: string | undefined;
  condition: HandoverCondition;
  /** The condition's lastTransitionTime as written: one Event per entry into the state. */
  since: string;
}): TransitionEvent | undefined {
  const { target, previousReason, condition, since } = input;
  if (!WARNING_WAITS.has(condition.reason) || previousReason === condition.reason) return undefined;
  return {
    type: 'Warning',
    reason: condition.reason,
    action: 'GateHandover',
    note: `${target}: ${condition.message}`,
    key: `wait/${target}/${condition.reason}/${since}`,
  };
}

/** When assign announces that a target's resolved instance changed (on the config's `readVersion`). */
export function assignedEvent(input: { target: string; readVersion: string; move: Move }): TransitionEvent {
  const { target, readVersion, move } = input;
  return {
    type: 'Normal',
    reason: move.from ? 'Reassigned' : 'Assigned',
    action: 'AssignTarget',
    note: move.from
      ? `${target} moves from instance ${move.from} to ${move.to}; the handover repoints it once ${move.to} serves it`
      : `${target} is assigned to instance ${move.to}`,
    key: `assign/${target}/${readVersion}/${move.to}`,
  };
}
