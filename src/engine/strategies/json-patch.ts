// JSONPatch: the escape hatch, an RFC 6902 patch per direction. As in the reference, the patch
// is applied to (a copy of) the whole input, and then only the paths its operations name as
// `path` are carried into the output: written where the patched object has them, removed where
// it does not. The patch semantics are evanphx/json-patch v5's, which the reference uses, quirks
// included: negative array indexes count from the end, `test` against null also passes for an
// absent key, a pointer's first segment is ignored whatever it is ("a/b" is "/b"), an array
// compared by `test` never equals when it holds null (the library would panic), and `add` does
// not create missing parents.
//
// The reference claims each pointer as one dotted key, not as a subtree, and its conversion then
// runs its identity ops (declared leaves alike on both sides that no rule claims by that exact
// key) and its pass-through of undeclared fields after the patch, over whatever the patch wrote.
// So a patch inside a map or array, or on a branch's untouched leaves, or on an undeclared field
// the input has, comes out as the input had it. The op does the same afterwards (the "overlay"),
// and compile refuses what the reference's coverage refuses: a leaf under a claimed branch that
// the hub and spoke declare differently. Paths under kind and metadata are written but never
// claimed (the reference copies both whatever a rule claims); a patch whose `path` names the whole
// object fails every conversion, as the reference's write of it does.
//
// The engine cannot tell what a patch does, so both directions are lossy unless the author
// vouches otherwise (losslessOverride). Every `path` and `from` of either direction is claimed on
// both sides, as the reference does, so the fields a patch moves are not reported uncovered.
import type { JsonPatchOperation, RuleOf } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { readField, writeField } from '../field-access.ts';
import { deepCopy, isJsonObject, type JsonObject, setOwn, type Take } from '../json.ts';
import { isPrefixOf, joinPath, type Segments } from '../paths.ts';
import type { Direction, Op, OpFailure, OpRun } from '../plan.ts';
import type { TargetSchema } from '../schema.ts';
import { type Located, locate, type SideKey, type TransformResult } from './common.ts';

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
  const owned = (segments: Segments) => ownedByEngine(segments, at);
  const claimed = claimedPaths([...hubToSpoke, ...spokeToHub]).filter((segments) => !owned(segments));
  const reference = referenceView(at);
  diagnostics.push(...claimed.flatMap((segments) => unclaimedLeavesUnder(segments, claimed, reference, at)));
  if (diagnostics.length > 0) return { ok: false, diagnostics };
  const overlay = overlayOf(claimed, reference);
  const ops: Partial<Record<Direction, Op>> = {};
  const losses: Partial<Record<Direction, string>> = {};
  for (const [direction, operations] of [
    ['hubToSpoke', hubToSpoke],
    ['spokeToHub', spokeToHub],
  ] as const) {
    const touched = touchedPaths(operations, owned);
    // Without operations the patch changes nothing, but what the overlay puts back still counts.
    if (operations.length > 0 || !isEmpty(overlay)) {
      ops[direction] = {
        ruleIndex: at.ruleIndex,
        strategy: rule.strategy,
        kind: 'run',
        from: touched[0]?.segments ?? claimed[0] ?? [],
        to: touched[0]?.segments ?? claimed[0] ?? [],
        run: patchRun(operations.map(stepOf), touched, overlay),
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

/** A path the output takes from the patched object; `shared` when the output may share it with the input. */
interface Touched {
  segments: Segments;
  shared: boolean;
}

/**
 * The `path` of each operation, once each: what the output takes from the patched object. Under
 * `kind` and `metadata` (which the reference copies whatever a rule claims) the output may share
 * objects with the input, so those are written copying each level; `apiVersion` is the step's.
 */
function touchedPaths(
  operations: readonly JsonPatchOperation[],
  owned: (segments: Segments) => boolean,
): Touched[] {
  return [...new Set(operations.map((o) => o.path))]
    .map(fieldPath)
    .filter((segments) => !(owned(segments) && segments[0] === 'apiVersion'))
    .map((segments) => ({ segments, shared: owned(segments) }));
}

/** apiVersion, kind and metadata of a whole object (not of an array element in a ForEach). */
function ownedByEngine(segments: Segments, at: Located): boolean {
  return at.ctx.hub.of === 'object' && ENGINE_OWNED.has(segments[0] as string);
}
const ENGINE_OWNED: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'metadata']);

// --- the op

function patchRun(steps: readonly Step[], touched: readonly Touched[], overlay: Overlay): OpRun {
  // The reference writes every touched path into its output, and a path naming the whole object
  // cannot be written: such a patch fails every conversion, whatever it does.
  if (touched.some(({ segments }) => segments.length === 0)) {
    return () => ({
      message: 'jsonPatch: writing the whole object: a patch path must name a field',
      path: '',
    });
  }
  if (steps.length === 0) return (input, output, take) => applyOverlay(overlay, input, output, take);
  return (input, output, take) => {
    const patched = applyPatch(input, steps);
    if (typeof patched === 'string') return { message: `jsonPatch: apply: ${patched}`, path: '' };
    for (const { segments, shared } of touched) {
      const value = readField(patched, segments);
      if (value === undefined) {
        removeField(output, segments, shared);
        continue;
      }
      const failed = shared
        ? writeFieldCopying(output, segments, deepCopy(value))
        : writeField(output, segments, deepCopy(value));
      if (failed) return { message: `jsonPatch: ${failed.message}`, path: failed.path ?? joinPath(segments) };
    }
    return applyOverlay(overlay, input, output, take);
  };
}

/** Removes the value at `segments`, if any; `shared`: copying each level above it first. */
function removeField(output: JsonObject, segments: Segments, shared: boolean): void {
  let parent: unknown = output;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i] as string;
    if (!isJsonObject(parent) || !Object.hasOwn(parent, key)) return;
    parent = parent[key];
  }
  const last = segments[segments.length - 1] as string;
  if (!isJsonObject(parent) || !Object.hasOwn(parent, last)) return;
  if (!shared) {
    delete parent[last];
    return;
  }
  const copy = ownedLevels(output, segments);
  delete copy[last];
}

/** writeField for a path under objects the output may share with the input: each level is copied. */
function writeFieldCopying(output: JsonObject, segments: Segments, value: unknown): OpFailure | undefined {
  let parent: JsonObject = output;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i] as string;
    const next = Object.hasOwn(parent, key) ? parent[key] : undefined;
    // Absent (or null metadata, the reference's empty starting metadata): created from here on.
    if (next === undefined || (next === null && i === 0)) break;
    if (!isJsonObject(next)) {
      return {
        message: `cannot write ${joinPath(segments)}: ${joinPath(segments.slice(0, i + 1))} holds a value that is not an object`,
        path: joinPath(segments),
      };
    }
    parent = next;
  }
  setOwn(ownedLevels(output, segments), segments[segments.length - 1] as string, value);
  return undefined;
}

/** The object holding the last segment, every level above it replaced by a copy (created if absent). */
function ownedLevels(output: JsonObject, segments: Segments): JsonObject {
  let parent = output;
  for (let i = 0; i < segments.length - 1; i++) {
    const key = segments[i] as string;
    const next = Object.hasOwn(parent, key) ? parent[key] : undefined;
    const copy = isJsonObject(next) ? shallowCopy(next) : {};
    setOwn(parent, key, copy);
    parent = copy;
  }
  return parent;
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

// --- what the reference's later ops put back over the patch

/**
 * A path the output takes from the input after the patch, where the input has it. `patchedFrom`
 * is the depth from which its parents in the output are the patch's (under a claimed path): a
 * null there fails, as the reference's write into it does; a null above is the input's, which
 * the reference's output never had.
 */
interface Put {
  segments: Segments;
  patchedFrom: number;
}

/** Paths the output takes from the input after the patch, where the input has them. */
interface Overlay {
  /** Declared leaves the reference copies with an identity op, then undeclared fields it passes through. */
  puts: readonly Put[];
  /** Claimed declared objects: whatever the input has under them that no schema declares. */
  openBranches: readonly { segments: Segments; known: Known; patchedFrom: number }[];
}

function isEmpty(overlay: Overlay): boolean {
  return overlay.puts.length + overlay.openBranches.length === 0;
}

function applyOverlay(
  overlay: Overlay,
  input: JsonObject,
  output: JsonObject,
  take: Take,
): OpFailure | undefined {
  for (const { segments, patchedFrom } of overlay.puts) {
    const value = readField(input, segments);
    if (value === undefined) continue;
    const failed = putField(output, segments, take(value), patchedFrom);
    if (failed) return failed;
  }
  for (const { segments, known, patchedFrom } of overlay.openBranches) {
    const failed = passUndeclared(known, readField(input, segments), segments, patchedFrom, output, take);
    if (failed) return failed;
  }
  return undefined;
}

/** The reference's collectUnknown under one claimed declared object: every key no schema declares. */
function passUndeclared(
  known: Known,
  value: unknown,
  at: Segments,
  patchedFrom: number,
  output: JsonObject,
  take: Take,
): OpFailure | undefined {
  if (!isJsonObject(value) || known === TERMINAL) return undefined;
  for (const key of Object.keys(value)) {
    const child = known.get(key);
    const segments = [...at, key];
    const failed =
      child === undefined
        ? putField(output, segments, take(value[key]), patchedFrom)
        : passUndeclared(child, value[key], segments, patchedFrom, output, take);
    if (failed) return failed;
  }
  return undefined;
}

function putField(
  output: JsonObject,
  segments: Segments,
  value: unknown,
  patchedFrom: number,
): OpFailure | undefined {
  let parent: unknown = output;
  for (let i = 0; i < segments.length - 1 && isJsonObject(parent); i++) {
    const key = segments[i] as string;
    parent = Object.hasOwn(parent, key) ? parent[key] : undefined;
    if (parent === null && i >= patchedFrom - 1) {
      return {
        message: `jsonPatch: cannot write ${joinPath(segments)}: the patch left ${joinPath(segments.slice(0, i + 1))} null`,
      };
    }
  }
  return writeField(output, segments, value);
}

/** The two schemas' top-level fields, as the reference's flattenSchema and knownTree see them. */
interface ReferenceView {
  hub: Readonly<Record<string, TargetSchema>>;
  spoke: Readonly<Record<string, TargetSchema>>;
}

function referenceView(at: Located): ReferenceView {
  return { hub: at.ctx.hub.fields, spoke: at.ctx.spoke.fields };
}

function overlayOf(claimed: readonly Segments[], view: ReferenceView): Overlay {
  const exact = new Set(claimed.map(joinPath));
  const leaves = new Map<string, Segments>();
  const undeclared = new Map<string, Segments>();
  const openBranches: { segments: Segments; known: Known; patchedFrom: number }[] = [];
  for (const segments of claimed) {
    const above = leafAbove(view.hub, segments);
    if (above && copiedAsIs(above, exact, view)) leaves.set(joinPath(above), above);
    for (const leaf of leavesUnder(view.hub, segments)) {
      if (copiedAsIs(leaf.segments, exact, view)) leaves.set(joinPath(leaf.segments), leaf.segments);
    }
    const passed = passThroughAt(view, segments);
    if (passed && 'undeclared' in passed) undeclared.set(joinPath(passed.undeclared), passed.undeclared);
    else if (passed) {
      const depth = Math.min(segments.length, patchedFrom(segments, claimed));
      openBranches.push({ segments, known: passed.known, patchedFrom: depth });
    }
  }
  const put = (segments: Segments): Put => ({ segments, patchedFrom: patchedFrom(segments, claimed) });
  return { puts: [...leaves.values(), ...undeclared.values()].map(put), openBranches };
}

/** The depth of the shortest claimed path strictly above `segments` (Infinity if none). */
function patchedFrom(segments: Segments, claimed: readonly Segments[]): number {
  let depth = Number.POSITIVE_INFINITY;
  for (const c of claimed)
    if (c.length < segments.length && isPrefixOf(c, segments)) depth = Math.min(depth, c.length);
  return depth;
}

/** A hub leaf the reference copies with an identity op: unclaimed, and the same leaf on the spoke. */
function copiedAsIs(segments: Segments, exact: ReadonlySet<string>, view: ReferenceView): boolean {
  if (exact.has(joinPath(segments))) return false;
  const hub = leafAt(view.hub, segments);
  const spoke = leafAt(view.spoke, segments);
  return hub !== undefined && spoke !== undefined && hub === spoke;
}

/** The reference's coverage: a leaf under a claimed object must be claimed, or alike on both sides. */
function unclaimedLeavesUnder(
  segments: Segments,
  claimed: readonly Segments[],
  view: ReferenceView,
  at: Located,
): Diagnostic[] {
  const exact = new Set(claimed.map(joinPath));
  const out: Diagnostic[] = [];
  for (const side of ['hub', 'spoke'] as const) {
    for (const leaf of leavesUnder(view[side], segments)) {
      const path = joinPath(leaf.segments);
      if (exact.has(path) || leafAt(view[otherOf(side)], leaf.segments) === leaf.shape) continue;
      out.push(
        error(
          'UnclaimedField',
          locate(at, path),
          `The patch claims ${joinPath(segments)} as one field, as the reference does, so ${path} inside it must pass through as it is, but the ${side} declares it as the ${otherOf(side)} does not.`,
          `Name ${path} in the patch itself, or declare it alike on both sides.`,
        ),
      );
    }
  }
  return out;
}

function otherOf(side: SideKey): SideKey {
  return side === 'hub' ? 'spoke' : 'hub';
}

// The reference's schema walks (schema.go's classify and flattenSchema, passthrough.go's
// knownTree), on the keywords that decide them. A leaf's shape is its kind, whether it is opaque
// and its combinator: two leaves are alike when the three match.

type Flattened = { leaf: string } | { branch: Readonly<Record<string, TargetSchema>> } | { none: true };

function flattened(schema: TargetSchema): Flattened {
  const combinator = ['oneOf', 'anyOf', 'allOf'].find(
    (c) => ((schema as Record<string, unknown[]>)[c]?.length ?? 0) > 0,
  );
  const { kind, opaque } = classified(schema);
  if (combinator) return { leaf: `${kind}/opaque/${combinator}` };
  if (opaque) return { leaf: `${kind}/opaque` };
  if (kind === 'object') return hasProperties(schema) ? { branch: schema.properties ?? {} } : { none: true };
  return { leaf: kind };
}

function classified(schema: TargetSchema): { kind: string; opaque: boolean } {
  if (schema['x-kubernetes-preserve-unknown-fields'] === true) return { kind: 'object', opaque: true };
  switch (schema.type) {
    case 'object':
      return { kind: 'object', opaque: !hasProperties(schema) && schema.additionalProperties !== undefined };
    case 'array':
      return { kind: 'array', opaque: schema.items === undefined };
    case 'string':
    case 'integer':
    case 'number':
    case 'boolean':
      return { kind: schema.type, opaque: false };
    default:
      return { kind: 'unknown', opaque: true };
  }
}

function hasProperties(schema: TargetSchema): boolean {
  return schema.properties !== undefined && Object.keys(schema.properties).length > 0;
}

function child(fields: Readonly<Record<string, TargetSchema>>, key: string): TargetSchema | undefined {
  return Object.hasOwn(fields, key) ? fields[key] : undefined;
}

/** The shape of the leaf flattenSchema finds exactly at `segments`, if any. */
function leafAt(fields: Readonly<Record<string, TargetSchema>>, segments: Segments): string | undefined {
  let current = fields;
  for (let i = 0; i < segments.length; i++) {
    const schema = child(current, segments[i] as string);
    if (!schema) return undefined;
    const node = flattened(schema);
    if ('leaf' in node) return i === segments.length - 1 ? node.leaf : undefined;
    if ('none' in node) return undefined;
    current = node.branch;
  }
  return undefined;
}

/** The leaf flattenSchema finds strictly above `segments` (the claim is inside it), if any. */
function leafAbove(fields: Readonly<Record<string, TargetSchema>>, segments: Segments): Segments | undefined {
  let current = fields;
  for (let i = 0; i < segments.length - 1; i++) {
    const schema = child(current, segments[i] as string);
    if (!schema) return undefined;
    const node = flattened(schema);
    if ('leaf' in node) return segments.slice(0, i + 1);
    if ('none' in node) return undefined;
    current = node.branch;
  }
  return undefined;
}

/** The leaves flattenSchema finds strictly under `segments`, when that is a declared object. */
function leavesUnder(
  fields: Readonly<Record<string, TargetSchema>>,
  segments: Segments,
): { segments: Segments; shape: string }[] {
  let current = fields;
  for (const key of segments) {
    const schema = child(current, key);
    if (!schema) return [];
    const node = flattened(schema);
    if (!('branch' in node)) return [];
    current = node.branch;
  }
  const out: { segments: Segments; shape: string }[] = [];
  const visit = (branch: Readonly<Record<string, TargetSchema>>, parent: Segments) => {
    for (const key of Object.keys(branch)) {
      const node = flattened(branch[key] as TargetSchema);
      if ('leaf' in node) out.push({ segments: [...parent, key], shape: node.leaf });
      else if ('branch' in node) visit(node.branch, [...parent, key]);
    }
  };
  visit(current, segments);
  return out;
}

/** Declared children in either schema (knownTree merged), or TERMINAL where either side stops. */
type Known = ReadonlyMap<string, Known> | typeof TERMINAL;
const TERMINAL = Symbol('terminal');

function knownChildren(schema: TargetSchema): Readonly<Record<string, TargetSchema>> | undefined {
  const { kind, opaque } = classified(schema);
  return opaque || kind !== 'object' || !hasProperties(schema) ? undefined : schema.properties;
}

function mergedKnown(
  hub: Readonly<Record<string, TargetSchema>> | undefined,
  spoke: Readonly<Record<string, TargetSchema>> | undefined,
): Known {
  const out = new Map<string, Known>();
  for (const key of new Set([...Object.keys(hub ?? {}), ...Object.keys(spoke ?? {})])) {
    out.set(key, knownOf(hub && child(hub, key), spoke && child(spoke, key)));
  }
  return out;
}

function knownOf(hub: TargetSchema | undefined, spoke: TargetSchema | undefined): Known {
  const hubChildren = hub && knownChildren(hub);
  const spokeChildren = spoke && knownChildren(spoke);
  if ((hub && !hubChildren) || (spoke && !spokeChildren)) return TERMINAL;
  return mergedKnown(hubChildren, spokeChildren);
}

/**
 * What the reference's pass-through puts back over a claimed path: the first undeclared field on
 * the way to it (not at the top level, which it never passes through), or, for a declared object,
 * whatever is undeclared inside it.
 */
function passThroughAt(
  view: ReferenceView,
  segments: Segments,
): { undeclared: Segments } | { known: Known } | undefined {
  let known: Known = mergedKnown(view.hub, view.spoke);
  for (let i = 0; i < segments.length; i++) {
    if (known === TERMINAL) return undefined;
    const next = known.get(segments[i] as string);
    if (next === undefined) return i === 0 ? undefined : { undeclared: segments.slice(0, i + 1) };
    known = next;
  }
  return known === TERMINAL ? undefined : { known };
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
