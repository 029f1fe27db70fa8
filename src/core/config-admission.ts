// The rule the admission webhook enforces across conversion configs: one config per target,
// across both kinds. Two configs for one target would give the resolver two answers for one
// key, and the data plane two plans for one path.
//
// Like the fleet rules, only a change that introduces the conflict is rejected: an edit of a
// config that already shares its target (both written while admission was down) must still be
// accepted, or neither could be repaired except by deletion.
import { compareNames } from './name-list.ts';

/** The identity of a config as admission compares it. */
export interface ConfigIdentity {
  kind: string;
  name: string;
  target: string;
}

export interface ConfigViolation {
  rule: 'UniqueTarget';
  message: string;
}

/**
 * Why `candidate` may not be admitted beside `others`, if it may not. `previousTarget` is the
 * target of the stored object on an update, undefined on a create.
 */
export function duplicateTargetViolation(
  candidate: ConfigIdentity,
  others: readonly ConfigIdentity[],
  previousTarget?: string,
): ConfigViolation | undefined {
  if (candidate.target === previousTarget) return undefined;
  const holders = others
    .filter((o) => o.target === candidate.target && !(o.kind === candidate.kind && o.name === candidate.name))
    .map((o) => `${o.kind} "${o.name}"`)
    .sort(compareNames);
  if (holders.length === 0) return undefined;
  return {
    rule: 'UniqueTarget',
    message:
      `spec target "${candidate.target}" is already converted by ${holders.join(', ')}; target names are unique ` +
      'across CRDConversionConfig and XRDConversionConfig: delete or retarget that config first',
  };
}
