// One conversion step (a spoke plan, one direction) as a JavaScript function, generated from the
// plan on its first use and kept beside it. The function does what the plan says, in this order:
// copy the input minus every path a rule claims (the omit tree), set apiVersion, then apply each
// rule's op, reading from the pristine input and writing into the copy. A ForEach converts each
// element of its array with a step of its own, generated the same way but for an element, which
// has no apiVersion.
//
// Why generated: walking the plan as data sends every key of every level of every target
// through the same few property stores and Map lookups, which V8 can only treat as megamorphic.
// Generated, each level of the omit tree is a function of its own whose claimed keys are `case`
// labels, and each op reads and writes its fixed path with stores of its own. That cuts the
// conversion's own cost per object to less than half (BENCHMARKS.md, "A conversion generated
// per plan").
//
// What goes into the source from a config or a schema is only property names, each written as a
// JSON string literal (JSON is a subset of JavaScript); the rest is the generator's own code, op
// indexes and path depths. Values, enum tables and messages stay data, reached through the op's
// index. A `__proto__` key is stored with `setOwn`, as everywhere in the engine (json.ts).
import { deepCopy, deepEqual, isJsonObject, type JsonObject, setOwn, type Take } from './json.ts';
import { joinPath } from './paths.ts';
import {
  type Direction,
  type OmitBranch,
  type OmitTree,
  type Op,
  type OpFailure,
  omitEntries,
  type RunOp,
  remappedValue,
  type SpokePlan,
} from './plan.ts';

export type { Take } from './json.ts';

export type StepResult =
  | { ok: true; object: JsonObject }
  | { ok: false; message: string; path?: string; ruleIndex?: number };

/** Converts `input` one step; `apiVersion` is the output's. Never mutates `input`. */
export type StepFunction = (input: JsonObject, apiVersion: string, take: Take) => StepResult;

const generated = new WeakMap<SpokePlan, Partial<Record<Direction, StepFunction>>>();

export function stepFunction(plan: SpokePlan, direction: Direction): StepFunction {
  let functions = generated.get(plan);
  if (functions === undefined) {
    functions = {};
    generated.set(plan, functions);
  }
  functions[direction] ??= generate(plan.omit[direction], plan.ops[direction], 'object') as StepFunction;
  return functions[direction];
}

/** Converts one element of an array (a ForEach's nested rules): a step without apiVersion. */
export type ElementStep = (input: JsonObject, take: Take) => StepResult;

/** The step of a ForEach's nested rules, for one direction; the caller keeps it. */
export function elementStep(omit: OmitTree, ops: readonly Op[]): ElementStep {
  return generate(omit, ops, 'element') as ElementStep;
}

function generate(omit: OmitTree, ops: readonly Op[], of: 'object' | 'element'): StepFunction | ElementStep {
  const levels = new Map<OmitTree, string>();
  const functions: string[] = [];
  const levelOf = (tree: OmitTree): string => {
    let name = levels.get(tree);
    if (name === undefined) {
      name = `copyLevel${levels.size}`;
      levels.set(tree, name);
      functions.push(copyLevel(name, tree, levelOf));
    }
    return name;
  };
  const step = `function step(${of === 'object' ? 'input, apiVersion, take' : 'input, take'}) {
  const output = ${levelOf(omit)}(input, take);
${of === 'object' ? '  output.apiVersion = apiVersion;\n' : ''}${ops.map(opCode).join('\n')}
  return { ok: true, object: output };
}`;
  const source = `'use strict';\n${functions.join('\n')}\n${step}\nreturn step;`;
  const factory = new Function(...Object.keys(HELPERS), 'ops', source);
  return factory(...Object.values(HELPERS), ops) as StepFunction;
}

const HELPERS = {
  isJsonObject,
  hasKeys,
  hasOwn: Object.hasOwn,
  setOwn,
  deepCopy,
  deepEqual,
  remappedValue,
  /** A write found a value that is not an object at depth `depth` of op `index`'s destination. */
  blocked(ops: readonly Op[], index: number, depth: number): StepResult {
    const op = ops[index] as Op;
    return {
      ok: false,
      message: `rule ${op.ruleIndex} (${op.strategy}) cannot write here: ${joinPath(op.to.slice(0, depth))} holds a value that is not an object`,
      path: joinPath(op.to),
      ruleIndex: op.ruleIndex,
    };
  },
  /** A strategy's own code (a `run` op) could not convert the object. */
  refused(ops: readonly Op[], index: number, failure: OpFailure): StepResult {
    const op = ops[index] as Op;
    return {
      ok: false,
      message: `rule ${op.ruleIndex} (${op.strategy}): ${failure.message}`,
      path: failure.path ?? joinPath((op as RunOp).from),
      ruleIndex: op.ruleIndex,
    };
  },
  unmapped(ops: readonly Op[], index: number, value: unknown): StepResult {
    const op = ops[index] as Extract<Op, { kind: 'remap' }>;
    return {
      ok: false,
      message: `value ${JSON.stringify(value)} has no mapping in rule ${op.ruleIndex} (${op.strategy})`,
      path: joinPath(op.from),
      ruleIndex: op.ruleIndex,
    };
  },
};

function hasKeys(object: JsonObject): boolean {
  for (const _ in object) return true;
  return false;
}

// The copy. Each level keeps every key it does not skip; a branch's object is copied one level
// down and kept if the tree says so, or if the copy still has keys, or if the input's object had
// none to begin with (see OmitBranch).

function copyLevel(name: string, tree: OmitTree, levelOf: (tree: OmitTree) => string): string {
  const skipped: string[] = [];
  const branches: string[] = [];
  const entries = omitEntries(tree);
  for (const [key, branch] of entries) {
    if (branch === null) skipped.push(`case ${literal(key)}:`);
    else branches.push(branchCase(key, branch, levelOf(branch.children)));
  }
  return `function ${name}(source, take) {
  const out = {};
  for (const key in source) {
    switch (key) {
      ${skipped.length > 0 ? `${skipped.join(' ')} continue;` : ''}
      ${branches.join('\n      ')}
      ${entries.some(([key]) => key === '__proto__') ? '' : 'case "__proto__": setOwn(out, key, take(source[key])); continue;'}
    }
    out[key] = take(source[key]);
  }
  return out;
}`;
}

function branchCase(key: string, branch: OmitBranch, level: string): string {
  const keepCopy = branch.keepIfEmptied
    ? store('out', key, 'copy')
    : `if (hasKeys(copy) || !hasKeys(value)) ${store('out', key, 'copy')}`;
  return `case ${literal(key)}: {
        const value = source[key];
        if (!isJsonObject(value)) ${store('out', key, 'take(value)')}
        else { const copy = ${level}(value, take); ${keepCopy} }
        continue;
      }`;
}

// The ops. Each is a block of its own; `ops[i]` is the op itself, for its values and messages.

function opCode(op: Op, index: number): string {
  const applied = opBody(op, index);
  if (op.when === undefined) return `  {\n${applied}\n  }`;
  const carried = op.when.carry && op.kind !== 'write' ? moveBody(op.from, op.to, index) : '';
  return `  {
${read(op.when.segments, 'condition')}
    if (deepEqual(condition, ops[${index}].when.equals)) {
${applied}
    } else {
${carried}
    }
  }`;
}

function opBody(op: Op, index: number): string {
  switch (op.kind) {
    case 'write':
      return write(op.to, `deepCopy(ops[${index}].value)`, index);
    case 'move':
      return moveBody(op.from, op.to, index);
    case 'run':
      return `    const failed = ops[${index}].run(input, output, take);
    if (failed !== undefined) return refused(ops, ${index}, failed);`;
    case 'remap':
      // Keys compare by type and value, so 1 never matches "1"; objects never match.
      return `${read(op.from, 'found')}
    if (found !== undefined) {
      const mapped = remappedValue(ops[${index}].table, found);
      if (mapped !== undefined) {
${write(op.to, 'mapped', index)}
      } else ${op.onUnmapped === 'Drop' ? '{}' : `return unmapped(ops, ${index}, found);`}
    }`;
  }
}

function moveBody(from: readonly string[], to: readonly string[], index: number): string {
  return `${read(from, 'found')}
    if (found !== undefined) {
${write(to, 'take(found)', index)}
    }`;
}

/**
 * `let <name>` = the input's value at the path, or undefined when any level is absent or not an
 * object. A JSON object inherits only what Object.prototype has: a key it has is read through
 * `hasOwn`, any other plainly (absent reads as undefined, and no JSON value is undefined).
 */
function read(segments: readonly string[], name: string): string {
  const steps = segments.map((segment) => {
    const key = literal(segment);
    const own = inherited(segment) ? ` && hasOwn(${name}, ${key})` : '';
    return `${name} = isJsonObject(${name})${own} ? ${name}[${key}] : undefined;`;
  });
  return `    let ${name} = input;\n    ${steps.join('\n    ')}`;
}

/** Writes into the output, creating missing (or null) parents; a parent that is another value fails the step. */
function write(segments: readonly string[], value: string, index: number): string {
  const lines = ['        let parent = output;'];
  segments.slice(0, -1).forEach((segment, i) => {
    const key = literal(segment);
    // A null parent is as good as an absent one (the apiserver prunes a null it was not told to keep).
    const absent = inherited(segment)
      ? `(!hasOwn(parent, ${key}) || parent[${key}] === null)`
      : `(parent[${key}] === undefined || parent[${key}] === null)`;
    lines.push(
      `        if (${absent}) ${store('parent', segment, '{}')}`,
      `        if (!isJsonObject(parent[${key}])) return blocked(ops, ${index}, ${i + 1});`,
      `        parent = parent[${key}];`,
    );
  });
  lines.push(`        ${store('parent', segments[segments.length - 1] as string, value)}`);
  return lines.join('\n');
}

function inherited(key: string): boolean {
  return key in Object.prototype;
}

/** A store of a known key: plain, but `setOwn` for `__proto__`, which plain assignment would turn into a prototype. */
function store(object: string, key: string, value: string): string {
  return key === '__proto__'
    ? `setOwn(${object}, "__proto__", ${value});`
    : `${object}[${literal(key)}] = ${value};`;
}

function literal(key: string): string {
  return JSON.stringify(key);
}
