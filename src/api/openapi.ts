// Translates the zod schemas of this package into the structural OpenAPI v3 subset that
// CustomResourceDefinitions accept. The zod schemas are the single source of truth; this
// translation is deliberately narrow: it knows the handful of shapes the API uses and throws
// (at generation time, caught by the drift test) on anything else, rather than emitting a
// schema the apiserver would read differently from zod.
//
// Kubernetes-only vocabulary (list types, CEL validations, schemaless JSON) travels as zod
// metadata under its OpenAPI extension names and is copied verbatim.
import { z } from 'zod';
import type * as zc from 'zod/v4/core';
import { jsonValueSchema } from './json-value.ts';

export interface CelValidation {
  rule: string;
  message: string;
}

export interface StructuralSchema {
  type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  description?: string;
  properties?: Record<string, StructuralSchema>;
  required?: string[];
  items?: StructuralSchema;
  additionalProperties?: StructuralSchema;
  enum?: unknown[];
  default?: unknown;
  format?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  'x-kubernetes-preserve-unknown-fields'?: true;
  'x-kubernetes-validations'?: CelValidation[];
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
}

const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

/** Any JSON value, stored as given (the apiserver neither prunes nor types it). */
export function jsonValue(description: string) {
  return jsonValueSchema().meta({ description, [PRESERVE]: true });
}

/** An object whose fields belong to another API (e.g. core/v1 Affinity), kept opaque. */
export function opaqueObject(description: string) {
  return z.record(z.string(), jsonValueSchema()).meta({ description, [PRESERVE]: true });
}

type AnySchema = zc.$ZodType;

function metaOf(schema: AnySchema): Record<string, unknown> {
  return (z.globalRegistry.get(schema) as Record<string, unknown> | undefined) ?? {};
}

function defOf(schema: AnySchema): zc.$ZodTypeDef & Record<string, unknown> {
  return schema._zod.def as zc.$ZodTypeDef & Record<string, unknown>;
}

/** Whether an object property may be omitted (optional, or filled by a default). */
function isOmittable(schema: AnySchema): boolean {
  const type = defOf(schema).type;
  return type === 'optional' || type === 'default';
}

/** Converts one zod schema; metadata of every wrapper layer applies, the outermost winning. */
export function toStructural(schema: AnySchema): StructuralSchema {
  const meta = metaOf(schema);
  const base = meta[PRESERVE] === true ? schemaless(schema) : convertByType(schema);
  return withMeta(base, meta);
}

function withMeta(base: StructuralSchema, meta: Record<string, unknown>): StructuralSchema {
  const out: StructuralSchema = { ...base };
  if (typeof meta.description === 'string') out.description = meta.description;
  for (const [key, value] of Object.entries(meta)) {
    if (key.startsWith('x-kubernetes-')) (out as Record<string, unknown>)[key] = value;
  }
  return out;
}

function schemaless(schema: AnySchema): StructuralSchema {
  // A schemaless object keeps `type: object`; a schemaless value of any JSON type has no type.
  return defOf(schema).type === 'record' ? { type: 'object', [PRESERVE]: true } : { [PRESERVE]: true };
}

function convertByType(schema: AnySchema): StructuralSchema {
  const def = defOf(schema);
  switch (def.type) {
    case 'optional':
      return toStructural(def.innerType as AnySchema);
    case 'default':
      return { ...toStructural(def.innerType as AnySchema), default: structuredClone(def.defaultValue) };
    case 'string':
      return stringSchema(schema);
    case 'number':
      return numberSchema(schema);
    case 'boolean':
      return { type: 'boolean' };
    case 'enum':
      return { type: 'string', enum: Object.values(def.entries as Record<string, string>) };
    case 'literal':
      return literalSchema(def.values as unknown[]);
    case 'array':
      return arraySchema(schema);
    case 'record':
      return { type: 'object', additionalProperties: toStructural(def.valueType as AnySchema) };
    case 'object':
      return objectSchema(def.shape as Record<string, AnySchema>);
    case 'union':
      if (typeof def.discriminator === 'string') {
        return discriminatedUnionSchema(def.discriminator, def.options as AnySchema[]);
      }
      throw new Error('only discriminated unions map onto a structural schema');
    default:
      throw new Error(`zod type "${def.type}" has no structural CRD equivalent`);
  }
}

function checksOf(schema: AnySchema): Array<Record<string, unknown>> {
  const checks = (defOf(schema).checks as zc.$ZodCheck[] | undefined) ?? [];
  return checks.map((check) => check._zod.def as unknown as Record<string, unknown>);
}

function stringSchema(schema: AnySchema): StructuralSchema {
  const out: StructuralSchema = { type: 'string' };
  const def = defOf(schema);
  if (def.format === 'datetime') out.format = 'date-time';
  for (const check of checksOf(schema)) {
    if (check.check === 'min_length') out.minLength = check.minimum as number;
    if (check.check === 'max_length') out.maxLength = check.maximum as number;
    if (check.check === 'string_format' && check.format === 'regex')
      out.pattern = (check.pattern as RegExp).source;
  }
  return out;
}

function numberSchema(schema: AnySchema): StructuralSchema {
  const def = defOf(schema);
  const checks = checksOf(schema);
  const isInteger =
    def.format === 'safeint' ||
    def.format === 'int32' ||
    checks.some((c) => c.check === 'number_format' && (c.format === 'safeint' || c.format === 'int32'));
  const out: StructuralSchema = { type: isInteger ? 'integer' : 'number' };
  if (def.format === 'int32') out.format = 'int32';
  for (const check of checks) {
    if (check.check === 'greater_than') {
      out.minimum = check.value as number;
      if (check.inclusive !== true) out.exclusiveMinimum = true;
    }
    if (check.check === 'less_than') {
      out.maximum = check.value as number;
      if (check.inclusive !== true) out.exclusiveMaximum = true;
    }
  }
  return out;
}

function literalSchema(values: unknown[]): StructuralSchema {
  const kinds = new Set(values.map((v) => typeof v));
  if (kinds.size !== 1 || !(kinds.has('string') || kinds.has('number') || kinds.has('boolean'))) {
    throw new Error('a literal must be one or more values of a single scalar type');
  }
  const kind = [...kinds][0] as 'string' | 'number' | 'boolean';
  return { type: kind, enum: [...values] };
}

function arraySchema(schema: AnySchema): StructuralSchema {
  const out: StructuralSchema = { type: 'array', items: toStructural(defOf(schema).element as AnySchema) };
  for (const check of checksOf(schema)) {
    if (check.check === 'min_length') out.minItems = check.minimum as number;
    if (check.check === 'max_length') out.maxItems = check.maximum as number;
  }
  return out;
}

function objectSchema(shape: Record<string, AnySchema>): StructuralSchema {
  const properties: Record<string, StructuralSchema> = {};
  const required: string[] = [];
  for (const [key, value] of Object.entries(shape)) {
    properties[key] = toStructural(value);
    if (!isOmittable(value)) required.push(key);
  }
  return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties };
}

// A structural schema cannot branch, so a discriminated union becomes one object holding every
// variant's fields, with the discriminator as an enum and CEL rules restoring what the union
// said: a variant-only field is present exactly when the discriminator selects its variant.
function discriminatedUnionSchema(discriminator: string, options: AnySchema[]): StructuralSchema {
  const variants = options.map((option) => ({
    tag: variantTag(option, discriminator),
    object: objectSchema(defOf(option).shape as Record<string, AnySchema>),
  }));
  const properties: Record<string, StructuralSchema> = {};
  const owners = new Map<string, string[]>();
  for (const { tag, object } of variants) {
    for (const [key, value] of Object.entries(object.properties ?? {})) {
      if (key === discriminator) continue;
      const seen = properties[key];
      if (seen !== undefined && JSON.stringify(seen) !== JSON.stringify(value)) {
        throw new Error(`field "${key}" has different schemas in different variants`);
      }
      properties[key] = value;
      owners.set(key, [...(owners.get(key) ?? []), tag]);
    }
  }
  const tags = variants.map((v) => v.tag);
  const shared = [...owners].filter(([, by]) => by.length === tags.length).map(([key]) => key);
  const requiredEverywhere = shared.filter((key) => variants.every((v) => v.object.required?.includes(key)));
  const validations = [...owners]
    .filter(([, by]) => by.length < tags.length)
    .map(([key, by]) => variantFieldRule(discriminator, key, by, variants));
  return {
    type: 'object',
    // maxLength bounds the apiserver's CEL cost estimate for the comparisons below.
    properties: {
      [discriminator]: { type: 'string', enum: tags, maxLength: Math.max(...tags.map((t) => t.length)) },
      ...properties,
    },
    required: [discriminator, ...requiredEverywhere],
    'x-kubernetes-validations': validations,
  };
}

function variantTag(option: AnySchema, discriminator: string): string {
  const shape = defOf(option).shape as Record<string, AnySchema>;
  const field = shape[discriminator];
  const values = field === undefined ? [] : ((defOf(field).values as unknown[] | undefined) ?? []);
  if (values.length !== 1 || typeof values[0] !== 'string') {
    throw new Error(`each variant needs one string literal for "${discriminator}"`);
  }
  return values[0];
}

function variantFieldRule(
  discriminator: string,
  key: string,
  tags: string[],
  variants: Array<{ tag: string; object: StructuralSchema }>,
): CelValidation {
  const selected = tags.map((t) => `'${t}'`).join(', ');
  const selects =
    tags.length === 1 ? `self.${discriminator} == ${selected}` : `self.${discriminator} in [${selected}]`;
  const requiredInAll = variants
    .filter((v) => tags.includes(v.tag))
    .every((v) => v.object.required?.includes(key));
  const names = tags.join(' or ');
  return requiredInAll
    ? {
        rule: `has(self.${key}) == (${selects})`,
        message: `${key} is required when ${discriminator} is ${names}, and only then`,
      }
    : {
        rule: `!has(self.${key}) || ${selects}`,
        message: `${key} is allowed only when ${discriminator} is ${names}`,
      };
}
