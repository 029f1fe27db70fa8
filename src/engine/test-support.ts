// Builders shared by the engine's tests: schemas, target versions and rules, terse enough that
// a table row reads as the scenario it tests.

import { expect } from 'vitest';
import { type Rule, ruleSchema } from '../api/rules.ts';
import { type ConversionSpec, compile, type TargetVersion } from './compile.ts';
import type { ConvertResult } from './convert.ts';
import type { Diagnostic } from './diagnostics.ts';
import type { Router } from './plan.ts';
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

/** The router of a target whose hub (v2) and spoke (v1) declare these spec fields; throws when the rules do not compile. */
export function compiled(
  hub: Record<string, TargetSchema>,
  spoke: Record<string, TargetSchema>,
  rules: unknown[],
): Router {
  const result = compile(spec('v2', { v1: rules }), versions({ v2: root(hub), v1: root(spoke) }));
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

/** The errors compiling these rules gives; asserts there are some. */
export function refusal(
  hub: Record<string, TargetSchema>,
  spoke: Record<string, TargetSchema>,
  rules: unknown[],
): Diagnostic[] {
  const result = compile(spec('v2', { v1: rules }), versions({ v2: root(hub), v1: root(spoke) }));
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

/** A conversion's spec, or the failed result itself. */
export const specOf = (result: ConvertResult) =>
  result.ok ? (result.object as { spec: unknown }).spec : result;
