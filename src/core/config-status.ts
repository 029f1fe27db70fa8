// What the config-status handler writes on a config: its phase and its `Validated` condition,
// and nothing else (assign owns the assignment fields and `Assigned`, handover owns
// `HandoverReady` and `status.handover`; server-side apply keeps each manager's fields apart).
// Pure: the verdict comes from config-validation.ts, the rest from the view.
import type { Condition } from '../api/conditions.ts';
import { webhookServiceName } from '../api/constants.ts';
import type { Phase } from '../api/conversion-config.ts';
import { findCondition, sameCondition, setCondition } from './conditions.ts';
import { type ConfigValidation, VALIDATED, validatedCondition } from './config-validation.ts';

export interface ConfigStatusInput {
  /** The config's status as the view holds it. */
  current: { phase?: Phase | undefined; conditions?: Condition[] | undefined } | undefined;
  generation: number | undefined;
  validation: ConfigValidation;
  /** The instance whose Service the live target's `spec.conversion` names now, if it is one of ours. */
  servingInstance: string | undefined;
  nowIso: string;
}

export interface ConfigStatusWrite {
  phase: Phase;
  conditions: Condition[];
}

/**
 * The phase, from what is true now: `Invalid` (rules do not compile: nothing touches the
 * target), `Pending` (no target yet), `Applied` (what the apiserver routes the target by names
 * one of our instances: it is served, by the assigned instance or, while a move waits, by its
 * source; for an XRD, the CRDs Crossplane generated from it, not the XRD:
 * views/view-reads.ts `readRoutedService`),
 * otherwise `Validated` (compiles; its first apply is pending). Whether a move waits is the
 * `HandoverReady` condition's to say.
 */
export function phaseOf(input: Pick<ConfigStatusInput, 'validation' | 'servingInstance'>): Phase {
  if (input.validation.verdict === 'Invalid') return 'Invalid';
  if (input.validation.verdict === 'TargetMissing') return 'Pending';
  return input.servingInstance !== undefined ? 'Applied' : 'Validated';
}

/** The instance whose Service `service` is, if it is an instance's Service and that instance exists. */
export function instanceServing(
  service: string | undefined,
  instances: readonly string[],
): string | undefined {
  return instances.find((name) => webhookServiceName(name) === service);
}

/** The fields to apply, or undefined when the status already says all of it. */
export function decideConfigStatus(input: ConfigStatusInput): ConfigStatusWrite | undefined {
  const phase = phaseOf(input);
  const condition = findCondition(
    setCondition(
      input.current?.conditions,
      validatedCondition(input.validation),
      input.nowIso,
      input.generation,
    ),
    VALIDATED,
  ) as Condition;
  const unchanged =
    phase === input.current?.phase &&
    sameCondition(condition, findCondition(input.current?.conditions, VALIDATED));
  return unchanged ? undefined : { phase, conditions: [condition] };
}
