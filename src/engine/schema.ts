// A version's structural schema, as rules name its fields. Compile compares hub and spoke path by
// path: a field "passes through" only if both sides declare it with the same shape, so
// `sameShape` below decides what counts as "the same field".
//
// The shape covers what changes which values are valid or how they are read: JSON type,
// format, enum, nullability, int-or-string, preserved unknown fields, and recursively the
// shape of object properties, array items and map values. It leaves out documentation
// (description, example) and the numeric/length bounds: those are validation, a value that
// satisfies one side's type satisfies the other's shape.
import { isJsonObject } from './json.ts';
import type { Segments } from './paths.ts';

/** The keywords of an OpenAPI v3 structural schema the engine reads; others are ignored. */
export interface TargetSchema {
  type?: string;
  format?: string;
  enum?: readonly unknown[];
  nullable?: boolean;
  properties?: Readonly<Record<string, TargetSchema>>;
  additionalProperties?: TargetSchema | boolean;
  items?: TargetSchema;
  /** Read by the strategies that turn an array into one object: at most one element loses nothing. */
  maxItems?: number;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  oneOf?: readonly unknown[];
  anyOf?: readonly unknown[];
  allOf?: readonly unknown[];
  not?: unknown;
}

/**
 * JSON Schema combinators. The engine does not evaluate them: it compares them verbatim (two
 * sides alike pass through, differing ones need a rule) and names them in messages, since a
 * user who wrote `oneOf` looks for `oneOf`, not for a category of the engine's.
 */
const COMBINATORS = ['oneOf', 'anyOf', 'allOf', 'not'] as const;

type Combinator = (typeof COMBINATORS)[number];

const NO_COMBINATORS: readonly Combinator[] = [];

function combinatorsOf(schema: TargetSchema): readonly Combinator[] {
  if (
    schema.oneOf === undefined &&
    schema.anyOf === undefined &&
    schema.allOf === undefined &&
    schema.not === undefined
  )
    return NO_COMBINATORS;
  return COMBINATORS.filter((c) => schema[c] !== undefined);
}

export interface SchemaNode {
  path: string;
  segments: Segments;
  /** A branch has named properties rules can address; a leaf is addressed only as a whole. */
  isLeaf: boolean;
  schema: TargetSchema;
}

// Not addressable: the engine handles them itself (see paths.ts).
const ROOT_FIELDS_OWNED_BY_ENGINE = new Set(['apiVersion', 'kind', 'metadata']);

/** The fields under a leaf, or under a node the other side lacks: none. */
export const NO_FIELDS: Readonly<Record<string, TargetSchema>> = {};

/**
 * A version's schema as rules address it. Nodes are found when a rule names them, not indexed
 * up front: a webhook-server replica compiles every plan it holds at start, and a rule names a
 * handful of a schema's fields, so walking a path is cheaper than keying every node by its path.
 * The coverage check walks the schemas itself (coverage.ts).
 */
export class SchemaIndex {
  /** The root's fields rules can address: all but those the engine owns at an object's root. */
  readonly fields: Readonly<Record<string, TargetSchema>>;

  /** `root` is a version's whole object, or the items of an array (a ForEach's element: the engine owns none of its fields). */
  /** Whether the index is of a version's whole object or of an array's items. */
  readonly of: 'object' | 'items';

  constructor(root: TargetSchema, of: 'object' | 'items' = 'object') {
    this.of = of;
    const fields = root.properties ?? NO_FIELDS;
    this.fields =
      of === 'items'
        ? fields
        : Object.fromEntries(
            Object.entries(fields).filter(([name]) => !ROOT_FIELDS_OWNED_BY_ENGINE.has(name)),
          );
  }

  /** The node a rule's dotted path names, or undefined. */
  node(path: string): SchemaNode | undefined {
    const segments: string[] = [];
    const schema = resolvePath(this.fields, path, 0, segments);
    // A plan keeps a node's segments as long as it is held: an array of exactly their length.
    return schema ? { path, segments: segments.slice(), isLeaf: isOpaque(schema), schema } : undefined;
  }

  /** Whether the first `length` segments name a node. */
  has(segments: Segments, length = segments.length): boolean {
    return this.schemaAt(segments, length) !== undefined;
  }

  /** Every node's path, depth first in key order: the candidates for a "did you mean". */
  paths(): string[] {
    const paths: string[] = [];
    const visit = (fields: Readonly<Record<string, TargetSchema>>, parent: string) => {
      for (const name of Object.keys(fields).sort()) {
        const path = parent ? `${parent}.${name}` : name;
        paths.push(path);
        visit(branchFields(fields[name] as TargetSchema), path);
      }
    };
    visit(this.fields, '');
    return paths;
  }

  private schemaAt(segments: Segments, length: number): TargetSchema | undefined {
    let fields = this.fields;
    let schema: TargetSchema | undefined;
    for (let i = 0; i < length; i++) {
      const name = segments[i] as string;
      if (!Object.hasOwn(fields, name)) return undefined;
      schema = fields[name] as TargetSchema;
      fields = branchFields(schema);
    }
    return schema;
  }
}

/**
 * The schema `path` names from `from` on, its segments appended to `segments`. A segment is a
 * property name; a name may itself hold a dot, so where no name matches up to the next dot, a
 * name that spans several does.
 */
function resolvePath(
  fields: Readonly<Record<string, TargetSchema>>,
  path: string,
  from: number,
  segments: string[],
): TargetSchema | undefined {
  const dot = path.indexOf('.', from);
  const simple = dot < 0 ? path.slice(from) : path.slice(from, dot);
  const found = Object.hasOwn(fields, simple) && resolveBelow(fields, simple, path, from, segments);
  if (found) return found;
  for (const name in fields) {
    if (name.length <= simple.length || !Object.hasOwn(fields, name) || !path.startsWith(name, from))
      continue;
    const end = from + name.length;
    if (end !== path.length && path[end] !== '.') continue;
    const spanning = resolveBelow(fields, name, path, from, segments);
    if (spanning) return spanning;
  }
  return undefined;
}

function resolveBelow(
  fields: Readonly<Record<string, TargetSchema>>,
  name: string,
  path: string,
  from: number,
  segments: string[],
): TargetSchema | undefined {
  const schema = fields[name] as TargetSchema;
  const end = from + name.length;
  segments.push(name);
  const found = end === path.length ? schema : resolvePath(branchFields(schema), path, end + 1, segments);
  if (!found) segments.pop();
  return found;
}

/**
 * An object under a combinator is one opaque unit: its fields' validity depends on the
 * combinator, which the engine does not evaluate, so rules address it only as a whole.
 */
export function isOpaque(schema: TargetSchema): boolean {
  return !hasNamedProperties(schema) || combinatorsOf(schema).length > 0;
}

/**
 * An object declared without fields (`type: object`, maybe `properties: {}`), no map values, no
 * preserved unknown fields: the apiserver prunes whatever it holds, so it has no value to lose.
 * Coverage walks it as a branch with no fields rather than as a leaf that must match the other
 * side, as the reference does: a side that declares `spec: {}` while the other declares fields
 * of it is accounted for by the rules claiming those fields.
 */
export function isFieldlessObject(schema: TargetSchema): boolean {
  return (
    (schema.type === 'object' || schema.properties !== undefined) &&
    !hasNamedProperties(schema) &&
    (schema.additionalProperties === undefined || schema.additionalProperties === false) &&
    !schema['x-kubernetes-preserve-unknown-fields'] &&
    !schema['x-kubernetes-embedded-resource'] &&
    combinatorsOf(schema).length === 0
  );
}

/** The fields under a node that rules can address: none under a leaf. */
export function branchFields(schema: TargetSchema): Readonly<Record<string, TargetSchema>> {
  return isOpaque(schema) ? NO_FIELDS : (schema.properties ?? NO_FIELDS);
}

function hasNamedProperties(
  schema: TargetSchema,
): schema is TargetSchema & { properties: Readonly<Record<string, TargetSchema>> } {
  if (schema.properties === undefined) return false;
  for (const name in schema.properties) if (Object.hasOwn(schema.properties, name)) return true;
  return false;
}

/**
 * Whether two schemas are interchangeable: the same JSON type, format, enum (in any order),
 * nullability, int-or-string and preserved or embedded fields, combinators alike (compared
 * verbatim), and recursively the same object properties, array items and map values.
 * Documentation and numeric or length bounds do not count: a value valid on one side has the
 * shape of the other. Compared in place: compile asks this of every field that passes through.
 */
export function sameShape(a: TargetSchema, b: TargetSchema): boolean {
  if (a === b) return true;
  if (
    !a.nullable !== !b.nullable ||
    !a['x-kubernetes-preserve-unknown-fields'] !== !b['x-kubernetes-preserve-unknown-fields'] ||
    !a['x-kubernetes-embedded-resource'] !== !b['x-kubernetes-embedded-resource'] ||
    !sameCombinators(a, b)
  )
    return false;
  const named = hasNamedProperties(a);
  if (named !== hasNamedProperties(b)) return false;
  if (named) return sameProperties(a.properties ?? NO_FIELDS, b.properties ?? NO_FIELDS);
  return sameBase(a, b) && sameEnum(a.enum, b.enum);
}

/** A missing schema (array items, map values) accepts anything, as `{}` does. */
const ANY: TargetSchema = {};

function sameProperties(
  a: Readonly<Record<string, TargetSchema>>,
  b: Readonly<Record<string, TargetSchema>>,
): boolean {
  let count = 0;
  for (const name in a) {
    if (!Object.hasOwn(a, name)) continue;
    count++;
    if (!Object.hasOwn(b, name) || !sameShape(a[name] as TargetSchema, b[name] as TargetSchema)) return false;
  }
  for (const name in b) if (Object.hasOwn(b, name)) count--;
  return count === 0;
}

type BaseKind = 'int-or-string' | 'array' | 'map' | 'scalar';

function baseKind(schema: TargetSchema): BaseKind {
  if (schema['x-kubernetes-int-or-string']) return 'int-or-string';
  if (schema.type === 'array') return 'array';
  if (schema.type === 'object' || schema.additionalProperties !== undefined) return 'map';
  return 'scalar';
}

function sameBase(a: TargetSchema, b: TargetSchema): boolean {
  const kind = baseKind(a);
  if (kind !== baseKind(b)) return false;
  switch (kind) {
    case 'int-or-string':
      return true;
    case 'array':
      return sameShape(a.items ?? ANY, b.items ?? ANY);
    case 'map':
      return sameMapValues(a.additionalProperties, b.additionalProperties);
    default:
      return (a.type ?? 'any') === (b.type ?? 'any') && (a.format || '') === (b.format || '');
  }
}

/** `additionalProperties`: absent or false declares no map; true is a map of anything. */
function sameMapValues(
  a: TargetSchema | boolean | undefined,
  b: TargetSchema | boolean | undefined,
): boolean {
  const aMap = a !== undefined && a !== false;
  if (aMap !== (b !== undefined && b !== false)) return false;
  return !aMap || sameShape(a === true ? ANY : (a as TargetSchema), b === true ? ANY : (b as TargetSchema));
}

// Enum order carries no meaning: compared as sorted lists of the values' JSON.
function sameEnum(a: readonly unknown[] | undefined, b: readonly unknown[] | undefined): boolean {
  if (!a || !b) return !a === !b;
  if (a.length !== b.length) return false;
  const sortedA = a.map((value) => JSON.stringify(value)).sort();
  const sortedB = b.map((value) => JSON.stringify(value)).sort();
  return sortedA.every((value, i) => value === sortedB[i]);
}

function sameCombinators(a: TargetSchema, b: TargetSchema): boolean {
  const present = combinatorsOf(a);
  if (present.length !== combinatorsOf(b).length) return false;
  return present.every((c) => b[c] !== undefined && canonicalJson(a[c]) === canonicalJson(b[c]));
}

/** JSON with object keys sorted, so equal schemas written in another key order compare equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (!isJsonObject(value)) return JSON.stringify(value);
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

/**
 * A short description of a node's shape, for diagnostics, in the schema's own words: a value
 * without a type is named after what the user wrote instead (oneOf, preserve-unknown-fields).
 */
export function describeShape(schema: TargetSchema): string {
  const combinators = combinatorsOf(schema).join(', ');
  const base = baseDescription(schema);
  if (!combinators) return base;
  return base === UNTYPED ? `a value typed only by ${combinators}` : `${base} constrained by ${combinators}`;
}

const UNTYPED = 'a value with no type';

function baseDescription(schema: TargetSchema): string {
  if (hasNamedProperties(schema)) return 'an object with fields';
  if (schema['x-kubernetes-int-or-string']) return 'an int-or-string (x-kubernetes-int-or-string)';
  if (schema.type === 'array') return `an array of ${schema.items?.type ?? 'any'}`;
  if (schema.type === 'object' || schema.additionalProperties !== undefined) {
    return schema.additionalProperties ? 'a map (additionalProperties)' : 'an object without declared fields';
  }
  if (schema.type === undefined) {
    return schema['x-kubernetes-preserve-unknown-fields']
      ? 'a value of any type (x-kubernetes-preserve-unknown-fields, no type)'
      : UNTYPED;
  }
  return schema.enum
    ? `${schema.type} enum [${schema.enum.map((v) => JSON.stringify(v)).join(', ')}]`
    : schema.type;
}

/** Which keywords make two same-looking shapes differ, named as the schema spells them. */
export function differingKeywords(a: TargetSchema, b: TargetSchema): string[] {
  const keywords = [
    'enum',
    'format',
    'nullable',
    ...COMBINATORS,
    'x-kubernetes-preserve-unknown-fields',
    'x-kubernetes-embedded-resource',
  ] as const;
  const differing: string[] = keywords.filter((k) => canonicalJson(a[k]) !== canonicalJson(b[k]));
  if (differing.length === 0) differing.push('nested fields');
  return differing;
}

/**
 * Why a value does not fit a schema, or undefined when it does. Used at compile time on the
 * values a config writes (defaults, constants, enum mappings), so a config cannot make the
 * engine produce an object the apiserver would reject or prune.
 */
export function misfit(value: unknown, schema: TargetSchema, where: string): string | undefined {
  const combinators = combinatorsOf(schema);
  if (schema.type === undefined && combinators.length > 0) {
    return `${where} cannot be checked: the field's type is given only by ${combinators.join(', ')}, which the engine does not evaluate`;
  }
  if (value === null) return schema.nullable ? undefined : `${where} is null but the schema is not nullable`;
  if (schema.enum && !schema.enum.some((allowed) => JSON.stringify(allowed) === JSON.stringify(value))) {
    return `${where} is ${JSON.stringify(value)}, not one of the schema's enum values`;
  }
  if (schema['x-kubernetes-int-or-string']) {
    return typeof value === 'string' || Number.isInteger(value)
      ? undefined
      : `${where} is ${shown(value)}, not an int-or-string`;
  }
  switch (schema.type) {
    case 'string':
    case 'boolean':
      return typeof value === schema.type ? undefined : `${where} is ${shown(value)}, not a ${schema.type}`;
    case 'integer':
      return Number.isInteger(value) ? undefined : `${where} is ${shown(value)}, not an integer`;
    case 'number':
      return typeof value === 'number' ? undefined : `${where} is ${shown(value)}, not a number`;
    case 'array':
      return misfitArray(value, schema, where);
    case 'object':
      return misfitObject(value, schema, where);
    default:
      return hasNamedProperties(schema) ? misfitObject(value, schema, where) : undefined;
  }
}

/** A value as a message shows it: scalars verbatim (so "1" and 1 read differently), not whole objects. */
function shown(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  return isJsonObject(value) ? 'an object' : JSON.stringify(value);
}

function misfitArray(value: unknown, schema: TargetSchema, where: string): string | undefined {
  if (!Array.isArray(value)) return `${where} is not an array`;
  if (!schema.items) return undefined;
  const items = schema.items;
  for (let i = 0; i < value.length; i++) {
    const problem = misfit(value[i], items, `${where}[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}

function misfitObject(value: unknown, schema: TargetSchema, where: string): string | undefined {
  if (!isJsonObject(value)) return `${where} is not an object`;
  for (const [key, field] of Object.entries(value)) {
    const fieldSchema = schema.properties?.[key] ?? additionalSchema(schema);
    if (!fieldSchema) {
      if (schema['x-kubernetes-preserve-unknown-fields']) continue;
      return `${where}.${key} is not declared by the schema (the apiserver would prune it)`;
    }
    const problem = misfit(field, fieldSchema, `${where}.${key}`);
    if (problem) return problem;
  }
  return undefined;
}

function additionalSchema(schema: TargetSchema): TargetSchema | undefined {
  const values = schema.additionalProperties;
  if (values === true) return {};
  return values === false ? undefined : values;
}
