// Whether a config can be served: its rules compiled by the engine against the live target's
// versions. One verdict, shared by the admission webhook (at write time) and the config-status
// handler (whenever the config or its target changes), so a user reads the same diagnostics in
// both places. Fail closed: nothing touches a target whose config does not compile.
import type { DriftPolicy, Phase } from '../api/conversion-config.ts';
import { type ConversionSpec, compile } from '../engine/compile.ts';
import { formatDiagnostic, isError } from '../engine/diagnostics.ts';
import { targetVersions } from '../engine/target-versions.ts';
import { type ConfigVerdict, deriveVerdicts, schemaHash } from '../engine/verdicts.ts';
import type { ConditionState } from './conditions.ts';

export const VALIDATED = 'Validated';

/** metav1.Condition caps a message at 32 KiB; diagnostics past it are counted, not cut mid-line. */
const MAX_MESSAGE_BYTES = 32 * 1024;

export type ConfigValidation =
  /** The target does not exist (yet): nothing to compile against, nothing to touch. */
  | { verdict: 'TargetMissing'; targetKind: string; targetName: string }
  | { verdict: 'Invalid'; errors: string[]; warnings: string[]; verdicts?: CompileVerdicts }
  | { verdict: 'Compiled'; warnings: string[]; verdicts?: CompileVerdicts };

/** The per-spoke and per-rule verdicts of the same compile, and what it compiled against (engine/verdicts.ts). */
export interface CompileVerdicts {
  schemaHash: string;
  config: ConfigVerdict;
}

/**
 * Compiles `spec` against the live target object (a CRD or an XRD as the apiserver returns it);
 * with `verdicts`, also derives the per-spoke and per-rule verdicts from that compile (what the
 * config-status handler writes; admission needs only the diagnostics).
 */
export function validateConfig(
  spec: ConversionSpec,
  target: { kind: string; name: string; live: unknown },
  opts: { verdicts?: boolean } = {},
): ConfigValidation {
  if (target.live === undefined)
    return { verdict: 'TargetMissing', targetKind: target.kind, targetName: target.name };
  const versions = targetVersions(target.live);
  const result = compile(spec, versions);
  const verdicts = opts.verdicts
    ? { verdicts: { schemaHash: schemaHash(versions), config: deriveVerdicts(result) } }
    : {};
  if (result.ok) return { verdict: 'Compiled', warnings: result.warnings.map(formatDiagnostic), ...verdicts };
  return {
    verdict: 'Invalid',
    errors: result.diagnostics.filter(isError).map(formatDiagnostic),
    warnings: result.diagnostics.filter((d) => !isError(d)).map(formatDiagnostic),
    ...verdicts,
  };
}

/** Whether a handler may patch the target for this config: only when its rules compile. */
export function mayTouchTarget(validation: ConfigValidation): boolean {
  return validation.verdict === 'Compiled';
}

/**
 * What the config's failure to compile means for its conversions, when it is Invalid:
 * `drifted`, the config compiled at this generation before and the target's schema changed
 * under it (core/config-status.ts tells); `driftPolicy`, whether a plan compiled before keeps
 * serving.
 */
export interface FailureContext {
  drifted: boolean;
  driftPolicy: DriftPolicy;
}

export const SCHEMA_DRIFTED = 'SchemaDrifted';

/**
 * The `Validated` condition: the diagnostics verbatim, one per line, errors first. An Invalid
 * config under FailClosed says first that its conversions are refused; one whose target's
 * schema drifted says so, with reason SchemaDrifted, and what its policy does about it.
 */
export function validatedCondition(validation: ConfigValidation, failure?: FailureContext): ConditionState {
  switch (validation.verdict) {
    case 'TargetMissing':
      return {
        type: VALIDATED,
        status: 'Unknown',
        reason: 'TargetNotFound',
        message: `${validation.targetKind} "${validation.targetName}" does not exist; the rules are compiled when it is created`,
      };
    case 'Invalid': {
      const lead = failure && failureLead(failure);
      return {
        type: VALIDATED,
        status: 'False',
        reason: failure?.drifted ? SCHEMA_DRIFTED : 'CompileFailed',
        message: boundedLines([...(lead ? [lead] : []), ...validation.errors, ...validation.warnings]),
      };
    }
    case 'Compiled':
      return validation.warnings.length === 0
        ? {
            type: VALIDATED,
            status: 'True',
            reason: 'Compiled',
            message: 'every spoke compiled against the target',
          }
        : {
            type: VALIDATED,
            status: 'True',
            reason: 'CompiledWithWarnings',
            message: boundedLines(validation.warnings),
          };
  }
}

/**
 * The config's phase before any handover: `Invalid` and `Pending` say why nothing is served;
 * `Validated` is a config that compiles and waits for its first apply. `Applied` (and the
 * states after it) are the handover's to set, from the target's own spec.conversion.
 */
export function phaseBeforeHandover(validation: ConfigValidation): Phase {
  if (validation.verdict === 'Invalid') return 'Invalid';
  if (validation.verdict === 'TargetMissing') return 'Pending';
  return 'Validated';
}

function failureLead({ drifted, driftPolicy }: FailureContext): string | undefined {
  const why = drifted
    ? "The target's schema changed since the config compiled, and the config no longer compiles against it"
    : undefined;
  if (driftPolicy === 'FailClosed')
    return `${why ? `${why}. ` : ''}driftPolicy FailClosed: the webhook-server replicas refuse this target's conversions, naming this config, until it compiles again.`;
  if (why)
    return `${why}. driftPolicy KeepServingStale: a webhook-server replica that holds the last plan that compiled keeps serving it until the config compiles again.`;
  return undefined;
}

function boundedLines(lines: readonly string[]): string {
  let message = '';
  for (const [i, line] of lines.entries()) {
    const next = message === '' ? line : `${message}\n${line}`;
    const rest = lines.length - i;
    if (Buffer.byteLength(next) > MAX_MESSAGE_BYTES - 64) return `${message}\n… and ${rest} more`;
    message = next;
  }
  return message;
}
