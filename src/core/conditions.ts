// Setting one condition in a status's list, the Kubernetes way (meta.SetStatusCondition): the
// transition time moves only when the status flips, so "since when" stays true across rewrites
// of the reason or message, and a decision that changes nothing produces an identical list.
import type { Condition, ConditionStatus } from '../api/conditions.ts';

/** A condition as a decision states it; the time and generation are filled in by `setCondition`. */
export interface ConditionState {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/** `current` with `next` set; other types are kept, in their order. */
export function setCondition(
  current: readonly Condition[] | undefined,
  next: ConditionState,
  nowIso: string,
  observedGeneration?: number,
): Condition[] {
  const list = [...(current ?? [])];
  const index = list.findIndex((c) => c.type === next.type);
  const previous = index === -1 ? undefined : list[index];
  const condition: Condition = {
    type: next.type,
    status: next.status,
    ...(observedGeneration === undefined ? {} : { observedGeneration }),
    lastTransitionTime:
      previous !== undefined && previous.status === next.status ? previous.lastTransitionTime : nowIso,
    reason: next.reason,
    message: next.message,
  };
  if (index === -1) list.push(condition);
  else list[index] = condition;
  return list;
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether two conditions say the same thing (times aside). */
export function sameCondition(a: Condition | undefined, b: Condition | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.observedGeneration === b.observedGeneration
  );
}
