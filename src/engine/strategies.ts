// Each strategy resolved against one hub/spoke schema pair: which paths the rule claims on
// each side, the operation it performs in each direction, and, computed here rather than
// taken from the config, whether each direction loses information.
//
// "Lossy in a direction" means: an object converted that way and back may not come back
// equal. That is the property the round-trip tests check and the one `acknowledgeLossy`
// acknowledges.
import {
  type ConstantRule,
  type DefaultValueRule,
  type DeleteRule,
  type EnumMapping,
  type EnumRemapRule,
  type EnumValue,
  type FieldRenameRule,
  PARAMS_KEY,
  type Rule,
  type RuleCondition,
  type Side,
  type Strategy,
  unknownStrategyMessage,
} from '../api/rules.ts';
import { type Diagnostic, error, warning } from './diagnostics.ts';
import { parsePath, type Segments } from './paths.ts';
import { DIRECTIONS, type Direction, enumTable, type Op, type OpCondition } from './plan.ts';
import {
  describeShape,
  differingKeywords,
  misfit,
  type SchemaIndex,
  type SchemaNode,
  sameShape,
} from './schema.ts';

export type SideKey = 'hub' | 'spoke';

export interface PairContext {
  hub: SchemaIndex;
  spoke: SchemaIndex;
  version: string;
}

export interface ResolvedRule {
  ruleIndex: number;
  strategy: Strategy;
  acknowledged: boolean;
  /** The path diagnostics about the whole rule point at. */
  path: string;
  claims: Readonly<Record<SideKey, readonly Segments[]>>;
  ops: Partial<Record<Direction, Op>>;
  losses: Partial<Record<Direction, string>>;
  /**
   * A one-sided rule whose field also exists on the other side: allowed only if another rule
   * claims that other-side field (it moved elsewhere), which compile checks once all claims
   * are known.
   */
  needsClaimedElsewhere?: { side: SideKey; segments: Segments };
  /**
   * A `when` rule that carries its value over unchanged where the predicate does not match:
   * lossless only if the predicate reads the same on both sides of a round trip, i.e. no rule
   * claims its field, which compile checks once all claims are known.
   */
  carriesUnless?: { when: RuleCondition; segments: Segments };
}

export type RuleResolution =
  | { ok: true; rule: ResolvedRule; warnings: Diagnostic[] }
  | { ok: false; diagnostics: Diagnostic[] };

interface Located {
  ruleIndex: number;
  ctx: PairContext;
}

type Lookup = { ok: true; node: SchemaNode } | { ok: false; diagnostic: Diagnostic };

/** What a strategy decides; the common parts of a rule (`when`, acknowledgement) are added after. */
type Transform = Omit<ResolvedRule, 'ruleIndex' | 'strategy' | 'acknowledged'> & {
  /**
   * What happens to the input's value where a `when` predicate does not match: nothing (the
   * rule reads no value that way), carried over unchanged (the rule reads and writes the same
   * path, declared with the same shape on both sides), or lost.
   */
  onSkip: SkipOutcome;
};
export type SkipOutcome = 'nothing' | 'carry' | 'lose';
type TransformResult = { ok: true; transform: Transform } | { ok: false; diagnostics: Diagnostic[] };

export function resolveRule(rule: Rule, ruleIndex: number, ctx: PairContext): RuleResolution {
  const at: Located = { ruleIndex, ctx };
  const malformed = malformedRule(rule, at);
  if (malformed) return { ok: false, diagnostics: [malformed] };
  const transformed = transformOf(rule, at);
  const condition = rule.when ? resolveCondition(rule.when, at) : undefined;
  const diagnostics = [
    ...(transformed.ok ? [] : transformed.diagnostics),
    ...(condition && !condition.ok ? condition.diagnostics : []),
  ];
  if (!transformed.ok || (condition && !condition.ok)) return { ok: false, diagnostics };
  const { onSkip, ...transform } = transformed.transform;
  const resolved: ResolvedRule = {
    ...transform,
    ruleIndex,
    strategy: rule.strategy,
    acknowledged: rule.acknowledgeLossy,
  };
  if (!condition) return { ok: true, rule: resolved, warnings: [] };
  return {
    ok: true,
    rule: withCondition(resolved, condition.condition, onSkip, rule.when as RuleCondition),
    warnings: [partialCoverage(resolved, rule.when as RuleCondition, onSkip, at)],
  };
}

/**
 * The API's schema guarantees a known strategy and exactly its params block, but compile is
 * also called on rules that never went through it (replay of an old message, a test, a CLI):
 * those get a diagnostic, never a TypeError from reading a missing params block.
 */
const PARAMS_KEYS: readonly string[] = Object.values(PARAMS_KEY);

function malformedRule(rule: Rule, at: Located): Diagnostic | undefined {
  const strategy: unknown = rule.strategy;
  const where = { version: at.ctx.version, ruleIndex: at.ruleIndex };
  if (typeof strategy !== 'string' || !Object.hasOwn(PARAMS_KEY, strategy)) {
    return error(
      'InvalidRule',
      where,
      `${unknownStrategyMessage(rule)}.`,
      'Use one of the supported strategies.',
    );
  }
  const own = PARAMS_KEY[strategy as Strategy];
  const record = rule as unknown as Record<string, unknown>;
  const extra = PARAMS_KEYS.filter((key) => key !== own && record[key] !== undefined);
  const params = record[own];
  if (typeof params === 'object' && params !== null && extra.length === 0) return undefined;
  const problem =
    extra.length > 0
      ? `a ${strategy} rule takes exactly one params block, ${own}, but also has ${extra.join(', ')}`
      : `a ${strategy} rule needs its params block, ${own}`;
  return error(
    'InvalidRule',
    where,
    `${problem}.`,
    `Give the rule ${own} only; put other params in rules of their own.`,
  );
}

function transformOf(rule: Rule, at: Located): TransformResult {
  switch (rule.strategy) {
    case 'FieldRename':
      return fieldRename(rule, at);
    case 'Delete':
      return deleteField(rule, at);
    case 'DefaultValue':
      return injectValue(rule, rule.defaultValue.default, at);
    case 'Constant':
      return injectValue(rule, rule.constant.value, at);
    case 'EnumRemap':
      return enumRemap(rule, at);
  }
}

// --- FieldRename: same value, same shape, another path. Lossless both ways.

function fieldRename(rule: FieldRenameRule, at: Located): TransformResult {
  const { hubPath, spokePath } = rule.fieldRename;
  const hub = lookup('hub', hubPath, at);
  const spoke = lookup('spoke', spokePath, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  if (!sameShape(hub.node.schema, spoke.node.schema)) {
    return {
      ok: false,
      diagnostics: [
        error(
          'ShapeMismatch',
          locate(at, hubPath),
          `FieldRename carries the value unchanged, but hub ${hubPath} is ${describeShape(hub.node.schema)} and spoke ${spokePath} is ${describeShape(spoke.node.schema)}${sameDescription(hub.node, spoke.node)}.`,
          'Make both fields the same shape, or use EnumRemap if only the enum values differ.',
        ),
      ],
    };
  }
  const { ruleIndex } = at;
  const { strategy } = rule;
  const h = hub.node.segments;
  const s = spoke.node.segments;
  return {
    ok: true,
    transform: {
      path: hubPath,
      claims: { hub: [h], spoke: [s] },
      ops: {
        // Literals, not spreads: a replica holds thousands of ops, and a spread object keeps its
        // later fields out of line (an extra allocation each).
        hubToSpoke: { ruleIndex, strategy, kind: 'move', from: h, to: s },
        spokeToHub: { ruleIndex, strategy, kind: 'move', from: s, to: h },
      },
      losses: {},
      onSkip: hubPath === spokePath ? 'carry' : 'lose',
    },
  };
}

// --- One-sided fields: Delete drops the value, DefaultValue and Constant also write one when
// converting into the side that declares the field. Converting away always loses the value.

function deleteField(rule: DeleteRule, at: Located): TransformResult {
  const { path, existsOn } = rule.delete;
  return oneSided(rule.strategy, path, existsOn, at, () => undefined);
}

function injectValue(rule: DefaultValueRule | ConstantRule, value: unknown, at: Located): TransformResult {
  const { path, existsOn } = rule.strategy === 'DefaultValue' ? rule.defaultValue : rule.constant;
  const param = rule.strategy === 'DefaultValue' ? 'defaultValue.default' : 'constant.value';
  return oneSided(rule.strategy, path, existsOn, at, (node) => {
    const problem = misfit(value, node.schema, param);
    if (problem) {
      return error(
        'InvalidValue',
        locate(at, path),
        `${problem}; the field is ${describeShape(node.schema)}.`,
        `Set ${param} to a value the ${sideKey(existsOn)} schema accepts.`,
      );
    }
    return { ruleIndex: at.ruleIndex, strategy: rule.strategy, kind: 'write', to: node.segments, value };
  });
}

function oneSided(
  strategy: Strategy,
  path: string,
  existsOn: Side,
  at: Located,
  intoOp: (node: SchemaNode) => Op | Diagnostic | undefined,
): TransformResult {
  const side = sideKey(existsOn);
  const other = otherSide(side);
  const found = lookup(side, path, at);
  if (!found.ok) return { ok: false, diagnostics: [found.diagnostic] };
  const op = intoOp(found.node);
  if (op && 'severity' in op) return { ok: false, diagnostics: [op] };
  const into = directionInto(side);
  const away = directionInto(other);
  const transform: Transform = {
    path,
    claims:
      side === 'hub' ? { hub: [found.node.segments], spoke: [] } : { hub: [], spoke: [found.node.segments] },
    ops: op ? { [into]: op } : {},
    losses: {
      [away]: `${path} exists only on the ${side}; converting ${arrow(away)} drops its value (${strategy}).`,
    },
    onSkip: 'nothing',
  };
  if (at.ctx[other].node(path))
    transform.needsClaimedElsewhere = { side: other, segments: found.node.segments };
  return { ok: true, transform };
}

// --- EnumRemap: a scalar field whose values are spelled differently on each side. Values are
// strings, integers, numbers or booleans, matched by type and value; each side's values are
// checked against that side's schema, so a hub integer may map to a spoke string.

function enumRemap(rule: EnumRemapRule, at: Located): TransformResult {
  const { path, mapping, onUnmappedHubValue, onUnmappedSpokeValue } = rule.enumRemap;
  const hub = lookup('hub', path, at);
  const spoke = lookup('spoke', path, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const diagnostics = [
    ...scalarLeafProblems('hub', hub.node, at),
    ...scalarLeafProblems('spoke', spoke.node, at),
    ...mappingValueProblems('hub', hub.node, mapping, at),
    ...mappingValueProblems('spoke', spoke.node, mapping, at),
  ];
  const down = firstWins(mapping.map((m) => [m.hub, m.spoke]));
  const up = firstWins(mapping.map((m) => [m.spoke, m.hub]));
  if (onUnmappedHubValue === 'Error') diagnostics.push(...uncoveredEnumValues('hub', hub.node, down, at));
  if (onUnmappedSpokeValue === 'Error') diagnostics.push(...uncoveredEnumValues('spoke', spoke.node, up, at));
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const { ruleIndex } = at;
  const { strategy } = rule;
  const segments = hub.node.segments;
  const losses: Partial<Record<Direction, string>> = {};
  const downLoss = remapLoss(down, up, onUnmappedHubValue, hub.node, 'onUnmappedHubValue');
  const upLoss = remapLoss(up, down, onUnmappedSpokeValue, spoke.node, 'onUnmappedSpokeValue');
  if (downLoss) losses.hubToSpoke = `${path}: ${downLoss}`;
  if (upLoss) losses.spokeToHub = `${path}: ${upLoss}`;
  return {
    ok: true,
    transform: {
      path,
      claims: { hub: [segments], spoke: [spoke.node.segments] },
      ops: {
        hubToSpoke: {
          ruleIndex,
          strategy,
          kind: 'remap',
          from: segments,
          to: segments,
          table: enumTable(down),
          onUnmapped: onUnmappedHubValue,
        },
        spokeToHub: {
          ruleIndex,
          strategy,
          kind: 'remap',
          from: segments,
          to: segments,
          table: enumTable(up),
          onUnmapped: onUnmappedSpokeValue,
        },
      },
      losses,
      onSkip: sameShape(hub.node.schema, spoke.node.schema) ? 'carry' : 'lose',
    },
  };
}

/** With duplicates in the table, conversion uses the first entry; the loss check sees the rest. */
function firstWins(pairs: [EnumValue, EnumValue][]): Map<EnumValue, EnumValue> {
  const table = new Map<EnumValue, EnumValue>();
  for (const [from, to] of pairs) if (!table.has(from)) table.set(from, to);
  return table;
}

function remapLoss(
  forward: ReadonlyMap<EnumValue, EnumValue>,
  backward: ReadonlyMap<EnumValue, EnumValue>,
  policy: 'Error' | 'Drop',
  source: SchemaNode,
  policyField: string,
): string | undefined {
  for (const [from, to] of forward) {
    const back = backward.get(to);
    if (back !== from) {
      return `${JSON.stringify(from)} becomes ${JSON.stringify(to)}, which converts back to ${JSON.stringify(back)}, so the original value cannot be restored`;
    }
  }
  const declared = source.schema.enum;
  const allMapped = declared?.every((value) => forward.has(value as EnumValue)) ?? false;
  if (policy === 'Drop' && !allMapped)
    return `values the mapping does not list are dropped (${policyField}: Drop)`;
  return undefined;
}

const SCALAR_TYPES = new Set(['string', 'integer', 'number', 'boolean']);

function scalarLeafProblems(side: SideKey, node: SchemaNode, at: Located): Diagnostic[] {
  const scalar =
    node.isLeaf && (SCALAR_TYPES.has(node.schema.type ?? '') || node.schema['x-kubernetes-int-or-string']);
  if (scalar) return [];
  return [
    error(
      'ShapeMismatch',
      locate(at, node.path),
      `EnumRemap maps string, integer, number or boolean values, but ${side} ${node.path} is ${describeShape(node.schema)}.`,
      'Point EnumRemap at a field typed string, integer, number or boolean on both sides.',
    ),
  ];
}

function mappingValueProblems(
  side: SideKey,
  node: SchemaNode,
  mapping: readonly EnumMapping[],
  at: Located,
): Diagnostic[] {
  return mapping.flatMap((entry, i) => {
    const problem = misfit(entry[side], node.schema, `enumRemap.mapping[${i}].${side}`);
    if (!problem) return [];
    return [
      error(
        'InvalidValue',
        locate(at, node.path),
        `${problem}; the ${side} field is ${describeShape(node.schema)}.`,
        `Use only values the ${side} schema allows in mapping[].${side}.`,
      ),
    ];
  });
}

function uncoveredEnumValues(
  side: SideKey,
  node: SchemaNode,
  table: ReadonlyMap<EnumValue, EnumValue>,
  at: Located,
): Diagnostic[] {
  const missing = (node.schema.enum ?? []).filter((value) => !table.has(value as EnumValue));
  if (missing.length === 0) return [];
  const policy = side === 'hub' ? 'onUnmappedHubValue' : 'onUnmappedSpokeValue';
  return [
    error(
      'UnmappedEnumValue',
      locate(at, node.path),
      `The ${side} schema allows ${missing.map((v) => JSON.stringify(v)).join(', ')} at ${node.path}, which the mapping does not list.`,
      `Add a mapping entry for each, or set ${policy}: Drop with acknowledgeLossy: true to drop them.`,
    ),
  ];
}

// --- `when`: the rule applies only to objects whose field equals a value.

type ConditionResult = { ok: true; condition: OpCondition } | { ok: false; diagnostics: Diagnostic[] };

/** The discriminator is read from the input, hub or spoke, so both sides must declare it. */
function resolveCondition(when: RuleCondition, at: Located): ConditionResult {
  const hub = lookup('hub', when.path, at);
  const spoke = lookup('spoke', when.path, at);
  if (!hub.ok || !spoke.ok) return failed(hub, spoke);
  const diagnostics: Diagnostic[] = [];
  for (const [side, node] of [
    ['hub', hub.node],
    ['spoke', spoke.node],
  ] as const) {
    const problem = misfit(when.equals, node.schema, 'when.equals');
    if (problem) {
      diagnostics.push(
        error(
          'InvalidValue',
          locate(at, when.path),
          `${problem} on the ${side} (${describeShape(node.schema)}), so the condition can never hold there.`,
          `Set when.equals to a value ${when.path} can take on both sides.`,
        ),
      );
    }
  }
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  return { ok: true, condition: { segments: hub.node.segments, equals: when.equals } };
}

/**
 * Where the predicate does not match, the rule is skipped and its claimed fields are not
 * passed through as such. What that costs depends on the rule (see SkipOutcome): a rule that
 * reads and writes the same path, declared alike on both sides, carries the value over
 * unchanged instead (lossless, so no acknowledgement); any other rule that reads a value
 * loses it on those objects, which must be acknowledged.
 */
function withCondition(
  rule: ResolvedRule,
  condition: OpCondition,
  onSkip: SkipOutcome,
  when: RuleCondition,
): ResolvedRule {
  const ops: Partial<Record<Direction, Op>> = {};
  const losses = { ...rule.losses };
  const carry = onSkip === 'carry';
  for (const direction of DIRECTIONS) {
    const op = rule.ops[direction];
    if (op) ops[direction] = { ...op, when: { ...condition, carry } };
    if (onSkip === 'lose' && !losses[direction])
      losses[direction] = lostWhenSkipped(rule.path, direction, when);
  }
  const resolved: ResolvedRule = { ...rule, ops, losses };
  if (carry) resolved.carriesUnless = { when, segments: condition.segments };
  return resolved;
}

export function lostWhenSkipped(path: string, direction: Direction, when: RuleCondition): string {
  return `on objects whose ${when.path} is not ${JSON.stringify(when.equals)}, the rule does not apply and ${path} is dropped converting ${arrow(direction)} (a field a rule claims is never passed through as is).`;
}

function partialCoverage(
  rule: ResolvedRule,
  when: RuleCondition,
  onSkip: SkipOutcome,
  at: Located,
): Diagnostic {
  const otherwise =
    onSkip === 'carry'
      ? `on other objects it carries ${rule.path} over unchanged`
      : `on other objects it writes nothing`;
  return warning(
    'PartialCoverage',
    locate(at, rule.path),
    `The rule applies only when ${when.path} is ${JSON.stringify(when.equals)}; ${otherwise}.`,
    'Make sure objects the condition does not match need no conversion here, or add an unconditional rule.',
  );
}

// --- shared helpers

function lookup(side: SideKey, path: string, at: Located): Lookup {
  const parsed = parsePath(path);
  if (!parsed.ok) {
    return {
      ok: false,
      diagnostic: error(
        'InvalidPath',
        locate(at, path),
        `${parsed.problem}.`,
        'Write a dotted path of declared fields from the object root, e.g. spec.size.',
      ),
    };
  }
  const node = at.ctx[side].node(path);
  if (node) return { ok: true, node };
  const near = nearestPath(path, at.ctx[side]);
  return {
    ok: false,
    diagnostic: error(
      'UnknownPath',
      locate(at, path),
      `The ${side} schema (${side === 'hub' ? 'hub version' : `version ${at.ctx.version}`}) declares no field ${path}.`,
      near ? `Did you mean ${near}?` : `Use a field the ${side} schema declares.`,
    ),
  };
}

function failed(...lookups: Lookup[]): { ok: false; diagnostics: Diagnostic[] } {
  return { ok: false, diagnostics: lookups.flatMap((l) => (l.ok ? [] : [l.diagnostic])) };
}

function locate(at: Located, path: string) {
  return { version: at.ctx.version, ruleIndex: at.ruleIndex, path };
}

function sideKey(side: Side): SideKey {
  return side === 'Hub' ? 'hub' : 'spoke';
}

function otherSide(side: SideKey): SideKey {
  return side === 'hub' ? 'spoke' : 'hub';
}

function directionInto(side: SideKey): Direction {
  return side === 'spoke' ? 'hubToSpoke' : 'spokeToHub';
}

export function arrow(direction: Direction): string {
  return direction === 'hubToSpoke' ? 'hub → spoke' : 'spoke → hub';
}

function sameDescription(a: SchemaNode, b: SchemaNode): string {
  return describeShape(a.schema) === describeShape(b.schema)
    ? ` (their ${differingKeywords(a.schema, b.schema).join(', ')} differ)`
    : '';
}

/** The declared path closest to a misspelt one, if any is close enough to be a likely typo. */
function nearestPath(path: string, index: SchemaIndex): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(path.length / 4)) + 1;
  for (const candidate of index.paths()) {
    const distance = editDistance(path, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}
