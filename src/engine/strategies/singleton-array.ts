// SingletonArrayToObject and ObjectToSingletonArray: an array on one side is, on the other, its
// one element (`zones: [{name: a}]` and `zone: {name: a}`). Wrapping a value into a one-element
// array loses nothing. Taking the first element loses the others, so that direction is lossless
// only where the array's schema allows at most one element (maxItems ≤ 1), the reference's
// verdict. As in the reference, an empty array converts to nothing, so `[]` does not come back
// from a round trip even where the verdict is lossless.
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import type { Segments } from '../paths.ts';
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

type Rule = RuleOf<'SingletonArrayToObject'> | RuleOf<'ObjectToSingletonArray'>;

/** `maxItems` is validation, which TargetSchema leaves out; a CRD's schema still carries it. */
type BoundedSchema = TargetSchema & { maxItems?: unknown };

export function singletonArray(rule: Rule, at: Located): TransformResult {
  const params =
    rule.strategy === 'SingletonArrayToObject' ? rule.singletonArrayToObject : rule.objectToSingletonArray;
  const { hubPath, spokePath } = params;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const arraySide: SideKey = rule.strategy === 'SingletonArrayToObject' ? 'hub' : 'spoke';
  const array = arraySide === 'hub' ? hub.node : spoke.node;
  const element = arraySide === 'hub' ? spoke.node : hub.node;
  const problem = shapeProblem(rule.strategy, arraySide, array, element, at);
  if (problem) return { ok: false, diagnostics: [problem] };
  const toElement: Direction = arraySide === 'hub' ? 'hubToSpoke' : 'spokeToHub';
  const toArray: Direction = arraySide === 'hub' ? 'spokeToHub' : 'hubToSpoke';
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy };
  const ops = {
    [toElement]: {
      ...base,
      kind: 'run',
      from: array.segments,
      to: element.segments,
      run: firstElement(array.segments, element.segments),
    },
    [toArray]: {
      ...base,
      kind: 'run',
      from: element.segments,
      to: array.segments,
      run: wrapInArray(element.segments, array.segments),
    },
  } as Record<Direction, Op>;
  const losses: Partial<Record<Direction, string>> = {};
  if (!holdsAtMostOne(array.schema)) {
    losses[toElement] =
      `${array.path} may hold more than one element (its schema sets no maxItems of 1), and ${element.path} keeps only the first.`;
  }
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [hub.node.segments], spoke: [spoke.node.segments] },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

function holdsAtMostOne(schema: BoundedSchema): boolean {
  return typeof schema.maxItems === 'number' && schema.maxItems <= 1;
}

/**
 * The element moves unchanged, so the array side must be an array and its items the shape of the
 * other side (the reference checks neither; a mismatch writes values the other schema rejects).
 */
function shapeProblem(
  strategy: Rule['strategy'],
  arraySide: SideKey,
  array: SchemaNode,
  element: SchemaNode,
  at: Located,
): Diagnostic | undefined {
  const elementSide = otherSide(arraySide);
  if (!mayHoldArray(array.schema)) {
    return error(
      'ShapeMismatch',
      locate(at, array.path),
      `${strategy} needs an array on the ${arraySide}, but ${arraySide} ${array.path} is ${describeShape(array.schema)}.`,
      `Point ${arraySide}Path at a field typed array, or use the mirror strategy if the array is on the ${elementSide}.`,
    );
  }
  const items = array.schema.items;
  if (items === undefined || sameShape(items, element.schema)) return undefined;
  return error(
    'ShapeMismatch',
    locate(at, element.path),
    `The elements of ${arraySide} ${array.path} are ${describeShape(items)}, but ${elementSide} ${element.path} is ${describeShape(element.schema)}; the element moves unchanged, so both must have the same shape.`,
    `Declare ${element.path} with the same schema as the items of ${array.path}.`,
  );
}

/** A field typed array, or an untyped one that may hold any value. */
export function mayHoldArray(schema: TargetSchema): boolean {
  if (schema.type !== undefined) return schema.type === 'array';
  return (
    !schema['x-kubernetes-int-or-string'] &&
    schema.properties === undefined &&
    schema.additionalProperties === undefined
  );
}

/** The array's first element is written at `to`; an absent, empty or non-array value writes nothing. */
function firstElement(from: Segments, to: Segments): OpRun {
  return (input, output, take) => {
    const array = readField(input, from);
    if (!Array.isArray(array) || array.length === 0) return undefined;
    return writeField(output, to, take(array[0]));
  };
}

/** Whatever value is at `from`, null included, is written at `to` as a one-element array. */
function wrapInArray(from: Segments, to: Segments): OpRun {
  return (input, output, take) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    return writeField(output, to, [take(value)]);
  };
}
