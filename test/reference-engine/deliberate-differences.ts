// Where Switchyard differs from the reference conversion engine on purpose. The differential
// suite (differential.itest.ts) fails on every difference this list does not explain. An entry
// belongs here only when docs/migrating-from-the-reference-operator.md states the difference and
// why; a strategy Switchyard has not implemented yet is not deliberate, it is work to do.

/** What differs: whether a config compiles, what a conversion gives, or a round trip. */
export const FINDING_KINDS = ['compile', 'convert', 'round-trip', 'crash'] as const;
export type FindingKind = (typeof FINDING_KINDS)[number];

export interface DeliberateDifference {
  /** The corpus case (its name, or a pattern over names). */
  case: string | RegExp;
  /** The strategy or config construct whose behaviour differs. */
  strategy: string;
  kind: FindingKind;
  /** For conversions: only these versions (absent: any). */
  from?: string;
  to?: string;
  /** What differs, concretely. */
  what: string;
  /** Why, citing the section of docs/migrating-from-the-reference-operator.md that says so. */
  why: string;
}

export const DELIBERATE_DIFFERENCES: readonly DeliberateDifference[] = [
  {
    case: 'internal/cli/testdata/when/config.yaml (xmodes-conversion)',
    strategy: 'FieldRename with when',
    kind: 'compile',
    what: 'A FieldRename to another path (spec.advancedOption ↔ spec.advancedFlag) applied only when spec.mode is "advanced", without acknowledgeLossy: the reference compiles it with a partial-coverage warning and drops the value on every other object; Switchyard refuses it (UnacknowledgedLossy) until the loss is acknowledged.',
    why: 'docs/migrating-from-the-reference-operator.md, "`when` rules": a when rule whose skipped objects really lose the value fails closed until acknowledged; acknowledged, the converted objects are exactly what the reference produces.',
  },
];
