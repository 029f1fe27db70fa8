// NumericScale: a number whose unit differs between hub and spoke (hub value = spoke value ×
// factor, e.g. megabytes on the hub, gigabytes on the spoke with factor 1024). Converting into
// an integer field rounds halves away from zero, as Go's math.Round.
//
// Verdicts are the reference's: a direction is lossless exactly when its destination is a
// number field, since rounding into an integer loses the fraction. "Lossless" presumes the
// float arithmetic inverts (x / f × f is x for powers of two, not for every factor).
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { formatGoFloat, roundHalfAwayFromZero } from '../go-values.ts';
import { joinPath, type Segments } from '../paths.ts';
import type { Direction, OpRun } from '../plan.ts';
import { describeShape, type SchemaNode, sameShape } from '../schema.ts';
import { arrow, failed, type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';

export function numericScale(rule: RuleOf<'NumericScale'>, at: Located): TransformResult {
  const { hubPath, spokePath, factor } = rule.numericScale;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  const diagnostics: Diagnostic[] = [];
  if (factor === 0) {
    diagnostics.push(
      error(
        'InvalidValue',
        locate(at, hubPath),
        'numericScale.factor is 0: the spoke value cannot be derived from the hub value.',
        'Set factor to the non-zero ratio hub value / spoke value.',
      ),
    );
  }
  if (!hub.ok || !spoke.ok)
    return { ok: false, diagnostics: [...diagnostics, ...failed(hub, spoke).diagnostics] };
  diagnostics.push(...notNumeric('hub', hub.node, at), ...notNumeric('spoke', spoke.node, at));
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const spokeIsInteger = spoke.node.schema.type === 'integer';
  const hubIsInteger = hub.node.schema.type === 'integer';
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'run' as const };
  const from = hub.node.segments;
  const to = spoke.node.segments;
  const losses: Partial<Record<Direction, string>> = {};
  if (spokeIsInteger) losses.hubToSpoke = roundedIntoInteger(spokePath, 'hubToSpoke');
  if (hubIsInteger) losses.spokeToHub = roundedIntoInteger(hubPath, 'spokeToHub');
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [from], spoke: [to] },
      ops: {
        hubToSpoke: { ...base, from, to, run: scaled(from, to, factor, 'divide', spokeIsInteger) },
        spokeToHub: { ...base, from: to, to: from, run: scaled(to, from, factor, 'multiply', hubIsInteger) },
      },
      losses,
      onSkip: hubPath === spokePath && sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

/** The reference classifies by `type` only; a preserve-unknown-fields subtree is an object. */
function isNumericField(node: SchemaNode): boolean {
  const { schema } = node;
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) return false;
  return schema.type === 'integer' || schema.type === 'number';
}

function notNumeric(side: SideKey, node: SchemaNode, at: Located): Diagnostic[] {
  if (isNumericField(node)) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `NumericScale scales integer and number fields, but the ${side} declares ${node.path} as ${describeShape(node.schema)}.`,
      'Point NumericScale at an integer or number field on each side.',
    ),
  ];
}

function roundedIntoInteger(path: string, direction: Direction): string {
  return `converting ${arrow(direction)}, the scaled value is rounded into the integer field ${path}.`;
}

/**
 * The number at `from`, divided or multiplied by the factor, at `to`; rounded for an integer
 * field. Dividing divides (x / f), as the reference does: multiplying by 1 / f can differ in
 * the last bit. A result beyond float64 fails: Go could not encode it in the response.
 */
function scaled(
  from: Segments,
  to: Segments,
  factor: number,
  operation: 'divide' | 'multiply',
  round: boolean,
): OpRun {
  const notNumber = `numericScale: value at ${joinPath(from)} is not numeric`;
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (typeof value !== 'number') return { message: notNumber };
    const product = operation === 'divide' ? value / factor : value * factor;
    const result = round ? roundHalfAwayFromZero(product) : product;
    if (!Number.isFinite(result)) {
      return {
        message: `numericScale: ${value} ${operation === 'divide' ? '/' : '×'} ${factor} is ${formatGoFloat(result)}, which JSON cannot hold`,
      };
    }
    return writeField(output, to, result);
  };
}
