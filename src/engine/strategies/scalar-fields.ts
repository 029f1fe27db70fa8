// ScalarToFields and FieldsToScalar: one string on one side is several fields on the other
// ("50Gi" and {value: 50, unit: "Gi"}). Splitting matches the string against `pattern` (Go's
// regexp, compiled once with the rule, matched in linear time: go-regexp.ts) and writes each
// named group's text to its field (the last group of that name, as the reference reads them by
// name), coerced to the field's declared type as Go's coerceScalarValue would; joining renders
// `joinTemplate` (a Go text/template subset, go-template.ts) over the fields present. A pattern is
// refused where Go refuses it, and a field whose name no group has, as the reference does.
//
// Verdicts: lossy both ways unless `losslessOverride`. Nothing proves the pattern and the
// template invert each other (and coercion can change a value's spelling: "007" comes back as
// 7), so, as in the reference, only the author can assert it.
//
// Refused although the reference accepts them: a string side declared with another JSON type
// (the join would write a string where an integer belongs; splitting fails on every value of
// its type), and a template that references a name no field has (the reference fails every
// conversion of an object that has any of the fields).
import type { RuleOf } from '../../api/rules.ts';
import { CompileCache } from '../compile-cache.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { coerceScalar, type ScalarKind } from '../go-values.ts';
import { joinPath, overlaps, type Segments } from '../paths.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import type { SchemaNode, TargetSchema } from '../schema.ts';
import { failed, type Located, locate, lookup, type TransformResult } from './common.ts';
import { compileGoRegexp, type GoRegexp } from './go-regexp.ts';
import { type JoinTemplate, parseJoinTemplate } from './go-template.ts';

type Rule = RuleOf<'ScalarToFields'> | RuleOf<'FieldsToScalar'>;

interface Field {
  name: string;
  node: SchemaNode;
  kind: ScalarKind;
  /** The number of the last group with this name (the reference keeps the last one by name). */
  group: number;
}

// A compiled pattern and a parsed template are immutable: one serves every rule that spells it.
const PATTERNS = new CompileCache<ReturnType<typeof compileGoRegexp>>();
const TEMPLATES = new CompileCache<ReturnType<typeof parseJoinTemplate>>();

export function scalarFields(rule: Rule, at: Located): TransformResult {
  const scalarOnHub = rule.strategy === 'ScalarToFields';
  const params = rule.strategy === 'ScalarToFields' ? rule.scalarToFields : rule.fieldsToScalar;
  const scalarPath =
    rule.strategy === 'ScalarToFields' ? rule.scalarToFields.hubPath : rule.fieldsToScalar.spokePath;
  const fieldPaths =
    rule.strategy === 'ScalarToFields' ? rule.scalarToFields.spokeFields : rule.fieldsToScalar.hubFields;
  const scalarSide = scalarOnHub ? 'hub' : 'spoke';
  const fieldsSide = scalarOnHub ? 'spoke' : 'hub';
  const scalar = lookup(scalarSide, scalarPath, at);
  const lookups = Object.entries(fieldPaths).map(([name, path]) => ({
    name,
    found: lookup(fieldsSide, path, at),
  }));
  if (!scalar.ok || lookups.some((l) => !l.found.ok)) return failed(scalar, ...lookups.map((l) => l.found));
  const regexp = PATTERNS.get(params.pattern, () => compileGoRegexp(params.pattern));
  const template = TEMPLATES.get(params.joinTemplate, () => parseJoinTemplate(params.joinTemplate));
  const diagnostics: Diagnostic[] = [
    ...stringSideProblems(scalar.node, at),
    ...(regexp.ok ? [] : [invalid(at, scalarPath, 'pattern', regexp.problem)]),
    ...(template.ok ? [] : [invalid(at, scalarPath, 'joinTemplate', template.problem)]),
  ];
  const fields: Field[] = [];
  for (const { name, found } of lookups) {
    if (!found.ok) continue;
    const kind = declaredScalarKind(found.node.schema);
    if (!kind) diagnostics.push(notScalar(found.node, fieldsSide, at));
    const group = regexp.ok ? regexp.regexp.subexpNames.lastIndexOf(name) : 0;
    if (group < 0) diagnostics.push(noGroup(name, found.node.path, at));
    if (kind) fields.push({ name, node: found.node, kind, group });
  }
  diagnostics.push(...repeatedFields(fields, at));
  if (template.ok) diagnostics.push(...unknownReferences(template.template, fields, scalarPath, at));
  if (diagnostics.length > 0 || !regexp.ok || !template.ok) return { ok: false, diagnostics };
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'run' as const };
  const fieldSegments = fields.map((f) => f.node.segments);
  const splitting: Op = {
    ...base,
    from: scalar.node.segments,
    to: fieldSegments[0] ?? scalar.node.segments,
    run: split(scalar.node, regexp.regexp, fields),
  };
  const joining: Op = {
    ...base,
    from: fieldSegments[0] ?? scalar.node.segments,
    to: scalar.node.segments,
    run: join(fields, template.template, scalar.node.segments),
  };
  const ops: Partial<Record<Direction, Op>> = scalarOnHub
    ? { hubToSpoke: splitting, spokeToHub: joining }
    : { hubToSpoke: joining, spokeToHub: splitting };
  const losses: Partial<Record<Direction, string>> = {};
  if (!params.losslessOverride) {
    const unproven = `${rule.strategy} cannot prove that pattern and joinTemplate invert each other for every value of ${scalarPath}; set losslessOverride: true if they do.`;
    losses.hubToSpoke = unproven;
    losses.spokeToHub = unproven;
  }
  return {
    ok: true,
    transform: {
      path: scalarPath,
      claims: scalarOnHub
        ? { hub: [scalar.node.segments], spoke: fieldSegments }
        : { hub: fieldSegments, spoke: [scalar.node.segments] },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

/** The scalar kind a field's schema declares (the reference's classify), if it is one. */
export function declaredScalarKind(schema: TargetSchema): ScalarKind | undefined {
  if (schema['x-kubernetes-preserve-unknown-fields']) return undefined;
  const type = schema.type;
  return type === 'string' || type === 'integer' || type === 'number' || type === 'boolean'
    ? type
    : undefined;
}

// --- compile-time checks

/** The string side may be untyped (int-or-string, preserved fields) but not of another type. */
function stringSideProblems(node: SchemaNode, at: Located): Diagnostic[] {
  const type = node.schema.type;
  if (type === undefined || type === 'string') return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `${node.path} is declared ${type}, but the joined value is a string and only a string is split.`,
      `Point the rule at a string field, or use a strategy for ${type} values.`,
    ),
  ];
}

function invalid(at: Located, path: string, param: string, problem: string): Diagnostic {
  return error('InvalidValue', locate(at, path), `${param}: ${problem}.`, `Fix ${param}.`);
}

function notScalar(node: SchemaNode, side: 'hub' | 'spoke', at: Located): Diagnostic {
  return error(
    'ShapeMismatch',
    locate(at, node.path),
    `The ${side} field ${node.path} is ${node.schema.type ?? 'untyped'}, not a string, integer, number or boolean, so a captured text cannot be coerced to it.`,
    'Map each name to a scalar field.',
  );
}

function noGroup(name: string, path: string, at: Located): Diagnostic {
  return error(
    'InvalidRule',
    locate(at, path),
    `Field ${JSON.stringify(name)} has no matching named capture group in pattern.`,
    `Add (?P<${name}>…) to the pattern, or rename the field's key to a group's name.`,
  );
}

function repeatedFields(fields: readonly Field[], at: Located): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  fields.forEach((later, j) => {
    const earlier = fields.slice(0, j).find((f) => overlaps(f.node.segments, later.node.segments));
    if (earlier) {
      diagnostics.push(
        error(
          'InvalidRule',
          locate(at, later.node.path),
          `Groups ${JSON.stringify(earlier.name)} and ${JSON.stringify(later.name)} both write ${joinPath(later.node.segments)}.`,
          'Give each group a field of its own.',
        ),
      );
    }
  });
  return diagnostics;
}

function unknownReferences(
  template: JoinTemplate,
  fields: readonly Field[],
  path: string,
  at: Located,
): Diagnostic[] {
  const names = new Set(fields.map((f) => f.name));
  return template.references
    .filter((name) => !names.has(name))
    .map((name) =>
      error(
        'InvalidValue',
        locate(at, path),
        `joinTemplate references .${name}, which no field supplies, so every join of an object with any of the fields would fail.`,
        `Add a field named ${name}, or remove {{.${name}}} from joinTemplate.`,
      ),
    );
}

// --- conversion

/** The string at `source` matched against the pattern; each group's text coerced into its field. */
function split(source: SchemaNode, regexp: GoRegexp, fields: readonly Field[]): OpRun {
  const from = source.segments;
  const sourcePath = source.path;
  const pattern = JSON.stringify(regexp.pattern);
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (typeof value !== 'string')
      return {
        message: `splitField: value at ${JSON.stringify(sourcePath)} is not a string`,
        path: sourcePath,
      };
    const captured = regexp.exec(value);
    if (!captured) {
      return {
        message: `splitField: value ${JSON.stringify(value)} at ${JSON.stringify(sourcePath)} does not match pattern ${pattern}`,
        path: sourcePath,
      };
    }
    for (const field of fields) {
      const coerced = coerceScalar(captured[field.group] as string, field.kind);
      if (!coerced.ok)
        return {
          message: `splitField: group ${JSON.stringify(field.name)}: ${coerced.message}`,
          path: field.node.path,
        };
      const failure = writeField(output, field.node.segments, coerced.value);
      if (failure) return failure;
    }
    return undefined;
  };
}

/** The template rendered over the fields present; none present writes nothing. */
function join(fields: readonly Field[], template: JoinTemplate, to: Segments): OpRun {
  const target = joinPath(to);
  return (input, output) => {
    const values: Record<string, unknown> = Object.create(null);
    let anyPresent = false;
    for (const field of fields) {
      const value = readField(input, field.node.segments);
      if (value === undefined) continue;
      values[field.name] = value;
      anyPresent = true;
    }
    if (!anyPresent) return undefined;
    const rendered = template.render(values, (name) => Object.hasOwn(values, name));
    if (!rendered.ok) {
      return {
        message: `joinFields: template execution: executing "join" at <.${rendered.missing}>: map has no entry for key ${JSON.stringify(rendered.missing)}`,
        path: target,
      };
    }
    return writeField(output, to, rendered.text);
  };
}
