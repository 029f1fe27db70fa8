// Convert one object between two versions of a target. Hub and spoke: a spoke converts to
// the hub and the hub to a spoke; spoke to spoke goes through the hub, so N versions need N-1
// plans, not N².
//
// The output is built fresh: a copy of the input that skips every path a rule claims, then each
// rule writes its destination from the pristine input (step-function.ts does both, as a function
// generated for the plan). Rules therefore never see each other's output, and their order never
// matters. A value a rule cannot convert fails the conversion with the object and the path;
// nothing is dropped silently.
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
import { deepCopy, isJsonObject, type JsonObject } from './json.ts';
import type { Direction, Router, SpokePlan } from './plan.ts';
import { stepFunction, type Take } from './step-function.ts';

export interface ConversionError {
  /** `kind namespace/name`, as far as the input tells. */
  object: string;
  message: string;
  path?: string;
  ruleIndex?: number;
}

export type ConvertResult = { ok: true; object: unknown } | { ok: false; error: ConversionError };

type Step = { plan: SpokePlan; direction: Direction; to: string };

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
    const converted = stepFunction(step.plan, step.direction)(current, `${group}/${step.to}`, take);
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
