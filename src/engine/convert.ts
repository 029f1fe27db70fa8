// Convert one object between two versions of a target. Hub and spoke: a spoke converts to
// the hub and the hub to a spoke; spoke to spoke goes through the hub, so N versions need N-1
// plans, not N².
//
// The output is built fresh: a copy of the input that skips every path a rule claims, then
// each rule writes its destination from the pristine input. Rules therefore never see each
// other's output, and their order never matters. A value a rule cannot convert fails the
// conversion with the object and the path; nothing is dropped silently.
//
// `convertOwned` is for an input nobody else holds (the objects of a ConversionReview just
// parsed): the output shares the input's unclaimed values instead of copying them. Safe by
// construction: every path a rule writes is in the omit tree, so every object a write walks into
// is one this step created, never a shared one; and compile rejects two rules claiming
// overlapping paths on one side, so a value moved by one rule is never written into by another.
// Only values from the plan itself (a Constant, a DefaultValue) are still copied: the plan is
// shared by every request.
//
// The output always carries a `metadata` object: the apiserver rejects a converted object
// without one, and server-side-apply pruning can send objects whose metadata is absent or null.
import type { EnumValue } from '../api/rules.ts';
import { deepCopy, deepEqual, isJsonObject, type JsonObject, readPath, setOwn, writePath } from './json.ts';
import { joinPath, type Segments } from './paths.ts';
import type { Direction, OmitTree, Op, Router, SpokePlan } from './plan.ts';

export interface ConversionError {
  /** `kind namespace/name`, as far as the input tells. */
  object: string;
  message: string;
  path?: string;
  ruleIndex?: number;
}

export type ConvertResult = { ok: true; object: unknown } | { ok: false; error: ConversionError };

type Step = { plan: SpokePlan; direction: Direction; to: string };

/** Copies of the input's values, or the values themselves when the input is the caller's to give away. */
type Take = (value: unknown) => unknown;
const sameValue: Take = (value) => value;

/** Converts `object`, leaving it as it was. */
export function convert(router: Router, object: unknown, from: string, to: string): ConvertResult {
  return convertWith(router, object, from, to, deepCopy);
}

/** Converts `object`, which the caller gives up: the output may share its values (see the header). */
export function convertOwned(router: Router, object: unknown, from: string, to: string): ConvertResult {
  return convertWith(router, object, from, to, sameValue);
}

function convertWith(router: Router, object: unknown, from: string, to: string, take: Take): ConvertResult {
  if (!isJsonObject(object))
    return { ok: false, error: { object: '(not an object)', message: 'input is not an object' } };
  if (from === to) return { ok: true, object: withMetadata(object) };
  const steps = route(router, from, to);
  if (typeof steps === 'string') return failure(object, steps);
  const group = groupOf(object, from);
  if (typeof group !== 'string') return failure(object, group.problem);
  let current: JsonObject = object;
  for (const step of steps) {
    const converted = applyStep(step, current, group, take);
    if (!converted.ok) return failure(object, converted.message, converted.path, converted.ruleIndex);
    current = converted.object;
  }
  return { ok: true, object: withMetadata(current) };
}

/** The object itself when it has metadata; otherwise a shallow copy with `metadata: {}`. */
function withMetadata(object: JsonObject): JsonObject {
  if (object.metadata !== undefined && object.metadata !== null) return object;
  return { ...object, metadata: {} };
}

/** The one or two plan applications from `from` to `to`, or why there are none. */
function route(router: Router, from: string, to: string): Step[] | string {
  const hub = router.hubVersion;
  const steps: Step[] = [];
  if (from !== hub) {
    const plan = router.spokes.get(from);
    if (!plan) return noPlan(router, from);
    steps.push({ plan, direction: 'spokeToHub', to: hub });
  }
  if (to !== hub) {
    const plan = router.spokes.get(to);
    if (!plan) return noPlan(router, to);
    steps.push({ plan, direction: 'hubToSpoke', to });
  }
  return steps;
}

function noPlan(router: Router, version: string): string {
  if (!router.unlisted.has(version)) {
    const converted = [`${router.hubVersion} (hub)`, ...router.spokes.keys()].join(', ');
    return `no conversion plan for version ${version}; this config converts ${converted}`;
  }
  return `no conversion plan for version ${version}: it is served but not listed in the config's spokes and differs from the hub ${router.hubVersion}; list ${version} in spokes with rules, or, if it is being retired, stop serving it and migrate objects stored at it`;
}

/** The API group, from the object itself; its version must be the one we convert from. */
function groupOf(object: JsonObject, from: string): string | { problem: string } {
  const apiVersion = object.apiVersion;
  if (typeof apiVersion !== 'string') return { problem: 'apiVersion is missing' };
  const split = splitApiVersion(apiVersion);
  if (split === undefined || split.version !== from) {
    return { problem: `apiVersion ${apiVersion} is not version ${from} of a group` };
  }
  return split.group;
}

/** `group/version`: the last slash splits, and both parts are non-empty. */
export function splitApiVersion(apiVersion: string): { group: string; version: string } | undefined {
  const slash = apiVersion.lastIndexOf('/');
  if (slash <= 0 || slash === apiVersion.length - 1) return undefined;
  return { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

type StepResult =
  | { ok: true; object: JsonObject }
  | { ok: false; message: string; path?: string; ruleIndex?: number };

function applyStep(step: Step, input: JsonObject, group: string, take: Take): StepResult {
  const output = copyExcept(input, step.plan.omit[step.direction], take);
  output.apiVersion = `${group}/${step.to}`;
  for (const op of step.plan.ops[step.direction]) {
    const skipped = op.when !== undefined && !deepEqual(readPath(input, op.when.segments), op.when.equals);
    const problem = skipped ? carryUnchanged(op, input, output, take) : applyOp(op, input, output, take);
    if (problem) return { ok: false, message: problem.message, path: problem.path, ruleIndex: op.ruleIndex };
  }
  return { ok: true, object: output };
}

interface OpProblem {
  message: string;
  path: string;
}

function applyOp(op: Op, input: JsonObject, output: JsonObject, take: Take): OpProblem | undefined {
  switch (op.kind) {
    case 'write':
      return write(output, op.to, deepCopy(op.value), op);
    case 'move': {
      const value = readPath(input, op.from);
      return value === undefined ? undefined : write(output, op.to, take(value), op);
    }
    case 'remap': {
      const value = readPath(input, op.from);
      if (value === undefined) return undefined;
      // A Map compares keys by type and value, so 1 never matches "1"; objects never match.
      const mapped = op.table.get(value as EnumValue);
      if (mapped !== undefined) return write(output, op.to, mapped, op);
      if (op.onUnmapped === 'Drop') return undefined;
      return {
        path: joinPath(op.from),
        message: `value ${JSON.stringify(value)} has no mapping in rule ${op.ruleIndex} (${op.strategy})`,
      };
    }
  }
}

/** A skipped `when` rule that compile found lossless carries its value over as it is. */
function carryUnchanged(op: Op, input: JsonObject, output: JsonObject, take: Take): OpProblem | undefined {
  if (!op.when?.carry || op.kind === 'write') return undefined;
  const value = readPath(input, op.from);
  return value === undefined ? undefined : write(output, op.to, take(value), op);
}

function write(output: JsonObject, to: Segments, value: unknown, op: Op): OpProblem | undefined {
  const blocked = writePath(output, to, value);
  if (!blocked) return undefined;
  return {
    path: joinPath(to),
    message: `rule ${op.ruleIndex} (${op.strategy}) cannot write here: ${joinPath(blocked)} holds a value that is not an object`,
  };
}

/**
 * Deep copy minus the omitted paths (see OmitBranch for when an emptied object stays). `for…in`
 * rather than `Object.keys`: no array per object on the hot path, and a JSON object's prototype
 * has no enumerable keys of its own.
 */
function copyExcept(source: JsonObject, omit: OmitTree, take: Take): JsonObject {
  const out: JsonObject = {};
  for (const key in source) {
    const skip = omit.get(key);
    if (skip === null) continue;
    const value = source[key];
    if (skip === undefined || !isJsonObject(value)) {
      setOwn(out, key, take(value));
      continue;
    }
    const copy = copyExcept(value, skip.children, take);
    if (skip.keepIfEmptied || hasKeys(copy) || !hasKeys(value)) setOwn(out, key, copy);
  }
  return out;
}

function hasKeys(object: JsonObject): boolean {
  for (const _ in object) return true;
  return false;
}

function failure(object: JsonObject, message: string, path?: string, ruleIndex?: number): ConvertResult {
  const error: ConversionError = { object: describeObject(object), message };
  if (path !== undefined) error.path = path;
  if (ruleIndex !== undefined) error.ruleIndex = ruleIndex;
  return { ok: false, error };
}

/** `kind namespace/name`, as far as the object tells. */
export function describeObject(object: JsonObject): string {
  const kind = typeof object.kind === 'string' ? object.kind : 'object';
  const metadata = isJsonObject(object.metadata) ? object.metadata : {};
  const name = typeof metadata.name === 'string' ? metadata.name : '(unnamed)';
  return typeof metadata.namespace === 'string' ? `${kind} ${metadata.namespace}/${name}` : `${kind} ${name}`;
}

/** One line for a ConversionReview failure message. */
export function formatConversionError(e: ConversionError, from: string, to: string): string {
  return `converting ${e.object} from ${from} to ${to}: ${e.path ? `${e.path}: ` : ''}${e.message}`;
}
