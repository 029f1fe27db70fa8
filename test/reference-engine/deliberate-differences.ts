// Where Switchyard differs from the reference conversion engine on purpose. The differential
// suite (differential.itest.ts) fails on every difference this list does not explain. An entry
// belongs here only when docs/migrating-from-the-reference-operator.md states the difference and
// why; a strategy Switchyard has not implemented yet is not deliberate, it is work to do.
import { deepEqual, equalUpToEmptyContainers, isJsonObject, type JsonObject } from '../../src/engine/json.ts';

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
  /** For conversions: the difference is this one only when the two outcomes (and the input) satisfy this. */
  applies?: (reference: Outcome, switchyard: Outcome, input?: unknown) => boolean;
}

/** A conversion's outcome on either side; for a round trip, `reference` is the expected object. */
export type Outcome = { ok: true; object: unknown } | { ok: false; error: string };

/** Both converted, and the outputs satisfy `same`. */
const bothConverted =
  (same: (reference: unknown, switchyard: unknown, input?: unknown) => boolean) =>
  (reference: Outcome, switchyard: Outcome, input?: unknown) =>
    reference.ok && switchyard.ok && same(reference.object, switchyard.object, input);

export const DELIBERATE_DIFFERENCES: readonly DeliberateDifference[] = [
  {
    case: /./,
    strategy: 'any',
    kind: 'convert',
    what: 'An empty object or list: Switchyard keeps one the input had (a `spec: {}` whose only field moved to metadata stays `spec: {}`), where the reference leaves out every container no value fills. The outputs are equal once empty containers are taken for absent fields.',
    why: 'docs/migrating-from-the-reference-operator.md, "Empty objects and lists": Switchyard copies the input and leaves out what rules claim; the reference builds the output from nothing. Kubernetes clients read `{}` and an absent field alike.',
    applies: bothConverted(equalUpToEmptyContainers),
  },
  {
    case: /./,
    strategy: 'any',
    kind: 'round-trip',
    what: 'A round trip that gives back the input up to empty containers (`spec: {}` for an absent spec, or the reverse).',
    why: 'docs/migrating-from-the-reference-operator.md, "Empty objects and lists": the lossless verdict of both engines takes an empty container for an absent field.',
    applies: bothConverted(equalUpToEmptyContainers),
  },
  {
    case: /^generated: /,
    strategy: 'any',
    kind: 'convert',
    what: 'A value whose type contradicts the schema where the schema declares fields (spec: null, spec: 3, a list where an object with fields is declared), at a path no rule claims: Switchyard carries it over as it is, the reference leaves it out of the output.',
    why: 'docs/migrating-from-the-reference-operator.md, "Values the schema does not describe": Switchyard copies what no rule claims and never drops a value silently; the apiserver validates what is written. Only generated objects have such values: the apiserver never stores them.',
    applies: bothConverted((reference, switchyard, input) =>
      equalUpToEmptyContainers(
        withoutCarriedOver(reference, input, switchyard),
        withoutCarriedOver(switchyard, input, reference),
      ),
    ),
  },
  {
    case: /^generated: /,
    strategy: 'any rule writing beneath a field',
    kind: 'convert',
    what: 'A rule writes beneath a field that holds a value of another type (spec: 3 where spec.zone is to be written): Switchyard refuses the conversion, the reference drops the value and writes the object.',
    why: 'docs/migrating-from-the-reference-operator.md, "Values the schema does not describe": a conversion that would silently lose a value fails instead. Only generated objects have such values.',
    applies: (reference, switchyard, input) =>
      reference.ok && !switchyard.ok && blockedByValueOfAnotherType(switchyard.error, input),
  },
  {
    case: 'docs/strategies/metadata-stash.md:49 (Example: `toAnnotation`)',
    strategy: 'ToAnnotation with restoreOnReverse',
    kind: 'convert',
    from: 'v2',
    to: 'v3',
    what: "The doc's spoke object has no metadata but the stash annotation (no name). Restoring the field removes the stash, which leaves metadata empty: the reference's engine prunes it, and its webhook then puts back the request's metadata, stash included; Switchyard returns the object without the stash (`metadata: {}`).",
    why: 'docs/migrating-from-the-reference-operator.md, "Deliberate differences", metadata stash: the stash is removed once restored, whatever else metadata holds. A real object always has a name, so its metadata never empties and both engines remove the stash.',
  },
  {
    case: /^generated: List(Join|Split)$/,
    strategy: 'ListJoin, ListSplit',
    kind: 'convert',
    what: 'A list whose round trip would not give it back (an item holding the separator, the list [""]) or a string part that would not join back as written ("07" for an integer item): Switchyard refuses the conversion, the reference converts it and the value changes on the way back.',
    why: 'docs/migrating-from-the-reference-operator.md, "ListJoin and ListSplit": both engines call these rules lossless, which here is a promise the engine keeps by refusing what it cannot restore.',
    applies: (reference, switchyard) =>
      reference.ok &&
      !switchyard.ok &&
      /list(Join|Split): (the list \[""\]|element \d+ \(.*\) (holds the separator|reads as))/.test(
        switchyard.error,
      ),
  },
  {
    case: /^generated: CEL/,
    strategy: 'CEL',
    kind: 'convert',
    what: 'A CEL result that is an integer beyond 2^53: the reference writes the int64, Switchyard refuses the conversion.',
    why: 'docs/migrating-from-the-reference-operator.md, "CEL": a JSON number in JavaScript cannot carry it exactly, and a rounded value would be a silent change.',
    applies: (reference, switchyard) =>
      reference.ok && !switchyard.ok && /beyond 2\^53/.test(switchyard.error),
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

/**
 * `output` without the values one engine carried over unchanged from `input` that the other's
 * output lacks: a path whose value is the input's at the same path, is not an object, and is
 * absent from `other`. Arrays are walked by index.
 */
function withoutCarriedOver(output: unknown, input: unknown, other: unknown): unknown {
  if (Array.isArray(output) && Array.isArray(input)) {
    return output.map((item, i) =>
      withoutCarriedOver(item, input[i], Array.isArray(other) ? other[i] : undefined),
    );
  }
  if (!isJsonObject(output) || !isJsonObject(input)) return output;
  const out: JsonObject = {};
  for (const key of Object.keys(output)) {
    const value = output[key];
    const theirs = isJsonObject(other) ? other[key] : undefined;
    const carried = Object.hasOwn(input, key) && !isJsonObject(value) && deepEqual(value, input[key]);
    if (carried && theirs === undefined) continue;
    out[key] = withoutCarriedOver(value, input[key], theirs);
  }
  return out;
}

/** Switchyard's refusal to write beneath a field, where the input holds a non-null value that is not an object. */
function blockedByValueOfAnotherType(error: string, input: unknown): boolean {
  const blocked = /cannot write (?:here|[^:]+): ([^ ]+) holds a value that is not an object/.exec(error)?.[1];
  if (blocked === undefined) return false;
  let value = input;
  for (const segment of blocked.split('.')) value = isJsonObject(value) ? value[segment] : undefined;
  return value !== undefined && value !== null && !isJsonObject(value);
}
