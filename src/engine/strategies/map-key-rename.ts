// MapKeyRename: a free-form map whose known keys are spelled differently on each side (`app`
// on the hub is `application` on the spoke); every other key keeps its name. Two keys landing
// on one name fail the conversion. With a one-to-one table the reference counts both directions
// lossless. One case escapes that verdict, as in the reference: a key that is not renamed but
// spells a rename's destination (`application` on the hub, without `app`) keeps its name one way
// and is renamed on the way back (`app`), so it does not come back as it was.
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { isJsonObject, type JsonObject, setOwn } from '../json.ts';
import { joinPath, type Segments } from '../paths.ts';
import type { OpRun } from '../plan.ts';
import { describeShape, type SchemaNode, sameShape, type TargetSchema } from '../schema.ts';
import { failed, type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';

type Rule = RuleOf<'MapKeyRename'>;

export function mapKeyRename(rule: Rule, at: Located): TransformResult {
  const { hubPath, spokePath, renames } = rule.mapKeyRename;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const inverted = invertRenames(renames, at, hubPath);
  const diagnostics = [
    ...notFreeFormMap('MapKeyRename', 'hub', hub.node, at),
    ...notFreeFormMap('MapKeyRename', 'spoke', spoke.node, at),
    ...valueShapeMismatch(hub.node, spoke.node, at),
    ...inverted.diagnostics,
  ];
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const { ruleIndex } = at;
  const { strategy } = rule;
  const h = hub.node.segments;
  const s = spoke.node.segments;
  const forward = new Map(Object.entries(renames));
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [h], spoke: [s] },
      ops: {
        hubToSpoke: { ruleIndex, strategy, kind: 'run', from: h, to: s, run: renameKeys(h, s, forward) },
        spokeToHub: {
          ruleIndex,
          strategy,
          kind: 'run',
          from: s,
          to: h,
          run: renameKeys(s, h, inverted.table),
        },
      },
      losses: {},
      onSkip: hubPath === spokePath && sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

/**
 * A map whose keys are data: an object with additionalProperties and no named properties, or
 * one that preserves unknown fields (the reference's test, `classify` opaque object).
 */
export function isFreeFormMap(schema: TargetSchema): boolean {
  if (schema['x-kubernetes-preserve-unknown-fields']) return true;
  const named = schema.properties !== undefined && Object.keys(schema.properties).length > 0;
  return schema.type === 'object' && !named && schema.additionalProperties !== undefined;
}

export function notFreeFormMap(strategy: string, side: SideKey, node: SchemaNode, at: Located): Diagnostic[] {
  if (isFreeFormMap(node.schema)) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `${strategy} needs a free-form map on the ${side}, but ${side} ${node.path} is ${describeShape(node.schema)}.`,
      'Point the path at an object declared with additionalProperties (or x-kubernetes-preserve-unknown-fields).',
    ),
  ];
}

/**
 * Values move unchanged, so maps declaring their values' shape on both sides must agree (the
 * reference does not check; a mismatch writes values the other schema rejects). A map of any
 * value on either side is not checked.
 */
function valueShapeMismatch(hub: SchemaNode, spoke: SchemaNode, at: Located): Diagnostic[] {
  const h = hub.schema.additionalProperties;
  const s = spoke.schema.additionalProperties;
  if (!isJsonObject(h) || !isJsonObject(s) || sameShape(h as TargetSchema, s as TargetSchema)) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, hub.path),
      `The values of hub ${hub.path} are ${describeShape(h as TargetSchema)}, but those of spoke ${spoke.path} are ${describeShape(s as TargetSchema)}; values move unchanged, so both maps must declare the same value shape.`,
      'Declare the same additionalProperties schema on both sides.',
    ),
  ];
}

/** The spoke → hub table; the hub → spoke one must be one-to-one between non-empty keys. */
function invertRenames(
  renames: Readonly<Record<string, string>>,
  at: Located,
  path: string,
): { table: ReadonlyMap<string, string>; diagnostics: Diagnostic[] } {
  const table = new Map<string, string>();
  const diagnostics: Diagnostic[] = [];
  const entries = Object.entries(renames);
  if (entries.length === 0) {
    diagnostics.push(
      error(
        'InvalidRule',
        locate(at, path),
        'renames lists no key.',
        'List at least one hub key → spoke key.',
      ),
    );
  }
  for (const [hubKey, spokeKey] of entries) {
    if (hubKey === '' || spokeKey === '') {
      diagnostics.push(
        error(
          'InvalidRule',
          locate(at, path),
          `renames maps ${JSON.stringify(hubKey)} to ${JSON.stringify(spokeKey)}; rename keys must be non-empty.`,
          'Remove the entry with an empty key.',
        ),
      );
      continue;
    }
    const earlier = table.get(spokeKey);
    if (earlier !== undefined) {
      diagnostics.push(
        error(
          'InvalidRule',
          locate(at, path),
          `renames maps both ${JSON.stringify(earlier)} and ${JSON.stringify(hubKey)} to the spoke key ${JSON.stringify(spokeKey)}, so the way back could not tell them apart.`,
          'Give each hub key its own spoke key.',
        ),
      );
      continue;
    }
    table.set(spokeKey, hubKey);
  }
  return { table, diagnostics };
}

/** A copy of the map at `from`, its keys renamed through `renames`, written at `to`. */
function renameKeys(from: Segments, to: Segments, renames: ReadonlyMap<string, string>): OpRun {
  const fromPath = joinPath(from);
  const toPath = joinPath(to);
  return (input, output, take) => {
    const map = readField(input, from);
    if (map === undefined) return undefined;
    if (!isJsonObject(map)) return { message: `${fromPath} is not an object` };
    const renamed: JsonObject = {};
    for (const key in map) {
      const target = renames.get(key) ?? key;
      if (Object.hasOwn(renamed, target)) {
        return { message: `two keys of ${fromPath} become the key ${JSON.stringify(target)} of ${toPath}` };
      }
      setOwn(renamed, target, take(map[key]));
    }
    return writeField(output, to, renamed);
  };
}
