// TypeCoerce: one field, a different JSON scalar type on each side (a string "3" on the hub, an
// integer 3 on the spoke). Each direction converts the value to the type the destination
// declares, with Go's parsing and formatting (go-values.ts), so a value the reference refuses
// ("3 apples", "inf", an object) fails the conversion here too.
//
// Verdicts are the reference's: lossless both ways, unless onFractionalInteger truncates or
// rounds, which loses the fraction converting into an integer field. "Lossless" presumes
// values in the form the other side writes back: "007" becomes 7 and comes back as "7".
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { coerceScalar, type FractionalPolicy, isScalarKind, type ScalarKind } from '../go-values.ts';
import type { Segments } from '../paths.ts';
import type { Direction, OpRun } from '../plan.ts';
import { describeShape, type SchemaNode, sameShape, type TargetSchema } from '../schema.ts';
import { arrow, failed, type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';

export function typeCoerce(rule: RuleOf<'TypeCoerce'>, at: Located): TransformResult {
  const { path, onFractionalInteger } = rule.typeCoerce;
  const hub = lookup('hub', path, at);
  const spoke = lookup('spoke', path, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const hubKind = scalarKindOf(hub.node.schema);
  const spokeKind = scalarKindOf(spoke.node.schema);
  const diagnostics = [
    ...notCoercible('hub', hub.node, hubKind, at),
    ...notCoercible('spoke', spoke.node, spokeKind, at),
  ];
  if (!hubKind || !spokeKind) return { ok: false, diagnostics };
  const segments = hub.node.segments;
  const base = {
    ruleIndex: at.ruleIndex,
    strategy: rule.strategy,
    kind: 'run' as const,
    from: segments,
    to: segments,
  };
  const losses: Partial<Record<Direction, string>> = {};
  if (onFractionalInteger !== 'Error') {
    if (spokeKind === 'integer') losses.hubToSpoke = fractionLost(path, 'hubToSpoke', onFractionalInteger);
    if (hubKind === 'integer') losses.spokeToHub = fractionLost(path, 'spokeToHub', onFractionalInteger);
  }
  return {
    ok: true,
    transform: {
      path,
      claims: { hub: [segments], spoke: [spoke.node.segments] },
      ops: {
        hubToSpoke: { ...base, run: coerceAt(segments, path, spokeKind, onFractionalInteger) },
        spokeToHub: { ...base, run: coerceAt(segments, path, hubKind, onFractionalInteger) },
      },
      losses,
      onSkip: sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

/**
 * The scalar kind a schema declares, as the reference classifies it: by `type`, and a subtree
 * that preserves unknown fields is an object whatever its type says.
 */
function scalarKindOf(schema: TargetSchema): ScalarKind | undefined {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) return undefined;
  return isScalarKind(schema.type) ? schema.type : undefined;
}

function notCoercible(
  side: SideKey,
  node: SchemaNode,
  kind: ScalarKind | undefined,
  at: Located,
): Diagnostic[] {
  if (kind) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `TypeCoerce converts between string, integer, number and boolean, but the ${side} declares ${node.path} as ${describeShape(node.schema)}.`,
      'Use TypeCoerce for scalar fields only; for other shapes pick the strategy that matches them.',
    ),
  ];
}

function fractionLost(path: string, direction: Direction, policy: FractionalPolicy): string {
  const verb = policy === 'Truncate' ? 'truncated' : 'rounded';
  return `converting ${arrow(direction)}, a fraction in ${path} is ${verb} into an integer (onFractionalInteger: ${policy}).`;
}

/** The value at `segments` rewritten as `kind`; an absent value writes nothing. */
function coerceAt(segments: Segments, path: string, kind: ScalarKind, onFraction: FractionalPolicy): OpRun {
  return (input, output) => {
    const value = readField(input, segments);
    if (value === undefined) return undefined;
    const coerced = coerceScalar(value, kind, onFraction);
    if (!coerced.ok) return { message: `typeCoerce: ${path}: ${coerced.message}` };
    return writeField(output, segments, coerced.value);
  };
}
