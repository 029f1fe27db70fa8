// ForEach: nested rules applied to each element of a hub array and of the spoke array, with paths
// relative to one element. The nested rules compile against the items of the two arrays exactly
// as a spoke's rules against two roots (compile.ts compileItems): claims, conflicts, coverage of
// every item field, losses. An element is converted like an object: a copy minus what the nested
// rules claim, then their ops.
//
// Verdict, per direction: lossless exactly when every nested rule is (the reference ANDs their
// verdicts), so a lossy nested rule needs acknowledging on itself and on its ForEach. Elements
// pair by position, which is what makes this exact: the conversion refuses what it cannot pair
// (a destination array already on the input with another length), and anything that is not an
// array of objects, rather than guess. Two levels at most: a ForEach in a ForEach whose rules
// hold none (the API's schema says the same; this holds for rules that never went through it).
import { MAX_FOR_EACH_DEPTH, type Rule, type RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error, warning } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { isJsonObject } from '../json.ts';
import { joinPath, type Segments } from '../paths.ts';
import { DIRECTIONS, type Direction, type OmitTree, type Op, type OpFailure, type OpRun } from '../plan.ts';
import {
  describeShape,
  isOpaque,
  SchemaIndex,
  type SchemaNode,
  sameShape,
  type TargetSchema,
} from '../schema.ts';
import { type ElementStep, elementStep, type StepResult } from '../step-function.ts';
import {
  arrow,
  failed,
  type ItemsPlan,
  type Located,
  locate,
  lookup,
  type SideKey,
  type TransformResult,
} from './common.ts';

type ForEachRule = RuleOf<'ForEach'>;

export function forEach(rule: ForEachRule, at: Located): TransformResult {
  const { hubItemsPath, spokeItemsPath } = rule.forEach;
  const nest = at.ctx.nest;
  if (!nest) return { ok: false, diagnostics: [outsideCompile(hubItemsPath, at)] };
  const depth = nest.depth;
  if (depth >= MAX_FOR_EACH_DEPTH) return { ok: false, diagnostics: [tooDeep(hubItemsPath, depth, at)] };
  const hub = lookup('hub', hubItemsPath, at);
  const spoke = lookup('spoke', spokeItemsPath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const notElements = [notObjectArray('hub', hub.node, at), notObjectArray('spoke', spoke.node, at)].filter(
    (d): d is Diagnostic => d !== undefined,
  );
  if (notElements.length > 0) return { ok: false, diagnostics: notElements };
  const items: Record<SideKey, SchemaIndex> = {
    hub: new SchemaIndex(itemsOf(hub.node), 'items'),
    spoke: new SchemaIndex(itemsOf(spoke.node), 'items'),
  };
  const rules: readonly Rule[] = rule.forEach.rules;
  const nested = nest.compileItems(items, rules, (d, side) =>
    aboutTheForEach(d, side ?? sideNaming(d.path, items), rule, at),
  );
  if (!nested.ok) return { ok: false, diagnostics: nested.diagnostics };
  const h = hub.node.segments;
  const s = spoke.node.segments;
  return {
    ok: true,
    transform: {
      path: hubItemsPath,
      claims: { hub: [h], spoke: [s] },
      ops: {
        hubToSpoke: elementsOp('hubToSpoke', h, s, nested.plan, at),
        spokeToHub: elementsOp('spokeToHub', s, h, nested.plan, at),
      },
      losses: nestedLosses(nested.plan),
      onSkip:
        hubItemsPath === spokeItemsPath && sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

// --- compile

function outsideCompile(path: string, at: Located): Diagnostic {
  return error(
    'InvalidRule',
    locate(at, path),
    'A ForEach resolves only inside compile, which compiles its nested rules.',
    'Compile the whole config (engine/compile.ts).',
  );
}

function tooDeep(path: string, depth: number, at: Located): Diagnostic {
  return error(
    'InvalidRule',
    locate(at, path),
    `This ForEach is nested ${depth + 1} levels deep; at most ${MAX_FOR_EACH_DEPTH} are supported (a ForEach inside a ForEach whose rules hold none).`,
    'Convert the innermost arrays with a rule that takes them whole, or restructure the nesting.',
  );
}

/** Why the field cannot be a ForEach's array: each element is converted as an object with fields. */
function notObjectArray(side: SideKey, node: SchemaNode, at: Located): Diagnostic | undefined {
  const items = node.schema.type === 'array' ? node.schema.items : undefined;
  if (items && !isOpaque(items)) return undefined;
  const what = items
    ? `its elements are ${describeShape(items)}`
    : `it is ${describeShape(node.schema)}, not an array with an item schema`;
  return error(
    'ShapeMismatch',
    locate(at, node.path),
    `ForEach converts each element of the ${side} field ${node.path} as an object with fields, but ${what}.`,
    `Point ${side}ItemsPath at an array of objects with declared fields; convert other arrays as a whole with another strategy.`,
  );
}

function itemsOf(node: SchemaNode): TargetSchema {
  return node.schema.items as TargetSchema;
}

/** Which side's items a nested rule's path names: the spoke's only if the hub's declare no such field. */
function sideNaming(path: string | undefined, items: Readonly<Record<SideKey, SchemaIndex>>): SideKey {
  return path !== undefined && !items.hub.node(path) && items.spoke.node(path) ? 'spoke' : 'hub';
}

/**
 * A nested rule's diagnostic as one about the ForEach: located at the ForEach, its path qualified
 * with the items path of the side it is about (as the reference's qualifyUnderItemsPath), its
 * message naming the nested rule, or the elements for a field no nested rule accounts for.
 */
function aboutTheForEach(d: Diagnostic, side: SideKey, rule: ForEachRule, at: Located): Diagnostic {
  const { hubItemsPath, spokeItemsPath, rules } = rule.forEach;
  const itemsPath = side === 'hub' ? hubItemsPath : spokeItemsPath;
  const path = qualifyUnderItemsPath(itemsPath, d.path ?? '');
  const message =
    d.ruleIndex === undefined
      ? `In each element of ${elementsOf(hubItemsPath, spokeItemsPath)}: ${d.message}`
      : `forEach.rules[${d.ruleIndex}] (${nestedStrategy(rules, d.ruleIndex)}): ${d.message}`;
  return (d.severity === 'error' ? error : warning)(d.code, locate(at, path), message, d.hint);
}

function qualifyUnderItemsPath(itemsPath: string, relative: string): string {
  return relative === '' ? itemsPath : `${itemsPath}.${relative}`;
}

function elementsOf(hubItemsPath: string, spokeItemsPath: string): string {
  return hubItemsPath === spokeItemsPath ? hubItemsPath : `hub ${hubItemsPath} and spoke ${spokeItemsPath}`;
}

/** The strategy a nested rule names, as given: a rule that never went through the API may name none. */
function nestedStrategy(rules: readonly Rule[], index: number): string {
  return String((rules[index] as { strategy?: unknown } | undefined)?.strategy);
}

/** What the nested rules lose, per direction: the ForEach loses it in every element. */
function nestedLosses(plan: ItemsPlan): Partial<Record<Direction, string>> {
  const losses: Partial<Record<Direction, string>> = {};
  for (const direction of DIRECTIONS) {
    const lossy = plan.rules.filter((r) => r.losses[direction] !== undefined);
    if (lossy.length === 0) continue;
    const each = lossy.map((r) => `forEach.rules[${r.ruleIndex}] (${r.strategy}): ${r.losses[direction]}`);
    losses[direction] =
      `its nested rules lose information in each element converting ${arrow(direction)}: ${each.join(' ')}`;
  }
  return losses;
}

// --- run

function elementsOp(direction: Direction, from: Segments, to: Segments, plan: ItemsPlan, at: Located): Op {
  return {
    ruleIndex: at.ruleIndex,
    strategy: 'ForEach',
    kind: 'run',
    from,
    to,
    run: eachElement(from, to, plan.omit[direction], plan.ops[direction]),
  };
}

/**
 * The array at `from` converted element by element into `to`, as the reference's forEachOp: an
 * absent array writes nothing; a present one must be an array of objects, and a destination
 * array the input already holds must be an array of the same length. The element step is
 * generated on first use: a replica compiles every plan it holds at start, most never convert.
 */
function eachElement(from: Segments, to: Segments, omit: OmitTree, ops: readonly Op[]): OpRun {
  const source = joinPath(from);
  const destination = joinPath(to);
  const paired = !sameSegments(from, to);
  let step: ElementStep | undefined;
  return (input, output, take) => {
    const array = readField(input, from);
    if (array === undefined) return undefined;
    if (!Array.isArray(array)) return notAnArray(source);
    if (paired) {
      const unpaired = unpairedDestination(readField(input, to), array.length, source, destination);
      if (unpaired) return unpaired;
    }
    step ??= elementStep(omit, ops);
    const converted = new Array<unknown>(array.length);
    for (let i = 0; i < array.length; i++) {
      const element = array[i];
      if (!isJsonObject(element)) {
        return {
          message: `forEach: element ${i} at ${quoted(source)} is not an object`,
          path: `${source}[${i}]`,
        };
      }
      const result = step(element, take);
      if (!result.ok) return elementFailed(source, i, result);
      converted[i] = result.object;
    }
    return writeField(output, to, converted);
  };
}

/** The input's own array at the destination path, if any, must pair with the source one by one. */
function unpairedDestination(
  existing: unknown,
  length: number,
  source: string,
  destination: string,
): OpFailure | undefined {
  if (existing === undefined) return undefined;
  if (!Array.isArray(existing)) return notAnArray(destination);
  if (existing.length === length) return undefined;
  return {
    message: `forEach: length mismatch between ${quoted(source)} (${length}) and ${quoted(destination)} (${existing.length})`,
    path: destination,
  };
}

function notAnArray(path: string): OpFailure {
  return { message: `forEach: value at ${quoted(path)} is not an array`, path };
}

function elementFailed(source: string, index: number, result: Extract<StepResult, { ok: false }>): OpFailure {
  const element = `${source}[${index}]`;
  return {
    message: `forEach: element ${index}: ${result.message}`,
    path: result.path === undefined ? element : `${element}.${result.path}`,
  };
}

/** A path as the reference's messages quote it (Go's %q). */
function quoted(path: string): string {
  return JSON.stringify(path);
}

function sameSegments(a: Segments, b: Segments): boolean {
  return a.length === b.length && a.every((segment, i) => segment === b[i]);
}
