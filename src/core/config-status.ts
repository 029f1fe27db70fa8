// What the config-status handler writes on a config: its phase, its `Validated` condition and
// the compile's verdicts (schemaHash, overallLossless, spokeStatuses), and nothing else (assign
// owns the assignment fields and `Assigned`, handover owns `HandoverReady` and
// `status.handover`; server-side apply keeps each manager's fields apart). The verdicts come
// from the compile the condition states, and are written in the same apply: one statement.
// Pure: the verdict comes from config-validation.ts, the rest from the view.
import type { Condition } from '../api/conditions.ts';
import { webhookServiceName } from '../api/constants.ts';
import type { DriftPolicy, Phase, SpokeStatus } from '../api/conversion-config.ts';
import { findCondition, sameCondition, setCondition } from './conditions.ts';
import { type ConfigValidation, SCHEMA_DRIFTED, VALIDATED, validatedCondition } from './config-validation.ts';
import { verdictStatus } from './spoke-statuses.ts';

export interface ConfigStatusInput {
  /**
   * The config's status as the view holds it: of spokeStatuses, the handlers' views keep each
   * spoke's version and lossless verdict only (views/projection.ts).
   */
  current:
    | {
        phase?: Phase | undefined;
        conditions?: Condition[] | undefined;
        schemaHash?: string | undefined;
        overallLossless?: boolean | undefined;
        spokeStatuses?: readonly Pick<SpokeStatus, 'version' | 'lossless'>[] | undefined;
      }
    | undefined;
  generation: number | undefined;
  validation: ConfigValidation;
  /** The config's spec.driftPolicy, or the default. */
  driftPolicy: DriftPolicy;
  /** The instance whose Service the live target's `spec.conversion` names now, if it is one of ours. */
  servingInstance: string | undefined;
  nowIso: string;
}

/** Absent verdict fields are removed by the apply (no target: nothing was compiled). */
export interface ConfigStatusWrite {
  phase: Phase;
  conditions: Condition[];
  schemaHash?: string;
  overallLossless?: boolean;
  spokeStatuses?: SpokeStatus[];
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

/**
 * Whether the config's failure to compile is drift: it compiled at this very generation
 * (Validated True, or already SchemaDrifted, observed at it), so what changed is the target.
 * A config whose own spec changed and does not compile is a plain CompileFailed; both are
 * refused under FailClosed (webhook/plans.ts), as the reference operator reverts an Applied
 * config on any failed re-validation.
 */
export function isSchemaDrift(
  previous: Condition | undefined,
  generation: number | undefined,
  validation: ConfigValidation,
): boolean {
  if (validation.verdict !== 'Invalid' || previous === undefined || generation === undefined) return false;
  return (
    previous.observedGeneration === generation &&
    (previous.status === 'True' || (previous.status === 'False' && previous.reason === SCHEMA_DRIFTED))
  );
}

/**
 * The fields to apply, or undefined when the status already says all of it. The view keeps of
 * the verdicts only schemaHash, overallLossless and each spoke's lossless verdict; the rest is
 * derived from the config at the condition's observedGeneration and the target's versions at
 * schemaHash, so those being equal, it is too.
 */
export function decideConfigStatus(input: ConfigStatusInput): ConfigStatusWrite | undefined {
  const phase = phaseOf(input);
  const previous = findCondition(input.current?.conditions, VALIDATED);
  const failure = {
    drifted: isSchemaDrift(previous, input.generation, input.validation),
    driftPolicy: input.driftPolicy,
  };
  const condition = findCondition(
    setCondition(
      input.current?.conditions,
      validatedCondition(input.validation, failure),
      input.nowIso,
      input.generation,
    ),
    VALIDATED,
  ) as Condition;
  const write: ConfigStatusWrite = { phase, conditions: [condition], ...verdictFields(input.validation) };
  const unchanged =
    phase === input.current?.phase &&
    sameCondition(condition, previous) &&
    sameVerdicts(write, input.current);
  return unchanged ? undefined : write;
}

function verdictFields(validation: ConfigValidation): Omit<ConfigStatusWrite, 'phase' | 'conditions'> {
  if (validation.verdict === 'TargetMissing' || validation.verdicts === undefined) return {};
  const { overallLossless, spokeStatuses } = verdictStatus(validation.verdicts.config);
  return { schemaHash: validation.verdicts.schemaHash, overallLossless, spokeStatuses };
}

function sameVerdicts(write: ConfigStatusWrite, current: ConfigStatusInput['current']): boolean {
  if (write.schemaHash !== current?.schemaHash || write.overallLossless !== current?.overallLossless)
    return false;
  const a = write.spokeStatuses ?? [];
  const b = current?.spokeStatuses ?? [];
  if ((write.spokeStatuses === undefined) !== (current?.spokeStatuses === undefined)) return false;
  return (
    a.length === b.length &&
    a.every(
      (s, i) =>
        s.version === b[i]?.version &&
        s.lossless.hubToSpoke === b[i]?.lossless.hubToSpoke &&
        s.lossless.spokeToHub === b[i]?.lossless.spokeToHub,
    )
  );
}
