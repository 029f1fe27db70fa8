// Whether a config can be served: its rules compiled by the engine against the live target's
// versions. One verdict, shared by the admission webhook (at write time) and the config-status
// handler (whenever the config or its target changes), so a user reads the same diagnostics in
// both places. Fail closed: nothing touches a target whose config does not compile.
import type { Phase } from '../api/conversion-config.ts';
import { type ConversionSpec, compile } from '../engine/compile.ts';
import { formatDiagnostic, isError } from '../engine/diagnostics.ts';
import { targetVersions } from '../engine/target-versions.ts';
import type { ConditionState } from './conditions.ts';

export const VALIDATED = 'Validated';

/** metav1.Condition caps a message at 32 KiB; diagnostics past it are counted, not cut mid-line. */
const MAX_MESSAGE_BYTES = 32 * 1024;

export type ConfigValidation =
  /** The target does not exist (yet): nothing to compile against, nothing to touch. */
  | { verdict: 'TargetMissing'; targetKind: string; targetName: string }
  | { verdict: 'Invalid'; errors: string[]; warnings: string[] }
  | { verdict: 'Compiled'; warnings: string[] };

/** Compiles `spec` against the live target object (a CRD or an XRD as the apiserver returns it). */
export function validateConfig(
  spec: ConversionSpec,
  target: { kind: string; name: string; live: unknown },
): ConfigValidation {
  if (target.live === undefined)
    return { verdict: 'TargetMissing', targetKind: target.kind, targetName: target.name };
  const result = compile(spec, targetVersions(target.live));
  if (result.ok) return { verdict: 'Compiled', warnings: result.warnings.map(formatDiagnostic) };
  return {
    verdict: 'Invalid',
    errors: result.diagnostics.filter(isError).map(formatDiagnostic),
    warnings: result.diagnostics.filter((d) => !isError(d)).map(formatDiagnostic),
  };
}

/** Whether a handler may patch the target for this config: only when its rules compile. */
export function mayTouchTarget(validation: ConfigValidation): boolean {
  return validation.verdict === 'Compiled';
}

/** The `Validated` condition: the diagnostics verbatim, one per line, errors first. */
export function validatedCondition(validation: ConfigValidation): ConditionState {
  switch (validation.verdict) {
    case 'TargetMissing':
      return {
        type: VALIDATED,
        status: 'Unknown',
        reason: 'TargetNotFound',
        message: `${validation.targetKind} "${validation.targetName}" does not exist; the rules are compiled when it is created`,
      };
    case 'Invalid':
      return {
        type: VALIDATED,
        status: 'False',
        reason: 'CompileFailed',
        message: boundedLines([...validation.errors, ...validation.warnings]),
      };
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
