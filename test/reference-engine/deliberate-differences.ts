// Where Switchyard differs from the reference conversion engine on purpose. The differential
// suite (differential.itest.ts) fails on every difference this list does not explain. An entry
// belongs here only when docs/migrating-from-the-reference-operator.md states the difference and
// why; a strategy Switchyard has not implemented yet is not deliberate, it is work to do.
import { equalUpToEmptyContainers } from '../../src/engine/json.ts';

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
  /** For conversions: the difference is this one only when the two outputs satisfy this. */
  applies?: (reference: unknown, switchyard: unknown) => boolean;
}

export const DELIBERATE_DIFFERENCES: readonly DeliberateDifference[] = [
  {
    case: /./,
    strategy: 'any',
    kind: 'convert',
    what: 'An empty object or list: Switchyard keeps one the input had (a `spec: {}` whose only field moved to metadata stays `spec: {}`), where the reference leaves out every container no value fills. The outputs are equal once empty containers are taken for absent fields.',
    why: 'docs/migrating-from-the-reference-operator.md, "Empty objects and lists": Switchyard copies the input and leaves out what rules claim; the reference builds the output from nothing. Kubernetes clients read `{}` and an absent field alike.',
    applies: (reference, switchyard) => equalUpToEmptyContainers(reference, switchyard),
  },
  {
    case: /./,
    strategy: 'any',
    kind: 'round-trip',
    what: 'A round trip that gives back the input up to empty containers (`spec: {}` for an absent spec, or the reverse).',
    why: 'docs/migrating-from-the-reference-operator.md, "Empty objects and lists": the lossless verdict of both engines takes an empty container for an absent field.',
    applies: (expected, back) => equalUpToEmptyContainers(expected, back),
  },
  {
    case: /^docs\/strategies\/(json-patch\.md:18|metadata-stash\.md:91)/,
    strategy: 'a version without a schema',
    kind: 'compile',
    what: 'A version of the target that has no openAPIV3Schema (these doc examples leave it out): the reference compiles it as a version with no fields, Switchyard refuses it (MissingSchema).',
    why: 'docs/migrating-from-the-reference-operator.md, "Versions without a schema": the reference converts such a version by dropping every field but kind and metadata while calling the conversion lossless (shown by named-differences.itest.ts); Switchyard will not serve a conversion it cannot check.',
  },
  {
    case: 'internal/cli/testdata/when/config.yaml (xmodes-conversion)',
    strategy: 'FieldRename with when',
    kind: 'compile',
    what: 'A FieldRename to another path (spec.advancedOption ↔ spec.advancedFlag) applied only when spec.mode is "advanced", without acknowledgeLossy: the reference compiles it with a partial-coverage warning and drops the value on every other object; Switchyard refuses it (UnacknowledgedLossy) until the loss is acknowledged.',
    why: 'docs/migrating-from-the-reference-operator.md, "`when` rules": a when rule whose skipped objects really lose the value fails closed until acknowledged; acknowledged, the converted objects are exactly what the reference produces.',
  },
];
