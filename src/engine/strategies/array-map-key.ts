// ArrayToMapByKey and MapToArrayByKey: an array of objects on one side is, on the other, a map
// keyed by each element's keyField, the key taken out of the value (`[{name: web, url: …}]` and
// `{web: {url: …}}`). A duplicate, missing or non-string key fails the conversion rather than
// dropping an element. The array is rebuilt sorted by key, byte-wise as Go sorts, whatever order
// it had. A round trip starting from the array is the one that comes back reordered, so the
// verdict charges the loss to array → map; the reference charges it to map → array, the
// direction that does the sorting. Either way the rule is lossy in one direction and needs
// acknowledgeLossy, so the same configs compile; only the per-direction verdict in status
// differs (docs/migrating-from-the-reference-operator.md).
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { isJsonObject, type JsonObject, setOwn } from '../json.ts';
import { joinPath, type Segments } from '../paths.ts';
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
import { notFreeFormMap } from './map-key-rename.ts';
import { mayHoldArray } from './singleton-array.ts';

type Rule = RuleOf<'ArrayToMapByKey'> | RuleOf<'MapToArrayByKey'>;

export function arrayMapKey(rule: Rule, at: Located): TransformResult {
  const params = rule.strategy === 'ArrayToMapByKey' ? rule.arrayToMapByKey : rule.mapToArrayByKey;
  const { hubPath, spokePath, keyField } = params;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const arraySide: SideKey = rule.strategy === 'ArrayToMapByKey' ? 'hub' : 'spoke';
  const array = arraySide === 'hub' ? hub.node : spoke.node;
  const map = arraySide === 'hub' ? spoke.node : hub.node;
  const diagnostics = [
    ...arrayShapeProblems(rule.strategy, arraySide, array, keyField, at),
    ...notFreeFormMap(rule.strategy, otherSide(arraySide), map, at),
    ...valueShapeProblems(arraySide, array, map, keyField, at),
  ];
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const toMap: Direction = arraySide === 'hub' ? 'hubToSpoke' : 'spokeToHub';
  const toArray: Direction = arraySide === 'hub' ? 'spokeToHub' : 'hubToSpoke';
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const ops = {
    [toMap]: {
      ...base,
      kind: 'run',
      from: array.segments,
      to: map.segments,
      run: keyByField(array.segments, map.segments, keyField),
    },
    [toArray]: {
      ...base,
      kind: 'run',
      from: map.segments,
      to: array.segments,
      run: listSortedByKey(map.segments, array.segments, keyField),
    },
  } as Record<Direction, Op>;
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [hub.node.segments], spoke: [spoke.node.segments] },
      ops,
      losses: {
        [toMap]: `${array.path} becomes a map keyed by ${keyField}, and comes back sorted by it, which need not be the order its elements had.`,
      },
      onSkip: 'lose',
    },
  };
}

/**
 * The array side must hold objects that can carry a string keyField (the reference checks none
 * of it: an array of anything else fails every conversion that is not of an empty array).
 */
function arrayShapeProblems(
  strategy: string,
  side: SideKey,
  array: SchemaNode,
  keyField: string,
  at: Located,
): Diagnostic[] {
  const items = mayHoldArray(array.schema) ? (array.schema.items ?? ANY_VALUE) : undefined;
  if (items === undefined) {
    return [
      error(
        'ShapeMismatch',
        locate(at, array.path),
        `${strategy} needs an array of objects on the ${side}, but ${side} ${array.path} is ${describeShape(array.schema)}.`,
        `Point ${side}Path at an array of objects, or use the mirror strategy if the array is on the other side.`,
      ),
    ];
  }
  if (items.type !== undefined && items.type !== 'object') {
    return [
      error(
        'ShapeMismatch',
        locate(at, array.path),
        `${strategy} keys objects, but the elements of ${side} ${array.path} are ${describeShape(items)}.`,
        `Point ${side}Path at an array of objects.`,
      ),
    ];
  }
  return keyFieldProblems(side, array, items, keyField, at);
}

function keyFieldProblems(
  side: SideKey,
  array: SchemaNode,
  items: TargetSchema,
  keyField: string,
  at: Located,
): Diagnostic[] {
  const declared =
    items.properties && Object.hasOwn(items.properties, keyField) ? items.properties[keyField] : undefined;
  const named = items.properties !== undefined && Object.keys(items.properties).length > 0;
  if (declared === undefined) {
    if (!named || items['x-kubernetes-preserve-unknown-fields'] || items.additionalProperties !== undefined)
      return [];
    return [
      error(
        'UnknownPath',
        locate(at, array.path),
        `The elements of ${side} ${array.path} declare no field ${keyField}, the keyField, so no element can be keyed.`,
        `Set keyField to a string field of the elements (${Object.keys(items.properties ?? {}).join(', ')}).`,
      ),
    ];
  }
  if (declared.type === undefined || declared.type === 'string' || declared['x-kubernetes-int-or-string'])
    return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, array.path),
      `Map keys are strings, but the keyField ${keyField} of the elements of ${side} ${array.path} is ${describeShape(declared)}.`,
      'Set keyField to a string field of the elements.',
    ),
  ];
}

const ANY_VALUE: TargetSchema = {};

/**
 * An element without its keyField is the map's value, moved unchanged: where both sides declare
 * that shape, they must agree (the reference does not check; a mismatch writes values the other
 * schema rejects).
 */
function valueShapeProblems(
  arraySide: SideKey,
  array: SchemaNode,
  map: SchemaNode,
  keyField: string,
  at: Located,
): Diagnostic[] {
  const items = array.schema.items;
  const values = map.schema.additionalProperties;
  if (items === undefined || !isJsonObject(values)) return [];
  const element = withoutField(items, keyField);
  if (sameShape(element, values as TargetSchema)) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, map.path),
      `The elements of ${arraySide} ${array.path} without ${keyField} are ${describeShape(element)}, but the values of ${otherSide(arraySide)} ${map.path} are ${describeShape(values as TargetSchema)}; they move unchanged, so both must have the same shape.`,
      `Declare the map's values with the elements' fields, ${keyField} left out.`,
    ),
  ];
}

function withoutField(items: TargetSchema, name: string): TargetSchema {
  if (!items.properties || !Object.hasOwn(items.properties, name)) return items;
  const properties = Object.fromEntries(Object.entries(items.properties).filter(([key]) => key !== name));
  return { ...items, properties };
}

/** The map of each element, keyed by its keyField's string value, the keyField left out. */
function keyByField(from: Segments, to: Segments, keyField: string): OpRun {
  const fromPath = joinPath(from);
  return (input, output, take) => {
    const array = readField(input, from);
    if (array === undefined) return undefined;
    if (!Array.isArray(array)) return { message: `${fromPath} is not an array` };
    const map: JsonObject = {};
    for (let i = 0; i < array.length; i++) {
      const element: unknown = array[i];
      if (!isJsonObject(element)) return { message: `element ${i} of ${fromPath} is not an object` };
      if (!Object.hasOwn(element, keyField))
        return { message: `element ${i} of ${fromPath} has no key field ${keyField}` };
      const key = element[keyField];
      if (typeof key !== 'string')
        return { message: `element ${i} of ${fromPath}: key field ${keyField} is not a string` };
      if (Object.hasOwn(map, key)) return { message: `${fromPath} has the key ${JSON.stringify(key)} twice` };
      const value: JsonObject = {};
      for (const name in element) if (name !== keyField) setOwn(value, name, take(element[name]));
      setOwn(map, key, value);
    }
    return writeField(output, to, map);
  };
}

/** The array of the map's values, each with its key as keyField, sorted by key. */
function listSortedByKey(from: Segments, to: Segments, keyField: string): OpRun {
  const fromPath = joinPath(from);
  return (input, output, take) => {
    const map = readField(input, from);
    if (map === undefined) return undefined;
    if (!isJsonObject(map)) return { message: `${fromPath} is not an object` };
    const keys = Object.keys(map).sort(compareUtf8);
    const array = new Array<unknown>(keys.length);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i] as string;
      const value = map[key];
      if (!isJsonObject(value)) return { message: `${fromPath}[${JSON.stringify(key)}] is not an object` };
      const element: JsonObject = {};
      setOwn(element, keyField, key);
      for (const name in value) setOwn(element, name, take(value[name]));
      array[i] = element;
    }
    return writeField(output, to, array);
  };
}

/**
 * Go's sort.Strings order: the strings' UTF-8 bytes, which is code point order. UTF-16 code
 * units agree except that a surrogate (a code point above U+FFFF) must sort after U+E000–U+FFFF.
 */
export function compareUtf8(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  return unit >= 0xe000 ? unit - 0x800 : unit;
}
