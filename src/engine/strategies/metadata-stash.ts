// The metadata stash: a field only one side declares is kept in an annotation or label of the
// other side's object. ToAnnotation/ToLabel stash a hub field in spoke metadata (hub → spoke)
// and, with restoreOnReverse, put it back (spoke → hub); FromAnnotation/FromLabel restore a
// spoke field from hub metadata (hub → spoke) and, with stashOnReverse, stash it there again
// (spoke → hub). A direction that neither stashes nor restores strips the key, so a stash
// never leaks into the other side as user-visible metadata.
//
// Verdicts: a direction is lossless when a round trip starting with it restores the object.
// With restoreOnReverse/stashOnReverse both directions are. Without, both lose: the stashed
// value is never restored (hub → spoke → hub drops it), and a stash key the object carries is
// stripped on the way up (spoke → hub → spoke drops it). The reference charges only spoke → hub;
// the same configs compile either way, since acknowledgeLossy is needed in both. Losslessness
// presumes the stash key is the rule's own: a user's annotation under that key is overwritten
// by a stash and consumed by a restore, and a JSON stash comes back in Go's canonical form
// (sorted keys, \u003c for <), not as the user typed it.
import type { RuleOf } from '../../api/rules.ts';
import { error } from '../diagnostics.ts';
import { type MetadataMap, readField, writeField, writeMetadataEntry } from '../field-access.ts';
import { marshalJson, unmarshalJson } from '../go-values.ts';
import { isJsonObject, type JsonObject, setOwn } from '../json.ts';
import type { Segments } from '../paths.ts';
import type { Direction, Op, OpFailure, OpRun } from '../plan.ts';
import { type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';

type StashRule = RuleOf<'ToAnnotation'> | RuleOf<'ToLabel'> | RuleOf<'FromAnnotation'> | RuleOf<'FromLabel'>;

type Serialization = 'JSON' | 'String';

/** A rule's stash, whichever of the four strategies says it. */
interface Stash {
  /** The side that declares the field; the other side's metadata holds the key. */
  side: SideKey;
  path: string;
  map: MetadataMap;
  key: string;
  serialization: Serialization;
  /** restoreOnReverse (To…) or stashOnReverse (From…): spoke → hub keeps the value. */
  reverse: boolean;
}

function stashOf(rule: StashRule): Stash {
  switch (rule.strategy) {
    case 'ToAnnotation':
    case 'ToLabel': {
      const p = rule.strategy === 'ToAnnotation' ? rule.toAnnotation : rule.toLabel;
      const map = rule.strategy === 'ToAnnotation' ? 'annotations' : 'labels';
      const { hubPath: path, key, serialization, restoreOnReverse: reverse } = p;
      return { side: 'hub', path, map, key, serialization, reverse };
    }
    case 'FromAnnotation':
    case 'FromLabel': {
      const p = rule.strategy === 'FromAnnotation' ? rule.fromAnnotation : rule.fromLabel;
      const map = rule.strategy === 'FromAnnotation' ? 'annotations' : 'labels';
      const { spokePath: path, key, serialization, stashOnReverse: reverse } = p;
      return { side: 'spoke', path, map, key, serialization, reverse };
    }
  }
}

export function metadataStash(rule: StashRule, at: Located): TransformResult {
  const stash = stashOf(rule);
  const field = lookup(stash.side, stash.path, at);
  const diagnostics = field.ok ? [] : [field.diagnostic];
  const keyProblems = stash.map === 'labels' ? labelKeyProblems(stash.key) : [];
  if (keyProblems.length > 0) {
    diagnostics.push(
      error(
        'InvalidValue',
        locate(at, stash.path),
        `${stash.key} is not a valid label key: ${keyProblems.join('; ')}.`,
        'Use a label key: an optional DNS subdomain prefix and "/", then a name of at most 63 alphanumerics, "-", "_" or ".", starting and ending with an alphanumeric.',
      ),
    );
  }
  if (!field.ok || diagnostics.length > 0) return { ok: false, diagnostics };
  const segments = field.node.segments;
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const entry: Segments = ['metadata', stash.map, stash.key];
  const stashOp: Op = { ...base, kind: 'run', from: segments, to: entry, run: stashInto(segments, stash) };
  const restoreOp: Op = {
    ...base,
    kind: 'run',
    from: entry,
    to: segments,
    run: restoreFrom(stash, segments),
  };
  const stripOp: Op = { ...base, kind: 'run', from: entry, to: entry, run: strip(stash) };
  const ops: Record<Direction, Op> =
    stash.side === 'hub'
      ? { hubToSpoke: stashOp, spokeToHub: stash.reverse ? restoreOp : stripOp }
      : { hubToSpoke: restoreOp, spokeToHub: stash.reverse ? stashOp : stripOp };
  const losses = stash.reverse ? {} : unrestoredLosses(rule.strategy, stash);
  return {
    ok: true,
    transform: {
      path: stash.path,
      claims: stash.side === 'hub' ? { hub: [segments], spoke: [] } : { hub: [], spoke: [segments] },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

/** Without restoreOnReverse/stashOnReverse, what a round trip starting each way drops. */
function unrestoredLosses(strategy: StashRule['strategy'], stash: Stash): Record<Direction, string> {
  const entry = `${stash.map === 'annotations' ? 'annotation' : 'label'} ${stash.key}`;
  if (stash.side === 'hub') {
    return {
      hubToSpoke: `${stash.path} is kept in the spoke ${entry} but never restored from it (${strategy} without restoreOnReverse), so a hub → spoke → hub round trip drops it.`,
      spokeToHub: `converting spoke → hub strips the ${entry} without restoring ${stash.path} from it (${strategy} without restoreOnReverse).`,
    };
  }
  return {
    hubToSpoke: `the hub ${entry} becomes ${stash.path} but is never stashed back (${strategy} without stashOnReverse), so a hub → spoke → hub round trip drops it.`,
    spokeToHub: `${stash.path} exists only on the spoke; converting spoke → hub drops it instead of stashing it in the hub ${entry} (${strategy} without stashOnReverse).`,
  };
}

// --- the ops

/** The field's value, serialized, becomes the metadata entry; an absent field writes nothing. */
function stashInto(from: Segments, stash: Stash): OpRun {
  const { map, key, serialization } = stash;
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    let text: string;
    if (serialization === 'String') {
      if (typeof value !== 'string') {
        return {
          message: `stashAnnotation: value at ${stash.path} is not a string but serialization=String`,
        };
      }
      text = value;
    } else {
      text = marshalJson(value);
    }
    if (map === 'labels' && !isLabelValue(text)) {
      return {
        message: `stashAnnotation: label value for key ${key} is invalid: ${JSON.stringify(text)} is not a valid label value (at most 63 alphanumerics, "-", "_" or ".", starting and ending with an alphanumeric)`,
      };
    }
    return writeStashEntry(output, map, key, text);
  };
}

/**
 * The entry, deserialized, becomes the field, and the entry is removed (with the map, and then
 * metadata, if that empties them); an absent entry writes nothing.
 */
function restoreFrom(stash: Stash, to: Segments): OpRun {
  const { map, key, serialization } = stash;
  const entry: Segments = ['metadata', map, key];
  return (input, output) => {
    const text = readField(input, entry);
    if (text === undefined) return undefined;
    if (typeof text !== 'string')
      return { message: `restoreAnnotation: value at metadata.${map}.${key} is not a string` };
    let value: unknown = text;
    if (serialization === 'JSON') {
      const decoded = unmarshalJson(text);
      if (!decoded.ok)
        return { message: `restoreAnnotation: unmarshal metadata.${map}.${key}: ${decoded.message}` };
      value = decoded.value;
    }
    const failed = writeField(output, to, value);
    if (failed) return failed;
    removeStashEntry(output, map, key);
    return undefined;
  };
}

function strip(stash: Stash): OpRun {
  return (_input, output) => {
    removeStashEntry(output, stash.map, stash.key);
    return undefined;
  };
}

/**
 * Sets `metadata.<map>.<key>`. Absent or null metadata is an empty object, as the reference's
 * conversion starts from; metadata or a map holding anything else (null included) fails, as
 * its write does.
 */
function writeStashEntry(
  output: JsonObject,
  map: MetadataMap,
  key: string,
  text: string,
): OpFailure | undefined {
  const metadata = output.metadata;
  if (metadata !== undefined && metadata !== null && !isJsonObject(metadata)) {
    return { message: `cannot write metadata.${map}.${key}: metadata is not an object`, path: 'metadata' };
  }
  if (isJsonObject(metadata) && Object.hasOwn(metadata, map) && !isJsonObject(metadata[map])) {
    return {
      message: `cannot write metadata.${map}.${key}: metadata.${map} is not an object`,
      path: `metadata.${map}`,
    };
  }
  writeMetadataEntry(output, map, key, text);
  return undefined;
}

/**
 * Removes `metadata.<map>.<key>` from the output, then the map if it is (or was) empty, then
 * metadata if that empties it: the reference's deleteValuePruningEmptyMaps. Copies the levels it
 * changes, since the output may share metadata with the input.
 */
function removeStashEntry(output: JsonObject, map: MetadataMap, key: string): void {
  const metadata = output.metadata;
  if (!isJsonObject(metadata) || !Object.hasOwn(metadata, map)) return;
  const entries = metadata[map];
  if (!isJsonObject(entries)) return;
  const remaining: JsonObject = {};
  let kept = 0;
  for (const name of Object.keys(entries)) {
    if (name === key) continue;
    setOwn(remaining, name, entries[name]);
    kept++;
  }
  if (kept === Object.keys(entries).length && kept > 0) return;
  const copy: JsonObject = {};
  for (const name of Object.keys(metadata)) if (name !== map) setOwn(copy, name, metadata[name]);
  if (kept > 0) setOwn(copy, map, remaining);
  if (Object.keys(copy).length > 0) output.metadata = copy;
  else delete output.metadata;
}

// --- Kubernetes label syntax (apimachinery's IsQualifiedName and IsValidLabelValue)

const LABEL_NAME = /^(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*$/;
const MAX_LABEL_NAME = 63;
const MAX_LABEL_PREFIX = 253;

/** What IsQualifiedName finds wrong with a label key; none when it is valid. */
export function labelKeyProblems(key: string): string[] {
  const parts = key.split('/');
  if (parts.length > 2) return ['it has more than one "/"'];
  const problems: string[] = [];
  const name = parts[parts.length - 1] as string;
  if (parts.length === 2) {
    const prefix = parts[0] as string;
    if (prefix.length === 0) problems.push('prefix part must be non-empty');
    else {
      if (byteLength(prefix) > MAX_LABEL_PREFIX)
        problems.push(`prefix part must be no more than ${MAX_LABEL_PREFIX} bytes`);
      if (!DNS_SUBDOMAIN.test(prefix)) problems.push('prefix part must be a lowercase RFC 1123 subdomain');
    }
  }
  if (name.length === 0) problems.push('name part must be non-empty');
  else if (byteLength(name) > MAX_LABEL_NAME)
    problems.push(`name part must be no more than ${MAX_LABEL_NAME} bytes`);
  if (!LABEL_NAME.test(name)) {
    problems.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
    );
  }
  return problems;
}

/** IsValidLabelValue; the pattern admits ASCII only, so its length in characters is in bytes. */
export function isLabelValue(value: string): boolean {
  return value.length <= MAX_LABEL_NAME && LABEL_VALUE.test(value);
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}
