// A version's structural schema, flattened to the paths rules can name. Compile compares hub
// and spoke path by path: a field "passes through" only if both sides declare it with the same
// shape, so the shape signature below decides what counts as "the same field".
//
// The signature covers what changes which values are valid or how they are read: JSON type,
// format, enum, nullability, int-or-string, preserved unknown fields, and recursively the
// shape of object properties, array items and map values. It leaves out documentation
// (description, example) and the numeric/length bounds: those are validation, a value that
// satisfies one side's type satisfies the other's shape.
import { isJsonObject } from './json.ts';
import { childSegments, type Segments } from './paths.ts';

/** The keywords of an OpenAPI v3 structural schema the engine reads; others are ignored. */
export interface TargetSchema {
  type?: string;
  format?: string;
  enum?: readonly unknown[];
  nullable?: boolean;
  properties?: Readonly<Record<string, TargetSchema>>;
  additionalProperties?: TargetSchema | boolean;
  items?: TargetSchema;
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
  /** The shape signature; computed when first read for a branch (most are never compared). */
  readonly signature: string;
  schema: TargetSchema;
}

export interface SchemaIndex {
  nodes: ReadonlyMap<string, SchemaNode>;
  leaves: readonly SchemaNode[];
}

// Not flattened: the engine handles them itself (see paths.ts).
const ROOT_FIELDS_OWNED_BY_ENGINE = new Set(['apiVersion', 'kind', 'metadata']);

/**
 * The first thing a webhook-server replica does for every target at start, so it is written for
 * speed: paths grow from the parent's, and a branch's signature (the whole subtree as text) is
 * built only if a rule compares it.
 */
export function indexSchema(root: TargetSchema): SchemaIndex {
  const nodes = new Map<string, SchemaNode>();
  const leaves: SchemaNode[] = [];
  for (const name of Object.keys(root.properties ?? {})) {
    if (!ROOT_FIELDS_OWNED_BY_ENGINE.has(name))
      indexNode(
        (root.properties as Record<string, TargetSchema>)[name] as TargetSchema,
        name,
        [name],
        nodes,
        leaves,
      );
  }
  return { nodes, leaves };
}

class Branch implements SchemaNode {
  readonly isLeaf = false;
  private computed: string | undefined;
  readonly path: string;
  readonly segments: Segments;
  readonly schema: TargetSchema;

  constructor(path: string, segments: Segments, schema: TargetSchema) {
    this.path = path;
    this.segments = segments;
    this.schema = schema;
  }

  get signature(): string {
    this.computed ??= shapeSignature(this.schema);
    return this.computed;
  }
}

function indexNode(
  schema: TargetSchema,
  path: string,
  segments: Segments,
  nodes: Map<string, SchemaNode>,
  leaves: SchemaNode[],
): void {
  // An object under a combinator is one opaque unit: its fields' validity depends on the
  // combinator, which the engine does not evaluate, so rules address it only as a whole.
  if (!hasNamedProperties(schema) || combinatorsOf(schema).length > 0) {
    const leaf: SchemaNode = { path, segments, isLeaf: true, signature: shapeSignature(schema), schema };
    nodes.set(path, leaf);
    leaves.push(leaf);
    return;
  }
  nodes.set(path, new Branch(path, segments, schema));
  for (const name of Object.keys(schema.properties).sort()) {
    const child = schema.properties[name] as TargetSchema;
    indexNode(child, `${path}.${name}`, childSegments(segments, name), nodes, leaves);
  }
}

function hasNamedProperties(
  schema: TargetSchema,
): schema is TargetSchema & { properties: Readonly<Record<string, TargetSchema>> } {
  return schema.properties !== undefined && Object.keys(schema.properties).length > 0;
}

/** A canonical string for a schema's shape: equal strings mean interchangeable values. */
function shapeSignature(schema: TargetSchema): string {
  if (hasNamedProperties(schema)) {
    const parts = Object.keys(schema.properties)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${shapeSignature(schema.properties[name] as TargetSchema)}`);
    return `${flags(schema)}{${parts.join(',')}}${combinatorPart(schema)}`;
  }
  return `${flags(schema)}${baseShape(schema)}${enumPart(schema)}${combinatorPart(schema)}`;
}

function combinatorPart(schema: TargetSchema): string {
  return combinatorsOf(schema)
    .map((c) => `&${c}${canonicalJson(schema[c])}`)
    .join('');
}

/** JSON with object keys sorted, so equal schemas written in another key order compare equal. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (!isJsonObject(value)) return JSON.stringify(value);
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

function baseShape(schema: TargetSchema): string {
  if (schema['x-kubernetes-int-or-string']) return 'int-or-string';
  if (schema.type === 'array') return `[${schema.items ? shapeSignature(schema.items) : 'any'}]`;
  if (schema.type === 'object' || schema.additionalProperties !== undefined) {
    const values = schema.additionalProperties;
    if (values === undefined || values === false) return 'object';
    return `map<${values === true ? 'any' : shapeSignature(values)}>`;
  }
  return `${schema.type ?? 'any'}${schema.format ? `(${schema.format})` : ''}`;
}

function flags(schema: TargetSchema): string {
  return (
    (schema.nullable ? '?' : '') +
    (schema['x-kubernetes-preserve-unknown-fields'] ? '*' : '') +
    (schema['x-kubernetes-embedded-resource'] ? '@' : '')
  );
}

// Enum order carries no meaning, so it is sorted out of the signature.
function enumPart(schema: TargetSchema): string {
  if (!schema.enum) return '';
  return `=${schema.enum
    .map((value) => JSON.stringify(value))
    .sort()
    .join('|')}`;
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
