// FieldsToMap and MapToFields: several fields on one side are the entries of one map on the
// other (`cpuLimit: "4", memoryLimit: 16Gi` and `limits: {cpu: "4", memory: 16Gi}`). Each field is
// the entry under its key (keyNames, else the field's last segment). Gathering the fields into
// the map loses nothing. Spreading the map into the fields fails on a key no field takes
// (onUnknown…Key: Error, lossless) or drops it (Drop, lossy): the reference's verdicts. As in
// the reference, a map without any field's key (`{}`) converts to nothing, so it does not come
// back from a round trip even where the verdict is lossless.
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { isJsonObject, type JsonObject, setOwn } from '../json.ts';
import { joinPath, overlaps, type Segments } from '../paths.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import { describeShape, type SchemaNode, sameShape, type TargetSchema } from '../schema.ts';
import {
  failed,
  type Located,
  locate,
  lookup,
  otherSide,
  type SideKey,
  type TransformResult,
} from './common.ts';

type Rule = RuleOf<'FieldsToMap'> | RuleOf<'MapToFields'>;

/** A field and the map key it is stored under. */
interface Entry {
  path: string;
  node: SchemaNode;
  key: string;
}

/** How the rule's params name each part, the same for both strategies once sides are known. */
interface Layout {
  fieldSide: SideKey;
  fieldsParam: string;
  fieldPaths: readonly string[];
  mapPath: string;
  keyNames: Readonly<Record<string, string>>;
  dropUnknown: boolean;
  policyParam: string;
}

function layoutOf(rule: Rule): Layout {
  if (rule.strategy === 'FieldsToMap') {
    const p = rule.fieldsToMap;
    return {
      fieldSide: 'hub',
      fieldsParam: 'hubPaths',
      fieldPaths: p.hubPaths,
      mapPath: p.spokeMapPath,
      keyNames: p.keyNames ?? {},
      dropUnknown: p.onUnknownSpokeKey === 'Drop',
      policyParam: 'onUnknownSpokeKey',
    };
  }
  const p = rule.mapToFields;
  return {
    fieldSide: 'spoke',
    fieldsParam: 'spokePaths',
    fieldPaths: p.spokePaths,
    mapPath: p.hubMapPath,
    keyNames: p.keyNames ?? {},
    dropUnknown: p.onUnknownHubKey === 'Drop',
    policyParam: 'onUnknownHubKey',
  };
}

export function fieldsMap(rule: Rule, at: Located): TransformResult {
  const layout = layoutOf(rule);
  if (layout.fieldPaths.length === 0) return { ok: false, diagnostics: [noFields(layout, at)] };
  const mapSide = otherSide(layout.fieldSide);
  const fieldLookups = layout.fieldPaths.map((path) => lookup(layout.fieldSide, path, at));
  const mapLookup = lookup(mapSide, layout.mapPath, at);
  if (!mapLookup.ok || fieldLookups.some((l) => !l.ok)) return failed(mapLookup, ...fieldLookups);
  const map = mapLookup.node;
  const entries = fieldLookups.map((l, i) => {
    const path = layout.fieldPaths[i] as string;
    const node = (l as { node: SchemaNode }).node;
    return { path, node, key: keyOf(path, node, layout.keyNames) };
  });
  const diagnostics = [
    ...mapShapeProblems(rule.strategy, mapSide, map, at),
    ...overlappingFields(entries, layout, at),
    ...sharedKeys(entries, at),
    ...unlistedKeyNames(layout, at),
    ...valueShapeProblems(entries, layout.fieldSide, map, at),
  ];
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const toMap: Direction = layout.fieldSide === 'hub' ? 'hubToSpoke' : 'spokeToHub';
  const toFields: Direction = layout.fieldSide === 'hub' ? 'spokeToHub' : 'hubToSpoke';
  const slots = entries.map((e) => ({ segments: e.node.segments, key: e.key }));
  const first = (entries[0] as Entry).node.segments;
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const ops = {
    [toMap]: { ...base, kind: 'run', from: first, to: map.segments, run: gather(slots, map.segments) },
    [toFields]: {
      ...base,
      kind: 'run',
      from: map.segments,
      to: first,
      run: spread(map.segments, slots, layout.dropUnknown),
    },
  } as Record<Direction, Op>;
  const losses: Partial<Record<Direction, string>> = {};
  if (layout.dropUnknown) {
    losses[toFields] =
      `keys of ${map.path} that no field of ${layout.fieldsParam} takes are dropped (${layout.policyParam}: Drop).`;
  }
  const fieldSegments = entries.map((e) => e.node.segments);
  return {
    ok: true,
    transform: {
      path: layout.fieldSide === 'hub' ? (layout.fieldPaths[0] as string) : layout.mapPath,
      claims:
        layout.fieldSide === 'hub'
          ? { hub: fieldSegments, spoke: [map.segments] }
          : { hub: [map.segments], spoke: fieldSegments },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

/** The API requires one field at least; compile also sees rules that never went through it. */
function noFields(layout: Layout, at: Located): Diagnostic {
  return error(
    'InvalidRule',
    locate(at, layout.mapPath),
    `${layout.fieldsParam} lists no field.`,
    `List the fields the map's entries are, in ${layout.fieldsParam}.`,
  );
}

/** The key keyNames gives the path as written, or, where it gives none or "", its last segment. */
function keyOf(path: string, node: SchemaNode, keyNames: Readonly<Record<string, string>>): string {
  const named = Object.hasOwn(keyNames, path) ? keyNames[path] : undefined;
  return named ? named : (node.segments[node.segments.length - 1] as string);
}

/** The map is written as an object: a side declaring another type would receive garbage. */
function mapShapeProblems(strategy: string, side: SideKey, map: SchemaNode, at: Located): Diagnostic[] {
  const s = map.schema;
  const object = s['x-kubernetes-preserve-unknown-fields'] || s.type === undefined || s.type === 'object';
  if (object && !s['x-kubernetes-int-or-string']) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, map.path),
      `${strategy} needs an object on the ${side} to hold the entries, but ${side} ${map.path} is ${describeShape(s)}.`,
      'Point the map path at an object with additionalProperties (or with a property per key).',
    ),
  ];
}

/** Two paths of the list that are the same field, or one inside the other, would both claim it. */
function overlappingFields(entries: readonly Entry[], layout: Layout, at: Located): Diagnostic[] {
  const out: Diagnostic[] = [];
  entries.forEach((later, j) => {
    const earlier = entries.slice(0, j).find((e) => overlaps(e.node.segments, later.node.segments));
    if (!earlier) return;
    const how =
      earlier.node.segments.length === later.node.segments.length
        ? `lists ${joinPath(later.node.segments)} twice`
        : `lists ${earlier.path} and ${later.path}, one inside the other`;
    out.push(
      error(
        'InvalidRule',
        locate(at, later.path),
        `${layout.fieldsParam} ${how}.`,
        `List each field once, and no field inside another listed one.`,
      ),
    );
  });
  return out;
}

/** Two fields under one key would overwrite each other in the map. */
function sharedKeys(entries: readonly Entry[], at: Located): Diagnostic[] {
  const out: Diagnostic[] = [];
  entries.forEach((later, j) => {
    const earlier = entries.slice(0, j).find((e) => e.key === later.key);
    if (!earlier || overlaps(earlier.node.segments, later.node.segments)) return;
    out.push(
      error(
        'InvalidRule',
        locate(at, later.path),
        `${earlier.path} and ${later.path} both take the map key ${JSON.stringify(later.key)}, so one would overwrite the other.`,
        'Give each field its own key in keyNames.',
      ),
    );
  });
  return out;
}

/** keyNames is matched against the paths as written: an entry for another path is never used. */
function unlistedKeyNames(layout: Layout, at: Located): Diagnostic[] {
  return Object.keys(layout.keyNames)
    .filter((path) => !layout.fieldPaths.includes(path))
    .map((path) =>
      error(
        'InvalidRule',
        locate(at, path),
        `keyNames names ${path}, which ${layout.fieldsParam} does not list, so its key is never used.`,
        `Spell the path in keyNames exactly as in ${layout.fieldsParam}, or remove the entry.`,
      ),
    );
}

/** Each value moves unchanged between its field and its entry, so both must declare one shape. */
function valueShapeProblems(
  entries: readonly Entry[],
  fieldSide: SideKey,
  map: SchemaNode,
  at: Located,
): Diagnostic[] {
  const mapSide = otherSide(fieldSide);
  return entries.flatMap((entry) => {
    const value = entrySchema(map.schema, entry.key);
    if (value === ANY_VALUE) return [];
    if (value === undefined) {
      return [
        error(
          'ShapeMismatch',
          locate(at, entry.path),
          `${mapSide} ${map.path} declares no key ${JSON.stringify(entry.key)} (the apiserver would prune the entry for ${entry.path}).`,
          `Declare the key in ${map.path}, or give ${entry.path} a key it declares in keyNames.`,
        ),
      ];
    }
    if (sameShape(entry.node.schema, value)) return [];
    return [
      error(
        'ShapeMismatch',
        locate(at, entry.path),
        `${fieldSide} ${entry.path} is ${describeShape(entry.node.schema)}, but the ${mapSide} entry ${map.path}.${entry.key} is ${describeShape(value)}; the value moves unchanged, so both must have the same shape.`,
        `Make the field and the map's values the same shape.`,
      ),
    ];
  });
}

const ANY_VALUE: TargetSchema = {};

/** The schema of the map's entry under `key`: ANY_VALUE where any value fits, undefined where none is declared. */
function entrySchema(map: TargetSchema, key: string): TargetSchema | undefined {
  if (map.properties && Object.hasOwn(map.properties, key)) return map.properties[key];
  const values = map.additionalProperties;
  if (isJsonObject(values)) return values as TargetSchema;
  if (values === true || map['x-kubernetes-preserve-unknown-fields'] || map.type === undefined)
    return ANY_VALUE;
  return undefined;
}

interface Slot {
  segments: Segments;
  key: string;
}

/** The map of every present field under its key; no field present writes nothing. */
function gather(slots: readonly Slot[], to: Segments): OpRun {
  return (input, output, take) => {
    let map: JsonObject | undefined;
    for (const slot of slots) {
      const value = readField(input, slot.segments);
      if (value === undefined) continue;
      map ??= {};
      setOwn(map, slot.key, take(value));
    }
    return map === undefined ? undefined : writeField(output, to, map);
  };
}

/** Each entry whose key a field takes is written at that field; any other key fails, or is dropped. */
function spread(from: Segments, slots: readonly Slot[], dropUnknown: boolean): OpRun {
  const known = new Set(slots.map((s) => s.key));
  const fromPath = joinPath(from);
  return (input, output, take) => {
    const map = readField(input, from);
    if (map === undefined) return undefined;
    if (!isJsonObject(map)) return { message: `${fromPath} is not an object` };
    if (!dropUnknown) {
      for (const key in map) {
        if (!known.has(key))
          return { message: `${fromPath} has the key ${JSON.stringify(key)}, which no field takes` };
      }
    }
    for (const slot of slots) {
      if (!Object.hasOwn(map, slot.key)) continue;
      const failure = writeField(output, slot.segments, take(map[slot.key]));
      if (failure) return failure;
    }
    return undefined;
  };
}
