// Builders shared by the engine's tests: schemas, target versions and rules, terse enough that
// a table row reads as the scenario it tests.
import { type Rule, ruleSchema } from '../api/rules.ts';
import type { ConversionSpec, TargetVersion } from './compile.ts';
import type { TargetSchema } from './schema.ts';

export const str = (extra: Partial<TargetSchema> = {}): TargetSchema => ({ type: 'string', ...extra });
export const int = (): TargetSchema => ({ type: 'integer' });
export const bool = (): TargetSchema => ({ type: 'boolean' });
export const enumOf = (...values: string[]): TargetSchema => ({ type: 'string', enum: values });
export const obj = (properties: Record<string, TargetSchema>): TargetSchema => ({
  type: 'object',
  properties,
});
export const arrayOf = (items: TargetSchema): TargetSchema => ({ type: 'array', items });
export const mapOf = (values: TargetSchema): TargetSchema => ({
  type: 'object',
  additionalProperties: values,
});

/** A whole-object schema as a CRD version declares it, metadata included. */
export function root(
  spec: Record<string, TargetSchema>,
  status?: Record<string, TargetSchema>,
): TargetSchema {
  const properties: Record<string, TargetSchema> = {
    apiVersion: str(),
    kind: str(),
    metadata: { type: 'object' },
    spec: obj(spec),
  };
  if (status) properties.status = obj(status);
  return obj(properties);
}

/** Versions of a target; the first is the storage version, all are served. */
export function versions(schemas: Record<string, TargetSchema>): TargetVersion[] {
  return Object.entries(schemas).map(([name, schema], i) => ({
    name,
    served: true,
    storage: i === 0,
    schema,
  }));
}

/** A rule as the API would accept it, defaults applied. */
export function rule(input: unknown): Rule {
  return ruleSchema.parse(input);
}

export function spec(hubVersion: string, spokes: Record<string, unknown[]>): ConversionSpec {
  return {
    hubVersion,
    spokes: Object.entries(spokes).map(([version, rules]) => ({ version, rules: rules.map(rule) })),
  };
}

export const GROUP = 'example.org';

export function object(
  version: string,
  specFields: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return {
    apiVersion: `${GROUP}/${version}`,
    kind: 'Widget',
    metadata: { name: 'w1', namespace: 'team-a', labels: { app: 'w' } },
    spec: specFields,
    ...extra,
  };
}
