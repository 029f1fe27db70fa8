// A rule resolved against one hub/spoke schema pair: the strategy's own resolution (one file per
// strategy family in this folder), then what every rule shares: the check that its params
// block is the one its strategy names, and its `when`.
import {
  PARAMS_KEY,
  type Rule,
  type RuleCondition,
  type Strategy,
  unknownStrategyMessage,
} from '../../api/rules.ts';
import { type Diagnostic, error, warning } from '../diagnostics.ts';
import { DIRECTIONS, type Direction, type Op, type OpCondition } from '../plan.ts';
import { describeShape, misfit } from '../schema.ts';
import {
  arrow,
  failed,
  type Located,
  locate,
  lookup,
  type PairContext,
  type ResolvedRule,
  type RuleResolution,
  type SkipOutcome,
  type TransformResult,
} from './common.ts';
import { TRANSFORMS, type TransformOf } from './transforms.ts';

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
  return (TRANSFORMS[rule.strategy] as TransformOf<Strategy>)(rule, at);
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
