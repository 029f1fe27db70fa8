// ListJoin and ListSplit: an array of scalars on one side is one delimited string on the other
// (["8.8.8.8", "1.1.1.1"] and "8.8.8.8,1.1.1.1"). Joining writes each item as Go's
// coerceScalarValue writes it as a string (numbers without an exponent, 3 not 3.0); splitting
// cuts the string at every separator, coerces each part to the items' declared type, and reads
// the empty string as the empty array. ListJoin has the array on the hub, ListSplit on the spoke.
//
// Verdicts: lossless both ways, as the reference counts them, and true here: a value whose round
// trip would not give it back is refused instead of converted. Joining refuses an item that holds
// the separator and the list [""] (it joins to "", which splits to []); splitting refuses a part
// whose item does not print back as the part (" 7" or "07" for an integer item). The reference
// converts these and changes the value on the way back; refusing is the deliberate difference
// (docs/migrating-from-the-reference-operator.md), so a lossless verdict always means the round
// trip restores the object.
import type { RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { coerceScalar, type ScalarKind } from '../go-values.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import type { SchemaNode } from '../schema.ts';
import { failed, type Located, locate, lookup, type SideKey, type TransformResult } from './common.ts';
import { declaredScalarKind } from './scalar-fields.ts';

type Rule = RuleOf<'ListJoin'> | RuleOf<'ListSplit'>;

export function listJoinSplit(rule: Rule, at: Located): TransformResult {
  const params = rule.strategy === 'ListJoin' ? rule.listJoin : rule.listSplit;
  const { hubPath, spokePath, separator } = params;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const arrayOnHub = rule.strategy === 'ListJoin';
  const array = arrayOnHub ? hub.node : spoke.node;
  const text = arrayOnHub ? spoke.node : hub.node;
  const arraySide: SideKey = arrayOnHub ? 'hub' : 'spoke';
  const itemKind =
    array.schema.type === 'array' && array.schema.items ? declaredScalarKind(array.schema.items) : undefined;
  const diagnostics = [
    ...arrayProblems(array, arraySide, itemKind, rule.strategy, at),
    ...stringProblems(text, arrayOnHub ? 'spoke' : 'hub', rule.strategy, at),
  ];
  if (diagnostics.length > 0 || !itemKind) return { ok: false, diagnostics };
  const base = { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'run' as const };
  const joining: Op = {
    ...base,
    from: array.segments,
    to: text.segments,
    run: joinList(array, text, separator),
  };
  const splitting: Op = {
    ...base,
    from: text.segments,
    to: array.segments,
    run: splitList(text, array, separator, itemKind),
  };
  const ops: Partial<Record<Direction, Op>> = arrayOnHub
    ? { hubToSpoke: joining, spokeToHub: splitting }
    : { hubToSpoke: splitting, spokeToHub: joining };
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [hub.node.segments], spoke: [spoke.node.segments] },
      ops,
      losses: {},
      onSkip: 'lose',
    },
  };
}

function arrayProblems(
  array: SchemaNode,
  side: SideKey,
  itemKind: ScalarKind | undefined,
  strategy: string,
  at: Located,
): Diagnostic[] {
  const items = array.schema.items;
  if (array.schema.type !== 'array' || !items || array.schema['x-kubernetes-preserve-unknown-fields']) {
    return [
      error(
        'ShapeMismatch',
        locate(at, array.path),
        `${strategy} needs the ${side} field ${array.path} to be an array with a known item schema; it is ${array.schema.type ?? 'untyped'}.`,
        `Point ${side}Path at an array of strings, integers, numbers or booleans.`,
      ),
    ];
  }
  if (itemKind) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, array.path),
      `The items of the ${side} array ${array.path} are ${items.type ?? 'untyped'}, not a string, integer, number or boolean, so they cannot be joined into a string.`,
      'Use an array of scalars.',
    ),
  ];
}

function stringProblems(text: SchemaNode, side: SideKey, strategy: string, at: Located): Diagnostic[] {
  if (declaredScalarKind(text.schema) === 'string') return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, text.path),
      `${strategy} needs the ${side} field ${text.path} to be a string; it is ${text.schema.type ?? 'untyped'}.`,
      `Point ${side}Path at a string field.`,
    ),
  ];
}

/** Each item written as a string, joined by the separator. */
function joinList(array: SchemaNode, text: SchemaNode, separator: string): OpRun {
  const { segments: from, path } = array;
  const to = text.segments;
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (!Array.isArray(value))
      return { message: `listJoin: value at ${JSON.stringify(path)} is not an array`, path };
    if (value.length === 1 && value[0] === '')
      return { message: 'listJoin: the list [""] joins to "", which splits back to an empty list', path };
    let joined = '';
    for (let i = 0; i < value.length; i++) {
      const item = coerceScalar(value[i], 'string');
      if (!item.ok) return { message: `listJoin: element ${i}: ${item.message}`, path };
      const text = item.value as string;
      if (text.includes(separator)) {
        return {
          message: `listJoin: element ${i} (${JSON.stringify(text)}) holds the separator ${JSON.stringify(separator)}, so the string would not split back into the same list`,
          path,
        };
      }
      joined = i === 0 ? text : `${joined}${separator}${text}`;
    }
    return writeField(output, to, joined);
  };
}

/** The parts between separators, each coerced to the item type; "" is the empty array. */
function splitList(text: SchemaNode, array: SchemaNode, separator: string, itemKind: ScalarKind): OpRun {
  const { segments: from, path } = text;
  const to = array.segments;
  return (input, output) => {
    const value = readField(input, from);
    if (value === undefined) return undefined;
    if (typeof value !== 'string')
      return { message: `listSplit: value at ${JSON.stringify(path)} is not a string`, path };
    const parts = value === '' ? [] : value.split(separator);
    const items = new Array<unknown>(parts.length);
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as string;
      const item = coerceScalar(part, itemKind);
      if (!item.ok) return { message: `listSplit: element ${i}: ${item.message}`, path };
      const back = itemKind === 'string' ? undefined : coerceScalar(item.value, 'string');
      if (back !== undefined && (!back.ok || back.value !== part)) {
        return {
          message: `listSplit: element ${i} (${JSON.stringify(part)}) reads as ${JSON.stringify(item.value)}, which joins back as ${back.ok ? JSON.stringify(back.value) : 'something else'}`,
          path,
        };
      }
      items[i] = item.value;
    }
    return writeField(output, to, items);
  };
}
