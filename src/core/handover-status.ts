// The part of a config's status the handover owns: the HandoverReady condition, the progress
// of a waiting move (status.handover) and phase Applied. Pure, so "write only when it changes"
// is decided (and tested) apart from the write.
import type { Condition } from '../api/conditions.ts';
import type { ConfigStatus, HandoverProgress, Phase } from '../api/conversion-config.ts';
import { findCondition, sameCondition, setCondition } from './conditions.ts';
import { HANDOVER_READY, type HandoverDecision } from './handover.ts';

export interface HandoverStatus {
  /** Only the HandoverReady entry: a server-side apply states the one list entry this concern owns. */
  conditions: [Condition];
  /** Absent: nothing waits, and the apply removes what this concern stored before. */
  handover?: HandoverProgress;
  /** Absent: the phase is not this concern's to state now (config validation's Validated/Invalid/Pending). */
  phase?: Phase;
}

export interface HandoverStatusInput {
  current: ConfigStatus | undefined;
  decision: HandoverDecision;
  /** Whether the target names the destination once this attempt's patch (if any) has landed. */
  namesDestination: boolean;
  /** Whether the target names some Service now, i.e. a move waits while the source serves. */
  namesAService: boolean;
  nowIso: string;
}

export interface HandoverStatusDecision {
  status: HandoverStatus;
  changed: boolean;
}

export function decideHandoverStatus(input: HandoverStatusInput): HandoverStatusDecision {
  const { current, decision } = input;
  const previous = findCondition(current?.conditions, HANDOVER_READY);
  const [condition] = setCondition(previous ? [previous] : [], decision.condition, input.nowIso) as [
    Condition,
  ];
  const phase = phaseAfter(input);
  const status: HandoverStatus = {
    conditions: [condition],
    ...(decision.progress && { handover: decision.progress }),
    ...(phase && { phase }),
  };
  const changed =
    !sameCondition(previous, condition) ||
    !sameProgress(current?.handover, decision.progress) ||
    (phase !== undefined && current?.phase !== phase);
  return { status, changed };
}

// Applied once the target names the assigned instance. While a move waits, the source still
// serves the target, so a config already Applied stays Applied; the apply must state it to keep
// it (a field this manager stops stating is removed).
function phaseAfter(input: HandoverStatusInput): Phase | undefined {
  if (input.namesDestination) return 'Applied';
  if (input.namesAService && input.current?.phase === 'Applied') return 'Applied';
  return undefined;
}

function sameProgress(a: HandoverProgress | undefined, b: HandoverProgress | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return (
    a.destination === b.destination && a.waitingSince === b.waitingSince && a.silentSince === b.silentSince
  );
}
