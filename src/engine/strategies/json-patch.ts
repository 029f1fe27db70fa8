// JSONPatch: the escape hatch, an RFC 6902 patch per direction. As in the reference, the patch
// is applied to (a copy of) the whole input, and then only the paths its operations name as
// `path` are carried into the output: written where the patched object has them, removed where
// it does not. The patch semantics are evanphx/json-patch v5's, which the reference uses, quirks
// included: negative array indexes count from the end, `test` against null also passes for an
// absent key, a pointer's first segment is ignored whatever it is ("a/b" is "/b"), an array
// compared by `test` never equals when it holds null (the library would panic), and `add` does
// not create missing parents.
//
// The engine cannot tell what a patch does, so both directions are lossy unless the author
// vouches otherwise (losslessOverride). Every `path` and `from` of either direction is claimed on
// both sides, as the reference does, so the fields a patch moves are not reported uncovered.
import type { JsonPatchOperation, RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { deepCopy, isJsonObject, type JsonObject, setOwn } from '../json.ts';
import { joinPath, type Segments } from '../paths.ts';
import type { Direction, Op, OpRun } from '../plan.ts';
import { type Located, locate, type TransformResult } from './common.ts';

type Container = JsonObject | unknown[];

/** A pointer as the library resolves it: the container's keys from the root, then the key in it. */
type Pointer = { kind: 'root' } | { kind: 'unresolvable' } | { kind: 'path'; parents: string[]; key: string };

interface Step {
  op: JsonPatchOperation['op'];
  path: Pointer;
  from: Pointer;
  /** The value; undefined when the config gives none or null (the reference drops a null value). */
  value: unknown;
  text: string;
}

export function jsonPatch(rule: RuleOf<'JSONPatch'>, at: Located): TransformResult {
  const { hubToSpoke = [], spokeToHub = [], losslessOverride } = rule.jsonPatch;
  const diagnostics = [
    ...undecodable(hubToSpoke, 'hubToSpoke', at),
    ...undecodable(spokeToHub, 'spokeToHub', at),
  ];
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const claimed = claimedPaths([...hubToSpoke, ...spokeToHub]);
  const ops: Partial<Record<Direction, Op>> = {};
  const losses: Partial<Record<Direction, string>> = {};
  for (const [direction, operations] of [
    ['hubToSpoke', hubToSpoke],
    ['spokeToHub', spokeToHub],
  ] as const) {
    const touched = touchedPaths(operations);
    if (operations.length > 0) {
      ops[direction] = {
        ruleIndex: at.ruleIndex,
        strategy: rule.strategy,
        kind: 'run',
        from: touched[0] ?? [],
        to: touched[0] ?? [],
        run: patchRun(operations.map(stepOf), touched),
      };
    }
    if (!losslessOverride) {
      losses[direction] =
        'JSONPatch: the engine cannot tell what a patch does; set losslessOverride once round trips are tested.';
    }
  }
  return {
    ok: true,
    transform: {
      path: claimed[0] ? joinPath(claimed[0]) : '',
      claims: { hub: claimed, spoke: claimed },
      ops,
      losses,
      onSkip: 'lose',
    },
  };
}

/** What the library refuses to decode: add/replace without a value, move/copy without a from. */
function undecodable(
  operations: readonly JsonPatchOperation[],
  direction: Direction,
  at: Located,
): Diagnostic[] {
  return operations.flatMap((operation, i) => {
    const where = `jsonPatch.${direction}[${i}]`;
    const needsValue = operation.op === 'add' || operation.op === 'replace';
    const needsFrom = operation.op === 'move' || operation.op === 'copy';
    if (needsValue && (operation.value === undefined || operation.value === null)) {
      return [
        error(
          'InvalidRule',
          locate(at, operation.path),
          `${where}: ${operation.op} needs a value, and null counts as none (the reference drops it).`,
          'Give the operation a non-null value, or use remove.',
        ),
      ];
    }
    if (needsFrom && !operation.from) {
      return [
        error(
          'InvalidRule',
          locate(at, operation.path),
          `${where}: ${operation.op} needs a non-empty from.`,
          'Set from to the JSON Pointer of the field to move or copy.',
        ),
      ];
    }
    return [];
  });
}

// --- paths as the reference claims and copies them (FieldPathFromJSONPointer)

/** A JSON Pointer as the reference reads it: one leading "/" dropped, then split on "/". */
function fieldPath(pointer: string): Segments {
  const trimmed = pointer.startsWith('/') ? pointer.slice(1) : pointer;
  return trimmed === '' ? [] : trimmed.split('/').map(unescapePointerToken);
}

function unescapePointerToken(token: string): string {
  return token.replace(/~[01]/g, (sequence) => (sequence === '~1' ? '/' : '~'));
}

/** Every `path` and `from` of both directions, once each; the whole object ("" or "/") is not claimed. */
function claimedPaths(operations: readonly JsonPatchOperation[]): Segments[] {
  const seen = new Set<string>();
  const out: Segments[] = [];
  for (const pointer of operations.flatMap((o) => [o.path, o.from ?? ''])) {
    if (pointer === '' || seen.has(pointer)) continue;
    seen.add(pointer);
    const segments = fieldPath(pointer);
    if (segments.length > 0) out.push(segments);
  }
  return out;
}

/** The `path` of each operation, once each: what the output takes from the patched object. */
function touchedPaths(operations: readonly JsonPatchOperation[]): Segments[] {
  return [...new Set(operations.map((o) => o.path))].map(fieldPath);
}

// --- the op

function patchRun(steps: readonly Step[], touched: readonly Segments[]): OpRun {
  // The reference writes every touched path into its output, and a path naming the whole object
  // cannot be written: such a patch fails every conversion, whatever it does.
  if (touched.some((segments) => segments.length === 0)) {
    return () => ({
      message: 'jsonPatch: writing the whole object: a patch path must name a field',
      path: '',
    });
  }
  return (input, output) => {
    const patched = applyPatch(input, steps);
    if (typeof patched === 'string') return { message: `jsonPatch: apply: ${patched}`, path: '' };
    for (const segments of touched) {
      const value = readField(patched, segments);
      if (value === undefined) {
        removeField(output, segments);
        continue;
      }
      const failed = writeField(output, segments, deepCopy(value));
      if (failed) return { message: `jsonPatch: ${failed.message}`, path: failed.path ?? joinPath(segments) };
    }
    return undefined;
  };
}

function removeField(output: JsonObject, segments: Segments): void {
  let parent: unknown = output;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i] as string;
    if (!isJsonObject(parent) || !Object.hasOwn(parent, key)) return;
    parent = parent[key];
  }
  const last = segments[segments.length - 1] as string;
  if (isJsonObject(parent) && Object.hasOwn(parent, last)) delete parent[last];
}

function stepOf(operation: JsonPatchOperation): Step {
  return {
    op: operation.op,
    path: libraryPointer(operation.path),
    from: libraryPointer(operation.from ?? ''),
    value: operation.value === null ? undefined : operation.value,
    text: JSON.stringify(operation),
  };
}

/** evanphx's findObject: split on "/", the first part ignored, the last the key. */
function libraryPointer(pointer: string): Pointer {
  const parts = pointer.split('/');
  if (parts.length < 2) return pointer === '' ? { kind: 'root' } : { kind: 'unresolvable' };
  return {
    kind: 'path',
    parents: parts.slice(1, -1).map(unescapePointerToken),
    key: unescapePointerToken(parts[parts.length - 1] as string),
  };
}

// --- evanphx/json-patch v5 over the input, copy on write
//
// The input is never changed: a container is copied (and the copy marked owned) the first time
// a pointer walks through it, so the patched object shares every untouched subtree with the
// input. The document's root also answers the key "" with a snapshot of the original input (the
// library's raw copy of it), which later operations may change on their own.

interface Patching {
  input: JsonObject;
  root: JsonObject;
  snapshot: JsonObject | undefined;
  owned: Set<object>;
}

type Found =
  | { ok: true; value: unknown; slot: string | number | undefined }
  | { ok: false; missing: boolean; message: string };

/** The patched object, or why the library refuses the patch. */
function applyPatch(input: JsonObject, steps: readonly Step[]): JsonObject | string {
  const root = shallowCopy(input);
  const state: Patching = { input, root, snapshot: undefined, owned: new Set([root]) };
  for (const step of steps) {
    const problem = applyStep(state, step);
    if (problem) return `${step.text}: ${problem}`;
  }
  return state.root;
}

function applyStep(state: Patching, step: Step): string | undefined {
  switch (step.op) {
    case 'add':
      return add(state, step.path, step.value);
    case 'remove':
      return remove(state, step.path);
    case 'replace':
      return replace(state, step.path, step.value);
    case 'move':
      return move(state, step.from, step.path);
    case 'copy':
      return copy(state, step.from, step.path);
    case 'test':
      return test(state, step.path, step.value);
  }
}

function add(state: Patching, path: Pointer, value: unknown): string | undefined {
  const target = containerOf(state, path);
  if (!target) return 'add operation does not apply: doc is missing path';
  return addTo(target.container, target.key, value);
}

function remove(state: Patching, path: Pointer): string | undefined {
  const target = containerOf(state, path);
  if (!target) return 'remove operation does not apply: doc is missing path';
  return removeFrom(target.container, target.key);
}

function replace(state: Patching, path: Pointer, value: unknown): string | undefined {
  const target = containerOf(state, path);
  if (!target) return 'replace operation does not apply: doc is missing path';
  const found = get(state, target.container, target.key);
  if (!found.ok) return `replace operation does not apply: ${found.message}`;
  return setIn(target.container, target.key, value);
}

function move(state: Patching, from: Pointer, path: Pointer): string | undefined {
  const source = containerOf(state, from);
  if (!source) return 'move operation does not apply: doc is missing from path';
  const found = get(state, source.container, source.key);
  if (!found.ok) return `error in move: ${found.message}`;
  const removed = removeFrom(source.container, source.key);
  if (removed) return `error in move: ${removed}`;
  const target = containerOf(state, path);
  if (!target) return 'move operation does not apply: doc is missing destination path';
  return addTo(target.container, target.key, found.value);
}

function copy(state: Patching, from: Pointer, path: Pointer): string | undefined {
  const source = containerOf(state, from);
  if (!source) return 'copy operation does not apply: doc is missing from path';
  const found = get(state, source.container, source.key);
  if (!found.ok) return `error in copy: ${found.message}`;
  const target = containerOf(state, path);
  if (!target) return 'copy operation does not apply: doc is missing destination path';
  return addTo(target.container, target.key, deepCopy(found.value));
}

/** Passes when the values are equal; a null expected value also matches an absent object key. */
function test(state: Patching, path: Pointer, expected: unknown): string | undefined {
  const target = containerOf(state, path);
  if (!target) return 'test operation does not apply: is missing path';
  const found = get(state, target.container, target.key);
  if (!found.ok && !found.missing) return `error in test: ${found.message}`;
  const actual = found.ok ? found.value : null;
  const passes =
    actual === null ? expected === undefined : expected !== undefined && libraryEqual(actual, expected);
  return passes ? undefined : 'testing value failed';
}

/**
 * The container a pointer's key is in, owned so it can be changed, or undefined where the
 * library's findObject finds none (a parent missing, null or a scalar).
 */
function containerOf(state: Patching, pointer: Pointer): { container: Container; key: string } | undefined {
  if (pointer.kind === 'unresolvable') return undefined;
  if (pointer.kind === 'root') return { container: state.root, key: '' };
  let container: Container = state.root;
  for (const part of pointer.parents) {
    const found = get(state, container, part);
    if (!found.ok || (!isJsonObject(found.value) && !Array.isArray(found.value))) return undefined;
    container = owned(state, container, found.slot, found.value);
  }
  return { container, key: pointer.key };
}

/** `child`, found at `slot` of the owned `parent`, as an owned container in its place. */
function owned(
  state: Patching,
  parent: Container,
  slot: string | number | undefined,
  child: Container,
): Container {
  if (state.owned.has(child) || slot === undefined) return child;
  const copy: Container = Array.isArray(child) ? child.slice() : shallowCopy(child);
  state.owned.add(copy);
  if (typeof slot === 'number') (parent as unknown[])[slot] = copy;
  else setOwn(parent as JsonObject, slot, copy);
  return copy;
}

function shallowCopy(object: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(object)) setOwn(out, key, object[key]);
  return out;
}

/** The library's container get: "" is the root's snapshot or nothing, indexes may be negative. */
function get(state: Patching, container: Container, key: string): Found {
  if (Array.isArray(container)) {
    if (key === '') return { ok: true, value: null, slot: undefined };
    const index = arrayIndex(key);
    if (index === undefined) return { ok: false, missing: false, message: `invalid array index ${key}` };
    const at = index < 0 ? index + container.length : index;
    if (at < 0 || at >= container.length)
      return { ok: false, missing: false, message: `invalid index ${key}` };
    return { ok: true, value: container[at], slot: at };
  }
  if (key === '')
    return { ok: true, value: container === state.root ? snapshot(state) : null, slot: undefined };
  if (!Object.hasOwn(container, key)) return { ok: false, missing: true, message: `missing key ${key}` };
  return { ok: true, value: container[key], slot: key };
}

function snapshot(state: Patching): JsonObject {
  if (!state.snapshot) {
    state.snapshot = shallowCopy(state.input);
    state.owned.add(state.snapshot);
  }
  return state.snapshot;
}

function addTo(container: Container, key: string, value: unknown): string | undefined {
  if (!Array.isArray(container)) {
    setOwn(container, key, value);
    return undefined;
  }
  if (key === '-') {
    container.push(value);
    return undefined;
  }
  const index = arrayIndex(key);
  if (index === undefined) return `value was not a proper array index: '${key}'`;
  const size = container.length + 1;
  if (index >= size || index < -size) return `Unable to access invalid index: ${key}`;
  container.splice(index < 0 ? index + size : index, 0, value);
  return undefined;
}

function removeFrom(container: Container, key: string): string | undefined {
  if (!Array.isArray(container)) {
    if (!Object.hasOwn(container, key)) return `unable to remove nonexistent key: ${key}`;
    delete container[key];
    return undefined;
  }
  const index = arrayIndex(key);
  if (index === undefined) return `invalid array index ${key}`;
  if (index >= container.length || index < -container.length) return `Unable to access invalid index: ${key}`;
  container.splice(index < 0 ? index + container.length : index, 1);
  return undefined;
}

/** Replaces the value at a key `get` found. */
function setIn(container: Container, key: string, value: unknown): string | undefined {
  if (!Array.isArray(container)) {
    setOwn(container, key, value);
    return undefined;
  }
  const index = arrayIndex(key);
  if (index === undefined) return `invalid array index ${key}`;
  container[index < 0 ? index + container.length : index] = value;
  return undefined;
}

/** strconv.Atoi: an optional sign and decimal digits; undefined where it fails. */
function arrayIndex(key: string): number | undefined {
  if (!/^[+-]?[0-9]+$/.test(key)) return undefined;
  const index = Number(key);
  // Beyond int64 Atoi fails; any such index is out of range anyway, which fails the same way.
  return index === 0 ? 0 : index;
}

/**
 * The library's lazyNode.equal: same type and value, numbers by their JSON text (so -0 is not
 * 0), objects by their keys; an array holding null is never equal (the library would panic).
 */
function libraryEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) {
      if (a[i] === null || b[i] === null || !libraryEqual(a[i], b[i])) return false;
    }
    return true;
  }
  if (isJsonObject(a)) {
    if (!isJsonObject(b)) return false;
    const keys = Object.keys(a);
    if (keys.length !== Object.keys(b).length) return false;
    for (const key of keys) {
      if (!Object.hasOwn(b, key)) return false;
      const x = a[key];
      const y = b[key];
      if ((x === null) !== (y === null)) return false;
      if (x !== null && !libraryEqual(x, y)) return false;
    }
    return true;
  }
  if (typeof b === 'object' && b !== null) return false;
  return typeof a === 'number' && typeof b === 'number' ? Object.is(a, b) : a === b;
}
