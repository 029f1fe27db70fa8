// CEL for the `CEL` rule strategy: compile an expression once, evaluate it per object.
//
// Design note
//
// Library. @marcbachmann/cel-js 8.0.0: the one maintained ECMAScript CEL with a working, public
// type checker, which the reference's compile-time refusals need (undeclared names, overloads
// that cannot match). Measured here (Node 24): parse+check 4–16 µs and evaluate 0.25–2.4 µs on
// four typical rule expressions, against 180–360 µs and 9.5–48 µs for @bufbuild/cel 0.6.1, whose
// cel-spec conformance is better (98.8% of the applicable cases against 86.6%) but whose checker
// is an unexported stub; cel-js 0.8.2 lacks int(), startsWith and macros on lists (34.6%). Where
// it departs from cel-go v0.26.1 (the reference's CEL) on what a rule can reach, this file
// corrects it: an allow-list of the standard library (the reference's environment has no
// extensions: no lowerAscii, split, indexOf, optional, cel.bind), the checker rules it is laxer
// on, the conversions whose Go text or range differs (string(double), double(string),
// int(double)), int64 overflow at the minimum, and `matches`, which runs on an RE2 engine
// (@bufbuild/re2): Go's regexp syntax, and linear time, so no pattern can backtrack for minutes.
// The corrections read marc-cel's AST (node ops, args, meta), which is why its version is pinned.
//
// Typing of `object`. The reference declares one variable, `object`, of type `dyn`, and hands it
// the source object as encoding/json decoded it: every JSON number a float64. So here every
// number in the object is a CEL double (JavaScript numbers are what marc-cel reads as double):
// `object.spec.n + 1` fails with "no such overload" exactly as in the reference, and
// `int(object.spec.n) + 1` is an int. Equality across numeric types holds at run time
// (`object.spec.n == 3`), as in cel-go.
//
// Result shape. Not checked at compile time (the reference does not: `"x"` compiles and fails on
// every object). At run time the value must be a map with string keys; for each destination path,
// in the order declared, its value is the map's nested value at the path's segments, else the
// value at the dotted key itself (`{"spec.size": 3}`), else the destination is left alone. Extra
// keys are ignored. The nested form only descends through maps that came from the object (a map
// the expression builds is a Go map[ref.Val]ref.Val in the reference, which its lookup cannot
// walk). What is written is what the reference's webhook writes after encoding/json: ints and
// uints as JSON integers, null as 0 (cel-go's NullValue is an int32 enum), bytes as base64,
// timestamps as RFC 3339 text, durations at the top as nanoseconds, an empty list a map or filter
// built as null. Where the reference fails (a map built by the expression at a destination:
// "json: unsupported type"; NaN or ±Inf) this fails too; where it writes a Go reflection artifact
// ({"Adapter":{}} for a list or map inside a list the expression built, {"Duration":n}, {}) this
// refuses rather than write it, and an integer past 2^53 is refused rather than rounded.
//
// Limits. The reference bounds evaluation by cel-go's actual-cost model at 1e6; the cost here
// follows that model (1 per variable, field and index step and per call, 10 per list literal, 30
// per map literal, the steps of cel-go's macro expansions, equality and the string functions by
// length/10), measured equal to cel-go's on the reference's examples and within 3% on
// comprehensions, so what the reference refuses for cost is refused here. On top, a wall-clock
// deadline (the reference has none): reaching 1e6 units takes 40–90 ms here, and work the model
// prices low (a long string concatenated, a large result to convert) must not hold the webhook's
// single thread; 250 ms leaves ~3× room over the slowest cost-bound case on a loaded two-core
// machine, yet stops a runaway long before the apiserver's webhook timeout.
import { RE2JS } from '@bufbuild/re2';
import { Environment, ParseError } from '@marcbachmann/cel-js';
import { Duration, UnsignedInt } from '@marcbachmann/cel-js/evaluator';
import { parsePath, type Segments } from '../paths.ts';

export type CelDirection = 'hubToSpoke' | 'spokeToHub';

export interface CelLimits {
  /** Units of cel-go's actual-cost model an evaluation may spend (the reference: 1e6). */
  readonly costLimit: number;
  /** Wall-clock milliseconds an evaluation may take, result conversion included. */
  readonly deadlineMs: number;
  /** The clock the deadline is read from; performance.now unless a test steps its own. */
  readonly now?: () => number;
}

/** The reference's DefaultCELCostLimit. */
export const CEL_COST_LIMIT = 1_000_000;
export const CEL_DEADLINE_MS = 250;
export const DEFAULT_CEL_LIMITS: CelLimits = { costLimit: CEL_COST_LIMIT, deadlineMs: CEL_DEADLINE_MS };

/** cel-go's default parser limit on an expression's length, in code points. */
export const CEL_MAX_CODE_POINTS = 100_000;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface CelDestination {
  readonly path: string;
  readonly segments: Segments;
}

export interface CelProgram {
  readonly source: string;
  readonly direction: CelDirection;
  /** The paths the result is read at, in the order the values are written. */
  readonly destinations: readonly CelDestination[];
  /** The checker's type for the result; anything but a map (or dyn) fails on every object. */
  readonly resultType: string;
}

/** One value to write into the output, fresh (never shared with the input). */
export interface CelWrite extends CelDestination {
  readonly value: JsonValue;
}

export type CelCompiled = { ok: true; program: CelProgram } | { ok: false; problem: string };

/**
 * Why an evaluation produced nothing: the expression failed (`evaluation`), its value is not
 * something the reference can write (`result`), or it ran out of cost or time.
 */
export type CelFailureKind = 'evaluation' | 'result' | 'cost' | 'deadline';

export type CelEvaluated =
  | { ok: true; values: CelWrite[] }
  | { ok: false; kind: CelFailureKind; message: string };

// ---------------------------------------------------------------------------------------------
// The environment: the standard library only, with the overloads cel-go has and marc-cel lacks.

const MAX_INT = 2n ** 63n - 1n;
const MIN_INT = -(2n ** 63n);
const MAX_UINT = 2n ** 64n - 1n;
const TWO_TO_63 = 2 ** 63;
const TWO_TO_64 = 2 ** 64;

const ENVIRONMENT = createEnvironment();

function createEnvironment(): Environment {
  const environment = new Environment({
    // cel-go joins mixed literal element types to dyn; it has no element-count limits.
    homogeneousAggregateLiterals: false,
    limits: {
      maxAstNodes: CEL_MAX_CODE_POINTS,
      maxDepth: 250,
      maxListElements: CEL_MAX_CODE_POINTS,
      maxMapEntries: CEL_MAX_CODE_POINTS,
      maxCallArguments: CEL_MAX_CODE_POINTS,
    },
  }).registerVariable('object', 'dyn');
  // Declared so the checker accepts what cel-go's does; the evaluators below compute them.
  const TS = 'google.protobuf.Timestamp';
  const DUR = 'google.protobuf.Duration';
  environment
    .registerFunction('int(uint): int', (value: unknown) => convertToInt(value))
    .registerFunction(`int(${TS}): int`, (value: unknown) => convertToInt(value))
    .registerFunction(`int(${DUR}): int`, (value: unknown) => convertToInt(value))
    .registerFunction(`string(${TS}): string`, (value: unknown) => convertToString(value))
    .registerFunction(`string(${DUR}): string`, (value: unknown) => convertToString(value))
    .registerFunction(`timestamp(${TS}): ${TS}`, (value: unknown) => value)
    .registerFunction(`duration(${DUR}): ${DUR}`, (value: unknown) => value)
    .registerFunction('matches(string, string): bool', (text: string, pattern: string) =>
      regexMatches(text, pattern),
    );
  for (const operator of ['<', '<=', '>', '>=']) {
    environment.registerOperator(`bytes ${operator} bytes: bool`, (a: Uint8Array, b: Uint8Array) =>
      compareOrdered(operator, Buffer.compare(a, b)),
    );
    // cel-go's checker lets these through; they fail on every evaluation.
    environment.registerOperator(`null ${operator} null: bool`, () => {
      throw new CelRuntimeError(`no such overload: _${operator}_`);
    });
  }
  environment
    .registerFunction(`duration(int): ${DUR}`, () => {
      throw new CelRuntimeError(`type conversion error from 'int' to '${DUR}'`);
    })
    .registerFunction('string(null): string', () => {
      throw new CelRuntimeError('no such overload: string(null_type)');
    });
  return environment;
}

function compareOrdered(operator: string, order: number): boolean {
  if (operator === '<') return order < 0;
  if (operator === '<=') return order <= 0;
  if (operator === '>') return order > 0;
  return order >= 0;
}

// Functions and macros of cel-go's standard library, by how they are called.
const GLOBAL_FUNCTIONS = new Set([
  'size',
  'matches',
  'bool',
  'bytes',
  'double',
  'duration',
  'dyn',
  'int',
  'string',
  'timestamp',
  'type',
  'uint',
  'has',
]);
const MEMBER_FUNCTIONS = new Set([
  'size',
  'contains',
  'startsWith',
  'endsWith',
  'matches',
  'getDate',
  'getDayOfMonth',
  'getDayOfWeek',
  'getDayOfYear',
  'getFullYear',
  'getHours',
  'getMilliseconds',
  'getMinutes',
  'getMonth',
  'getSeconds',
  'all',
  'exists',
  'exists_one',
  'map',
  'filter',
]);
const MACRO_ARITY: Record<string, readonly number[]> = {
  all: [2],
  exists: [2],
  exists_one: [2],
  map: [2, 3],
  filter: [2],
};
const ORDERING = new Set(['<', '<=', '>', '>=']);
const NUMERIC = new Set(['int', 'uint', 'double']);

// ---------------------------------------------------------------------------------------------
// marc-cel's AST, as far as this file reads and instruments it (the version is pinned).

type Evaluate = (ev: Evaluator, ast: AstNode, ctx: unknown) => unknown;

interface Evaluator {
  run(node: AstNode, ctx: unknown): unknown;
}

interface AstNode {
  readonly op: string;
  /** Offset of the node's first character in the source. */
  readonly start: number;
  readonly args: unknown;
  readonly checkedType?: { readonly name: string };
  readonly meta: { readonly evaluate: Evaluate; readonly alternate?: AstNode; readonly macro?: Macro };
  evaluate: Evaluate;
}

interface Macro {
  evaluate(ev: Evaluator, macro: Macro, ctx: unknown): unknown;
}

interface ComprehensionArgs {
  readonly kind?: string;
  readonly iterable: AstNode;
  readonly init: AstNode;
  readonly step: AstNode;
}

interface ParsedExpression {
  readonly ast: AstNode;
  (context: Record<string, unknown>): unknown;
  check(): { valid: boolean; type?: string; error?: Error };
}

function isNode(value: unknown): value is AstNode {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as AstNode).op === 'string' &&
    'meta' in value
  );
}

// ---------------------------------------------------------------------------------------------
// Compile.

interface CompiledInternals {
  readonly run: (object: Record<string, unknown>) => unknown;
  /** Forgets the values the last evaluation left in the nodes' slots (the object among them). */
  readonly forget: () => void;
}

const INTERNALS = new WeakMap<CelProgram, CompiledInternals>();

export function compileCelExpression(
  source: string,
  direction: CelDirection,
  destinationPaths: readonly string[],
): CelCompiled {
  const refused = (problem: string): CelCompiled => ({ ok: false, problem: `${direction}: ${problem}` });
  if (source === '') return refused('expression is required');
  const destinations = destinationsOf(direction, destinationPaths);
  if (typeof destinations === 'string') return refused(destinations);
  const codePoints = countCodePoints(source);
  if (codePoints > CEL_MAX_CODE_POINTS) {
    return refused(
      `expression code point size exceeds limit: size: ${codePoints}, limit ${CEL_MAX_CODE_POINTS}`,
    );
  }
  const parsed = parseExpression(source);
  if (typeof parsed === 'string') return refused(parsed);
  const literalProblem = literalRangeProblem(parsed.ast, source);
  if (literalProblem !== undefined) return refused(literalProblem);
  const undeclared = firstProblem(parsed.ast, undeclaredFunction);
  if (undeclared !== undefined) return refused(undeclared);
  const checked = parsed.check();
  if (!checked.valid) return refused(firstLine(checked.error?.message ?? 'type check failed'));
  const mismatch = operandProblem(parsed.ast);
  if (mismatch !== undefined) return refused(mismatch);
  const slots = instrument(parsed.ast);
  const program: CelProgram = Object.freeze({
    source,
    direction,
    destinations,
    resultType: checked.type ?? 'dyn',
  });
  const forget = () => {
    for (const slot of slots) slot.value = undefined;
  };
  INTERNALS.set(program, { run: (object) => parsed({ object }), forget });
  return { ok: true, program };
}

/** The destination side's paths: a hubToSpoke expression writes the spoke's. */
function destinationsOf(direction: CelDirection, paths: readonly string[]): CelDestination[] | string {
  const side = direction === 'hubToSpoke' ? 'spokePaths' : 'hubPaths';
  if (paths.length === 0) return `${side} must list at least one path`;
  const destinations: CelDestination[] = [];
  for (const path of paths) {
    const parsed = parsePath(path);
    if (!parsed.ok) return `${side}: ${parsed.problem}`;
    destinations.push({ path, segments: parsed.segments });
  }
  return destinations;
}

function countCodePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

function parseExpression(source: string): ParsedExpression | string {
  try {
    return ENVIRONMENT.parse(source) as unknown as ParsedExpression;
  } catch (error) {
    const message = firstLine(error instanceof Error ? error.message : String(error));
    return error instanceof ParseError ? `syntax error: ${message}` : message;
  }
}

function firstLine(text: string): string {
  const end = text.indexOf('\n');
  return end === -1 ? text : text.slice(0, end);
}

/** Every node once: macros share their receiver between the call and its expansion. */
function nodesOf(root: AstNode): AstNode[] {
  const seen = new Set<AstNode>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
      return;
    }
    if (!isNode(value) || seen.has(value)) return;
    seen.add(value);
    if (value.op === 'comprehension') {
      const args = value.args as ComprehensionArgs;
      visit(args.iterable);
      visit(args.init);
      visit(args.step);
    } else if (value.op !== 'value') {
      visit(value.args);
    }
    visit(value.meta.alternate);
    const macro = value.meta.macro as unknown as Record<string, unknown> | undefined;
    if (macro) for (const key of Object.keys(macro)) visit(macro[key]);
  };
  visit(root);
  return [...seen];
}

/** cel-go's parser refuses numbers it cannot hold; marc-cel keeps them as BigInt or Infinity. */
function literalRangeProblem(root: AstNode, source: string): string | undefined {
  // cel-go reads `-9223372036854775808` as one literal, and only without parentheses between.
  const negated = new Set<unknown>();
  for (const node of nodesOf(root)) {
    const operand = node.args as AstNode;
    if (node.op === '-_' && /^-\s*$/.test(source.slice(node.start, operand.start))) negated.add(operand);
  }
  for (const node of nodesOf(root)) {
    if (node.op !== 'value') continue;
    const value = node.args;
    if (typeof value === 'bigint' && value > MAX_INT && !(value === -MIN_INT && negated.has(node))) {
      return `syntax error: invalid int literal ${value}`;
    }
    if (typeof value === 'number' && !Number.isFinite(value)) return 'syntax error: invalid double literal';
  }
  return undefined;
}

/** The first node `problem` finds fault with: what cel-go's checker refuses and marc-cel's accepts. */
function firstProblem(root: AstNode, problem: (node: AstNode) => string | undefined): string | undefined {
  for (const node of nodesOf(root)) {
    const found = problem(node);
    if (found !== undefined) return found;
  }
  return undefined;
}

function undeclaredFunction(node: AstNode): string | undefined {
  if (node.op !== 'call' && node.op !== 'rcall') return undefined;
  const args = node.args as unknown[];
  const name = args[0] as string;
  const known = node.op === 'call' ? GLOBAL_FUNCTIONS : MEMBER_FUNCTIONS;
  if (!known.has(name)) {
    return `undeclared reference to '${name}' (the reference's CEL environment has the standard library only)`;
  }
  const arity = MACRO_ARITY[name];
  const given = (args[node.op === 'call' ? 1 : 2] as unknown[]).length;
  if (node.op === 'rcall' && arity !== undefined && !arity.includes(given)) {
    return `undeclared reference to '${name}' with ${given} arguments (two-variable comprehensions are a CEL extension)`;
  }
  return undefined;
}

/** What cel-go's checker refuses and marc-cel's accepts among operand types. */
function operandProblem(root: AstNode): string | undefined {
  const inMacroBody = macroBodies(root);
  for (const node of nodesOf(root)) {
    const problem = mismatchedOperands(node, inMacroBody.has(node));
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** The nodes inside macros' arguments (predicates, transforms), where cel-go checks ordering leniently. */
function macroBodies(root: AstNode): Set<AstNode> {
  const bodies = new Set<AstNode>();
  for (const node of nodesOf(root)) {
    if (node.op !== 'rcall' || !node.meta.alternate) continue;
    for (const argument of (node.args as unknown[])[2] as AstNode[]) {
      for (const inner of nodesOf(argument)) bodies.add(inner);
    }
  }
  return bodies;
}

function mismatchedOperands(node: AstNode, inMacroBody: boolean): string | undefined {
  if (ORDERING.has(node.op)) return inMacroBody ? undefined : crossTypeOrdering(node);
  if (node.op === 'rcall' && !node.meta.alternate) return unmatchedMemberCall(node);
  if (node.op === '[]') return mismatchedKey(node, '_[_]', 0, 1);
  if (node.op === 'in') return mismatchedKey(node, '@in', 1, 0);
  return undefined;
}

// cel-go v0.26's checker has no cross-type numeric ordering (1 < 1.0) outside macro bodies
// (observed: it lets `[1].exists(x, 1 < 1.0)` through); marc-cel's has it everywhere.
function crossTypeOrdering(node: AstNode): string | undefined {
  const [left, right] = (node.args as AstNode[]).map(typeName);
  if (left === undefined || right === undefined) return undefined;
  if (!NUMERIC.has(left) || !NUMERIC.has(right) || left === right) return undefined;
  return `found no matching overload for '_${node.op}_' applied to '(${left}, ${right})'`;
}

const TS = 'google.protobuf.Timestamp';
const DUR = 'google.protobuf.Duration';
const STRING_ARG: readonly (readonly string[])[] = [['string']];
const OPTIONAL_ZONE: readonly (readonly string[])[] = [[], ['string']];

/** The member functions' overloads in cel-go's standard library: receiver types, argument lists. */
const MEMBER_OVERLOADS: Record<
  string,
  { receivers: readonly string[]; args: readonly (readonly string[])[] }
> = {
  contains: { receivers: ['string'], args: STRING_ARG },
  startsWith: { receivers: ['string'], args: STRING_ARG },
  endsWith: { receivers: ['string'], args: STRING_ARG },
  matches: { receivers: ['string'], args: STRING_ARG },
  size: { receivers: ['string', 'bytes', 'list', 'map'], args: [[]] },
  getFullYear: { receivers: [TS], args: OPTIONAL_ZONE },
  getMonth: { receivers: [TS], args: OPTIONAL_ZONE },
  getDate: { receivers: [TS], args: OPTIONAL_ZONE },
  getDayOfMonth: { receivers: [TS], args: OPTIONAL_ZONE },
  getDayOfWeek: { receivers: [TS], args: OPTIONAL_ZONE },
  getDayOfYear: { receivers: [TS], args: OPTIONAL_ZONE },
  getHours: { receivers: [TS, DUR], args: OPTIONAL_ZONE },
  getMinutes: { receivers: [TS, DUR], args: OPTIONAL_ZONE },
  getSeconds: { receivers: [TS, DUR], args: OPTIONAL_ZONE },
  getMilliseconds: { receivers: [TS, DUR], args: OPTIONAL_ZONE },
};

// marc-cel dispatches a member call on a dyn receiver at run time whatever its arguments; cel-go
// needs an overload whose parameters the arguments' static types fit (dyn fits all).
function unmatchedMemberCall(node: AstNode): string | undefined {
  const [name, receiver, parameters] = node.args as [string, AstNode, AstNode[]];
  const overloads = MEMBER_OVERLOADS[name];
  if (overloads === undefined) return undefined;
  const receiverType = typeName(receiver);
  const argTypes = parameters.map(typeName);
  const fits = (type: string | undefined, expected: string) =>
    type === undefined || type === 'dyn' || type === expected || type.startsWith(`${expected}<`);
  const receiverFits = overloads.receivers.some((expected) => fits(receiverType, expected));
  const argsFit = overloads.args.some(
    (expected) => expected.length === argTypes.length && expected.every((e, i) => fits(argTypes[i], e)),
  );
  if (receiverFits && argsFit) return undefined;
  return `found no matching overload for '${name}' applied to '${receiverType ?? 'dyn'}.(${argTypes.join(', ')})'`;
}

const SIMPLE_TYPES = new Set(['int', 'uint', 'double', 'string', 'bool', 'bytes']);

/** A map's key or a list's element looked up with a value of another simple type (`{1: "a"}["x"]`, `"x" in [1u]`). */
function mismatchedKey(
  node: AstNode,
  operator: string,
  containerAt: number,
  keyAt: number,
): string | undefined {
  const args = node.args as AstNode[];
  const container = typeName(args[containerAt]);
  const key = typeName(args[keyAt]);
  const expected =
    container?.match(/^map<([^,<>]+), /)?.[1] ??
    (operator === '@in' ? container?.match(/^list<(.+)>$/)?.[1] : undefined);
  if (
    expected === undefined ||
    key === undefined ||
    !SIMPLE_TYPES.has(expected) ||
    !SIMPLE_TYPES.has(key) ||
    expected === key
  ) {
    return undefined;
  }
  const operands = operator === '@in' ? `${key}, ${container}` : `${container}, ${key}`;
  return `found no matching overload for '${operator}' applied to '(${operands})'`;
}

function typeName(node: AstNode | undefined): string | undefined {
  return node?.checkedType?.name;
}

// ---------------------------------------------------------------------------------------------
// Metering: every node's evaluation is charged by cel-go's cost model, and the clock is read
// every few thousand units.

class BudgetExceeded extends Error {
  readonly kind: 'cost' | 'deadline';

  constructor(kind: 'cost' | 'deadline') {
    super(kind);
    this.kind = kind;
  }
}

// One instance each: once the budget is spent every node throws, and a quantifier keeps calling
// its step on each element (catching, as CEL's error absorption asks), so the throw must be cheap.
const COST_SPENT = new BudgetExceeded('cost');
const TIME_SPENT = new BudgetExceeded('deadline');

function budgetError(kind: 'cost' | 'deadline'): BudgetExceeded {
  return kind === 'cost' ? COST_SPENT : TIME_SPENT;
}

/** Raised by this file's own evaluators, as marc-cel's EvaluationError is by its. */
class CelRuntimeError extends Error {}

class Meter {
  cost = 0;
  tripped: 'cost' | 'deadline' | undefined;
  readonly limits: CelLimits;
  private sinceClock = 0;
  private readonly now: () => number;
  private readonly deadline: number;

  constructor(limits: CelLimits, now: () => number) {
    this.limits = limits;
    this.now = now;
    this.deadline = now() + limits.deadlineMs;
  }

  charge(units: number): void {
    if (this.tripped) throw budgetError(this.tripped);
    this.cost += units;
    if (this.cost > this.limits.costLimit) this.trip('cost');
    this.sinceClock += units + 1;
    if (this.sinceClock >= 4096) this.readClock();
  }

  /** Work that costs nothing in the model but still takes time (converting the result). */
  tick(): void {
    this.charge(0);
  }

  private readClock(): void {
    this.sinceClock = 0;
    if (this.now() > this.deadline) this.trip('deadline');
  }

  private trip(kind: 'cost' | 'deadline'): never {
    this.tripped ??= kind;
    throw budgetError(this.tripped);
  }
}

// Evaluation is synchronous and never re-entrant, so the running evaluation's meter can be a
// module variable the instrumented nodes read.
let activeMeter: Meter | undefined;

function charge(units: number): void {
  activeMeter?.charge(units);
}

/** The value a node last evaluated to, for a parent whose cost or check depends on it. */
interface Slot {
  value: unknown;
}

function instrument(root: AstNode): Slot[] {
  const nodes = nodesOf(root);
  const slots = new Map<AstNode, Slot>(nodes.map((node) => [node, { value: undefined }]));
  const slotOf = (node: AstNode) => slots.get(node) as Slot;
  const steps = quantifierSteps(nodes);
  for (const node of nodes) {
    const slot = slotOf(node);
    const stepCost = steps.get(node);
    const cost = stepCost === undefined ? costOf(node, slotOf) : () => stepCost;
    const evaluate = semanticEvaluator(node, slotOf) ?? meteredEvaluator(node, cost);
    node.evaluate = (ev, ast, ctx) => {
      const value = evaluate(ev, ast, ctx);
      slot.value = value;
      return value;
    };
  }
  return [...slots.values()];
}

/** How marc-cel's own ASTNode.evaluate dispatches, without its rebinding of `evaluate`. */
function baseEvaluator(node: AstNode): Evaluate {
  const { alternate, macro, evaluate } = node.meta;
  if (alternate) return (ev, _ast, ctx) => alternate.evaluate(ev, alternate, ctx);
  if (macro) return (ev, _ast, ctx) => macro.evaluate(ev, macro, ctx);
  return (ev, ast, ctx) => evaluate.call(node, ev, ast, ctx);
}

type Cost = (value: unknown) => number;

function meteredEvaluator(node: AstNode, cost: Cost): Evaluate {
  const base = baseEvaluator(node);
  const after = postEvaluation(node);
  return (ev, ast, ctx) => {
    const value = base(ev, ast, ctx);
    charge(cost(value));
    return after ? after(value) : value;
  };
}

const STRING_TRAVERSAL = 0.1;
const REGEX_LENGTH = 0.25;
const LIST_CREATE = 10;
const MAP_CREATE = 30;
// cel-go expands map(x, t) to a fold whose step is `@result + [t]`: read, list, add.
const ACCUMULATE = 1 + LIST_CREATE + 1;

function costOf(node: AstNode, slotOf: (node: AstNode) => Slot): Cost {
  const args = node.args as AstNode[];
  switch (node.op) {
    case 'value':
    case '?:':
    case '&&':
    case '||':
    case 'accuValue':
    case 'accuInc':
      return () => 0;
    case 'list':
      return () => LIST_CREATE;
    case 'accuPush':
      return () => ACCUMULATE;
    case '==':
    case '!=':
      return pairCost(slotOf(args[0] as AstNode), slotOf(args[1] as AstNode));
    case 'call':
    case 'rcall':
      return callCost(node, slotOf);
    default:
      // variables, selections, indexes, operators, and the fold's final read of @result
      return () => 1;
  }
}

// cel-go's fold for all is `@result && p` under the loop test @not_strictly_false(@result), for
// exists `@result || p` under @not_strictly_false(!@result): per element, 3 and 4 units beyond
// the predicate's own nodes (measured against cel-go v0.26.1, as are the other constants here).
const ALL_STEP = 3;
const EXISTS_STEP = 4;

/** all/exists steps are `p ? true : false` here, told apart by their initial value. */
function quantifierSteps(nodes: readonly AstNode[]): Map<AstNode, number> {
  const steps = new Map<AstNode, number>();
  for (const node of nodes) {
    if (node.op !== 'comprehension') continue;
    const { kind, step, init } = node.args as ComprehensionArgs;
    if (kind !== 'quantifier' || (step.args as AstNode[])[1]?.op !== 'value') continue;
    steps.set(step, init.args === true ? ALL_STEP : EXISTS_STEP);
  }
  return steps;
}

function pairCost(left: Slot, right: Slot): Cost {
  return () => Math.ceil(Math.min(sizeOf(left.value), sizeOf(right.value)) * STRING_TRAVERSAL);
}

function callCost(node: AstNode, slotOf: (node: AstNode) => Slot): Cost {
  const args = node.args as unknown[];
  const name = args[0] as string;
  if (node.meta.alternate || node.meta.macro) return () => (name === 'has' ? 1 : 0);
  if (node.op !== 'rcall') return () => 1;
  const receiver = slotOf(args[1] as AstNode);
  const first = slotOf((args[2] as AstNode[])[0] as AstNode);
  if (name === 'startsWith' || name === 'endsWith') return () => traversal(receiver.value);
  if (name === 'contains') return () => traversal(receiver.value) * traversal(first.value);
  return () => 1;
}

function sizeOf(value: unknown): number {
  if (typeof value === 'string' || Array.isArray(value)) return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  return 1;
}

function traversal(value: unknown): number {
  return Math.ceil(sizeOf(value) * STRING_TRAVERSAL);
}

// ---------------------------------------------------------------------------------------------
// Semantics: where a node must compute what cel-go computes rather than what marc-cel does.

/** Where a list in the result came from: it decides how the reference's encoding writes it. */
type ListOrigin = 'literal' | 'macro' | 'concat' | 'object';

// A list the expression builds is []ref.Val in cel-go (its elements written by reflection; a
// map or filter that kept nothing leaves it nil, written as null); a concatenation is converted to []any (elements by their Go values); a list from the object is
// the decoded JSON itself.
const listOrigins = new WeakMap<object, ListOrigin>();
// A map the expression builds, with its keys as evaluated (marc-cel's object has them as text).
const literalMaps = new WeakMap<object, [unknown, unknown][]>();

function originOf(list: unknown[]): ListOrigin {
  return listOrigins.get(list) ?? 'object';
}

/** What to do with a node's value after marc-cel computed it: tag built lists, catch int64 overflow. */
function postEvaluation(node: AstNode): ((value: unknown) => unknown) | undefined {
  if (node.op === 'list') return (value) => tagBuiltList(value, 'literal');
  if (node.op === 'comprehension') return (value) => tagBuiltList(value, 'macro');
  if (node.op === '-') return inTimestampRange;
  return undefined;
}

function tagBuiltList(value: unknown, origin: ListOrigin): unknown {
  if (Array.isArray(value)) listOrigins.set(value, origin);
  return value;
}

// cel-go's timestamps span years 1 to 9999; arithmetic past either end is an error there.
const MIN_TIMESTAMP_MS = new Date('0001-01-01T00:00:00Z').getTime();
const MAX_TIMESTAMP_MS = new Date('9999-12-31T23:59:59.999Z').getTime();

function inTimestampRange(value: unknown): unknown {
  if (
    value instanceof Date &&
    !(value.getTime() >= MIN_TIMESTAMP_MS && value.getTime() <= MAX_TIMESTAMP_MS)
  ) {
    throw new CelRuntimeError('timestamp overflow');
  }
  return value;
}

function semanticEvaluator(node: AstNode, slotOf: (node: AstNode) => Slot): Evaluate | undefined {
  const args = node.args as unknown[];
  switch (node.op) {
    case 'map':
      return mapLiteral(args as [AstNode, AstNode][]);
    case '+':
      return concatenation(node, slotOf);
    case '-_':
      return negation(node.args as AstNode);
    case '/':
    case '%':
      return minIntDivision(node, slotOf);
    case 'call':
      return globalCall(node);
    case 'rcall':
      return args[0] === 'matches' && !node.meta.alternate ? memberMatches(node) : undefined;
    default:
      return undefined;
  }
}

// marc-cel turns keys to text and skips "__proto__", "constructor" and "prototype"; the reference
// keeps every key as evaluated, refusing the non-string ones only when it converts the result.
function mapLiteral(entries: [AstNode, AstNode][]): Evaluate {
  return (ev, _ast, ctx) => {
    const evaluated: [unknown, unknown][] = [];
    const object: Record<string, unknown> = {};
    for (const [keyNode, valueNode] of entries) {
      const key = ev.run(keyNode, ctx);
      const value = ev.run(valueNode, ctx);
      evaluated.push([key, value]);
      const text = String(key);
      if (text !== '__proto__' && text !== 'constructor' && text !== 'prototype') object[text] = value;
    }
    charge(MAP_CREATE);
    literalMaps.set(object, evaluated);
    return object;
  };
}

// cel-go's list `+` returns the other operand itself when one is empty.
function concatenation(node: AstNode, slotOf: (node: AstNode) => Slot): Evaluate {
  const base = meteredEvaluator(node, costOf(node, slotOf));
  const [left, right] = (node.args as AstNode[]).map(slotOf) as [Slot, Slot];
  return (ev, ast, ctx) => {
    const value = inTimestampRange(base(ev, ast, ctx));
    if (Array.isArray(value) && Array.isArray(left.value) && Array.isArray(right.value)) {
      const origin =
        left.value.length === 0
          ? originOf(right.value)
          : right.value.length === 0
            ? originOf(left.value)
            : 'concat';
      listOrigins.set(value, origin);
    }
    return value;
  };
}

function negation(operand: AstNode): Evaluate {
  return (ev, _ast, ctx) => {
    const value = ev.run(operand, ctx);
    charge(1);
    if (typeof value === 'bigint') {
      if (value === MIN_INT) throw new CelRuntimeError('integer overflow');
      return -value;
    }
    if (typeof value === 'number') return -value;
    throw new CelRuntimeError(`no such overload: -${celTypeName(value)}`);
  };
}

function minIntDivision(node: AstNode, slotOf: (node: AstNode) => Slot): Evaluate {
  const base = meteredEvaluator(node, costOf(node, slotOf));
  const [left, right] = (node.args as AstNode[]).map(slotOf) as [Slot, Slot];
  return (ev, ast, ctx) => {
    const value = base(ev, ast, ctx);
    if (left.value === MIN_INT && right.value === -1n) throw new CelRuntimeError('integer overflow');
    return value;
  };
}

const CONVERSIONS: Record<string, (value: unknown) => unknown> = {
  string: convertToString,
  int: convertToInt,
  uint: convertToUint,
  double: convertToDouble,
};

function globalCall(node: AstNode): Evaluate | undefined {
  const [name, parameters] = node.args as [string, AstNode[]];
  const conversion = CONVERSIONS[name];
  if (conversion !== undefined && parameters.length === 1) {
    const [operand] = parameters as [AstNode];
    return (ev, _ast, ctx) => {
      const value = ev.run(operand, ctx);
      charge(1);
      return conversion(value);
    };
  }
  if (name === 'matches' && parameters.length === 2) {
    const [text, pattern] = parameters as [AstNode, AstNode];
    return (ev, _ast, ctx) => chargedMatch(ev.run(text, ctx), ev.run(pattern, ctx));
  }
  return undefined;
}

function memberMatches(node: AstNode): Evaluate {
  const [, receiver, parameters] = node.args as [string, AstNode, AstNode[]];
  const pattern = parameters[0] as AstNode;
  return (ev, _ast, ctx) => chargedMatch(ev.run(receiver, ctx), ev.run(pattern, ctx));
}

function chargedMatch(text: unknown, pattern: unknown): boolean {
  if (typeof text !== 'string' || typeof pattern !== 'string') {
    throw new CelRuntimeError(`no such overload: ${celTypeName(text)}.matches(${celTypeName(pattern)})`);
  }
  charge(Math.ceil((1 + text.length) * STRING_TRAVERSAL) * Math.ceil(pattern.length * REGEX_LENGTH));
  return regexMatches(text, pattern);
}

// Compiled patterns, bounded: expressions usually match literal patterns, a few per program.
const PATTERNS = new Map<string, RE2JS>();

function regexMatches(text: string, pattern: string): boolean {
  let compiled = PATTERNS.get(pattern);
  if (compiled === undefined) {
    try {
      compiled = RE2JS.compile(pattern);
    } catch (error) {
      throw new CelRuntimeError(
        `error parsing regexp: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    if (PATTERNS.size >= 256) PATTERNS.clear();
    PATTERNS.set(pattern, compiled);
  }
  return compiled.test(text);
}

// ---------------------------------------------------------------------------------------------
// Conversions as cel-go v0.26 performs them (Go's strconv, range checks, text of numbers).

function convertToString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof UnsignedInt) return value.value.toString();
  if (typeof value === 'number') return formatGoFloat(value);
  if (value instanceof Uint8Array) return decodeUtf8(value);
  if (value instanceof Date) return formatTimestamp(value);
  if (value instanceof Duration) return `${formatGoFixed(Number(value.seconds) + value.nanos / 1e9)}s`;
  throw new CelRuntimeError(`no such overload: string(${celTypeName(value)})`);
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new CelRuntimeError('invalid UTF-8 in bytes, cannot convert to string');
  }
}

function convertToInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (value instanceof UnsignedInt) return inIntRange(value.value);
  if (typeof value === 'number') {
    if (!(value > -TWO_TO_63 && value < TWO_TO_63)) throw new CelRuntimeError('integer overflow');
    return BigInt(Math.trunc(value));
  }
  if (typeof value === 'string') return inIntRange(parseGoInteger(value, /^[+-]?[0-9]+$/, 'int'));
  if (value instanceof Date) return BigInt(Math.floor(value.getTime() / 1000));
  if (value instanceof Duration) return inIntRange(value.seconds * 1_000_000_000n + BigInt(value.nanos));
  throw new CelRuntimeError(`no such overload: int(${celTypeName(value)})`);
}

function inIntRange(value: bigint): bigint {
  if (value > MAX_INT || value < MIN_INT) throw new CelRuntimeError('integer overflow');
  return value;
}

function convertToUint(value: unknown): UnsignedInt {
  if (value instanceof UnsignedInt) return value;
  if (typeof value === 'bigint') return unsigned(value);
  if (typeof value === 'number') {
    if (!(value >= 0 && value < TWO_TO_64)) throw new CelRuntimeError('unsigned integer overflow');
    return unsigned(BigInt(Math.trunc(value)));
  }
  if (typeof value === 'string') return unsigned(parseGoInteger(value, /^[0-9]+$/, 'uint'));
  throw new CelRuntimeError(`no such overload: uint(${celTypeName(value)})`);
}

function unsigned(value: bigint): UnsignedInt {
  if (value < 0n || value > MAX_UINT) throw new CelRuntimeError('unsigned integer overflow');
  return new UnsignedInt(value);
}

function parseGoInteger(text: string, syntax: RegExp, type: string): bigint {
  if (!syntax.test(text)) throw new CelRuntimeError(`type conversion error from 'string' to '${type}'`);
  const value = BigInt(text);
  if (value > (type === 'uint' ? MAX_UINT : MAX_INT) || value < MIN_INT) {
    throw new CelRuntimeError(`type conversion error from 'string' to '${type}'`);
  }
  return value;
}

function convertToDouble(value: unknown): number {
  if (typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof UnsignedInt) return Number(value.value);
  if (typeof value === 'string') return parseGoFloat(value);
  throw new CelRuntimeError(`no such overload: double(${celTypeName(value)})`);
}

const DIGITS = '[0-9](?:_?[0-9])*';
const DECIMAL_FLOAT = new RegExp(
  `^[+-]?(?:${DIGITS}(?:\\.(?:${DIGITS})?)?|\\.${DIGITS})(?:[eE][+-]?${DIGITS})?$`,
);
const HEX_FLOAT = /^([+-]?)0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?[0-9]+)$/;
const SPECIAL_FLOAT = /^([+-]?)(inf|infinity)$/i;

/** strconv.ParseFloat(s, 64): Go's syntax (underscores, hex with p, inf, nan), and a range error past float64. */
function parseGoFloat(text: string): number {
  const special = SPECIAL_FLOAT.exec(text);
  if (special) return special[1] === '-' ? -Infinity : Infinity;
  if (/^nan$/i.test(text)) return Number.NaN;
  let value: number | undefined;
  if (DECIMAL_FLOAT.test(text)) value = Number(text.replaceAll('_', ''));
  const hex = HEX_FLOAT.exec(text);
  if (hex) value = hexFloat(hex);
  if (value === undefined || !Number.isFinite(value)) {
    throw new CelRuntimeError("type conversion error from 'string' to 'double'");
  }
  return value;
}

function hexFloat([, sign, whole = '', fraction = '', exponent = '0']: RegExpExecArray): number | undefined {
  if (whole === '' && fraction === '') return undefined;
  const mantissa = Number.parseInt(`${whole}${fraction}` || '0', 16);
  const magnitude = mantissa * 2 ** (Number(exponent) - 4 * fraction.length);
  return sign === '-' ? -magnitude : magnitude;
}

/** strconv.FormatFloat(f, 'g', -1, 64), which cel-go's string(double) uses: 1e+06, 1e-05, -0. */
export function formatGoFloat(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? '+Inf' : '-Inf';
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const { negative, digits, exponent } = shortestDigits(value);
  const sign = negative ? '-' : '';
  if (exponent < -4 || exponent >= 6) {
    const mantissa = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    const magnitude = Math.abs(exponent);
    return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${magnitude < 10 ? `0${magnitude}` : magnitude}`;
  }
  return `${sign}${placePoint(digits, exponent)}`;
}

/** strconv.FormatFloat(f, 'f', -1, 64): the shortest digits, never an exponent. */
export function formatGoFixed(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0' : '0';
  const { negative, digits, exponent } = shortestDigits(value);
  return `${negative ? '-' : ''}${placePoint(digits, exponent)}`;
}

function shortestDigits(value: number): { negative: boolean; digits: string; exponent: number } {
  const [mantissa = '', exponent = '0'] = Math.abs(value).toExponential().split('e');
  return { negative: value < 0, digits: mantissa.replace('.', ''), exponent: Number(exponent) };
}

function placePoint(digits: string, exponent: number): string {
  const pointAt = exponent + 1;
  if (pointAt <= 0) return `0.${'0'.repeat(-pointAt)}${digits}`;
  if (pointAt >= digits.length) return digits + '0'.repeat(pointAt - digits.length);
  return `${digits.slice(0, pointAt)}.${digits.slice(pointAt)}`;
}

/** time.Time's RFC 3339 with nanoseconds, trailing zeros dropped, as Go's encoding writes it. */
function formatTimestamp(date: Date): string {
  const year = date.getUTCFullYear();
  if (Number.isNaN(year) || year < 0 || year > 9999) {
    throw new ValueRefused('a timestamp outside years 0–9999, which Go cannot write as JSON');
  }
  return date
    .toISOString()
    .replace(/\.(\d*?)0*Z$/, (_all, fraction: string) => (fraction === '' ? 'Z' : `.${fraction}Z`));
}

function celTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null_type';
  if (typeof value === 'bigint') return 'int';
  if (typeof value === 'number') return 'double';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'string') return 'string';
  if (value instanceof UnsignedInt) return 'uint';
  if (value instanceof Uint8Array) return 'bytes';
  if (value instanceof Date) return 'google.protobuf.Timestamp';
  if (value instanceof Duration) return 'google.protobuf.Duration';
  if (Array.isArray(value)) return 'list';
  if (isPlainObject(value)) return 'map';
  return 'type';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

// ---------------------------------------------------------------------------------------------
// Evaluate.

export function evaluateCelProgram(
  program: CelProgram,
  object: Record<string, unknown>,
  limits: CelLimits = DEFAULT_CEL_LIMITS,
): CelEvaluated {
  const internals = INTERNALS.get(program);
  if (internals === undefined)
    return { ok: false, kind: 'evaluation', message: 'not a compiled CEL program' };
  const meter = new Meter(limits, limits.now ?? (() => performance.now()));
  const previous = activeMeter;
  activeMeter = meter;
  try {
    return writesOf(program, internals.run(object), meter);
  } catch (error) {
    return failureOf(error, meter);
  } finally {
    activeMeter = previous;
    internals.forget();
  }
}

function failureOf(error: unknown, meter: Meter): CelEvaluated {
  // A quantifier or && may have swallowed the budget error as a value; the meter remembers.
  if (meter.tripped === 'cost') {
    return {
      ok: false,
      kind: 'cost',
      message: `operation cancelled: actual cost limit exceeded (limit ${meter.limits.costLimit})`,
    };
  }
  if (meter.tripped === 'deadline') {
    return {
      ok: false,
      kind: 'deadline',
      message: `operation cancelled: evaluation ran past its ${meter.limits.deadlineMs} ms deadline`,
    };
  }
  if (error instanceof ValueRefused) return { ok: false, kind: 'result', message: error.message };
  const text = error instanceof Error ? error.message : String(error);
  return { ok: false, kind: 'evaluation', message: firstLine(text) };
}

/** A result the reference cannot write as it is, or writes as a Go artifact this refuses to copy. */
class ValueRefused extends Error {}

/** The destinations' values, looked up and converted as the reference's celOp and webhook do. */
function writesOf(program: CelProgram, result: unknown, meter: Meter): CelEvaluated {
  if (meter.tripped) throw budgetError(meter.tripped);
  const root = resultMap(result);
  const values: CelWrite[] = [];
  for (const destination of program.destinations) {
    const found = root.lookup(destination);
    if (!found.found) continue;
    const value = withDestination(destination, () => root.convert(found.value));
    values.push({ ...destination, value });
  }
  return { ok: true, values };
}

function withDestination(destination: CelDestination, convert: () => JsonValue): JsonValue {
  try {
    return convert();
  } catch (error) {
    if (error instanceof ValueRefused) throw new ValueRefused(`${destination.path}: ${error.message}`);
    throw error;
  }
}

type Found = { found: true; value: unknown } | { found: false };

interface ResultMap {
  lookup(destination: CelDestination): Found;
  convert(value: unknown): JsonValue;
}

function resultMap(result: unknown): ResultMap {
  const entries = isPlainObject(result) ? literalMaps.get(result) : undefined;
  if (entries !== undefined) return builtResultMap(entries);
  if (isPlainObject(result)) return objectResultMap(result);
  throw new ValueRefused(`result must be a map, got ${celTypeName(result)}`);
}

/**
 * A map the expression built: the reference converts it to map[string]any (every key must be a
 * string, no value a type) before it reads a destination.
 */
function builtResultMap(entries: [unknown, unknown][]): ResultMap {
  const map = new Map<string, unknown>();
  for (const [key, value] of entries) {
    if (typeof key !== 'string')
      throw new ValueRefused(`result must be a map with string keys, got a ${celTypeName(key)} key`);
    if (celTypeName(value) === 'type')
      throw new ValueRefused("result must be a map: type conversion not supported for 'type'");
    map.set(key, value);
  }
  return {
    lookup: ({ path, segments }) => {
      const [first, ...rest] = segments;
      if (first !== undefined && map.has(first)) {
        const nested = descendObject(map.get(first), rest);
        if (nested.found) return nested;
      }
      return map.has(path) ? { found: true, value: map.get(path) } : { found: false };
    },
    convert: topLevelJson,
  };
}

/** A map straight from the object (`object.spec`): decoded JSON, read and written as it is. */
function objectResultMap(root: Record<string, unknown>): ResultMap {
  return {
    lookup: ({ path, segments }) => {
      const nested = descendObject(root, segments);
      if (nested.found) return nested;
      return Object.hasOwn(root, path) ? { found: true, value: root[path] } : { found: false };
    },
    convert: objectJson,
  };
}

/** getValue: through maps from the object only (a built map is not a map[string]any in Go). */
function descendObject(start: unknown, segments: readonly string[]): Found {
  let current = start;
  for (const segment of segments) {
    if (!isPlainObject(current) || literalMaps.has(current) || !Object.hasOwn(current, segment))
      return { found: false };
    current = current[segment];
  }
  return { found: true, value: current };
}

// The three ways the reference's values reach encoding/json:
//  - a value of the result map: ConvertToNative(interface{}) (int64, []byte, time.Time, ...);
//  - an element of a list the expression built ([]ref.Val): the ref.Val by reflection;
//  - an element of a concatenation ([]any of each element's Value()).

function topLevelJson(value: unknown): JsonValue {
  if (Array.isArray(value)) return listJson(value);
  if (isPlainObject(value)) return mapJson(value);
  return scalarJson(value, 'top');
}

function listJson(list: unknown[]): JsonValue {
  const origin = originOf(list);
  if (origin === 'object') return objectJson(list);
  if (origin === 'macro' && list.length === 0) return null;
  const element = origin === 'concat' ? concatElementJson : builtListElementJson;
  const out: JsonValue[] = [];
  for (const item of list) out.push(element(item));
  return out;
}

function mapJson(map: Record<string, unknown>): JsonValue {
  if (literalMaps.has(map)) {
    throw new ValueRefused(
      'the expression built a map here, which the reference cannot encode (json: unsupported type: map[ref.Val]ref.Val); use a dotted key per field instead',
    );
  }
  return objectJson(map);
}

function builtListElementJson(value: unknown): JsonValue {
  if (Array.isArray(value) || isPlainObject(value)) {
    throw new ValueRefused(
      'a list or map inside a list the expression built is written by the reference as {"Adapter":{}}; refusing to write that',
    );
  }
  return scalarJson(value, 'element');
}

function concatElementJson(value: unknown): JsonValue {
  if (Array.isArray(value)) return listJson(value);
  if (isPlainObject(value)) return mapJson(value);
  return scalarJson(value, 'top');
}

function scalarJson(value: unknown, position: 'top' | 'element'): JsonValue {
  activeMeter?.tick();
  if (value === null || value === undefined) return 0; // cel-go's NullValue is an int32 enum
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return finiteNumber(value);
  if (typeof value === 'bigint') return exactInteger(value);
  if (value instanceof UnsignedInt) return exactInteger(value.value);
  if (value instanceof Uint8Array)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
  if (value instanceof Date) return formatTimestamp(value);
  if (value instanceof Duration) {
    if (position === 'element')
      throw new ValueRefused(
        'a duration inside a list the expression built is written by the reference as {"Duration":n}; refusing to write that',
      );
    return exactInteger(value.seconds * 1_000_000_000n + BigInt(value.nanos));
  }
  // A type: {} by reflection inside a list the expression built, a conversion error elsewhere.
  throw new ValueRefused(
    `a ${celTypeName(value)} value has no JSON form (the reference writes {} for it inside a list)`,
  );
}

function finiteNumber(value: number): number {
  if (!Number.isFinite(value)) throw new ValueRefused(`json: unsupported value: ${formatGoFloat(value)}`);
  return value;
}

// JSON numbers are doubles here; a larger integer would be written rounded, so it is refused.
function exactInteger(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER)) {
    throw new ValueRefused(
      `the integer ${value} is beyond 2^53, which a JSON number here cannot carry exactly`,
    );
  }
  return Number(value);
}

/** A fresh copy of JSON from the object (objects and arrays here are only ever decoded JSON). */
function objectJson(value: unknown): JsonValue {
  activeMeter?.tick();
  if (Array.isArray(value)) return value.map(objectJson);
  if (isPlainObject(value)) {
    const out: { [key: string]: JsonValue } = {};
    for (const key of Object.keys(value)) {
      const copy = objectJson(value[key]);
      if (key === '__proto__')
        Object.defineProperty(out, key, {
          value: copy,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      else out[key] = copy;
    }
    return out;
  }
  return value as JsonValue;
}
