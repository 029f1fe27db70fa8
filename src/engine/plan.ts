// The compiled form of a config: plain data, so a plan can be inspected, printed and compared
// (explain/replay), and so it retains little memory once the schemas it came from are gone.
// A plan exists only when compile found no error: there is no "partial" plan to misuse.
import type { EnumValue, Strategy } from '../api/rules.ts';
import type { JsonObject, Take } from './json.ts';
import type { Segments } from './paths.ts';

export type Direction = 'hubToSpoke' | 'spokeToHub';
export const DIRECTIONS: readonly Direction[] = ['hubToSpoke', 'spokeToHub'];

/** A rule's `when`, resolved: the rule applies only if the input's field equals the value. */
export interface OpCondition {
  segments: Segments;
  equals: unknown;
  /** When it does not hold: copy the input's value at `from` to `to` unchanged (else skip). */
  carry?: boolean;
}

interface OpBase {
  ruleIndex: number;
  strategy: Strategy;
  when?: OpCondition;
}

/** Copy the input's value at `from` to `to` in the output (absent stays absent). */
export interface MoveOp extends OpBase {
  kind: 'move';
  from: Segments;
  to: Segments;
}

/** Write a fixed value at `to`, whatever the input holds. */
export interface WriteOp extends OpBase {
  kind: 'write';
  to: Segments;
  value: unknown;
}

/** Translate the scalar at `from` through a table into `to` (keys match by type and value). */
export interface RemapOp extends OpBase {
  kind: 'remap';
  from: Segments;
  to: Segments;
  table: EnumTable;
  onUnmapped: 'Error' | 'Drop';
}

/**
 * A remap's pairs, flat: [from, to, from, to, …], one pair per value. Flat, not a Map: a table
 * has a few entries, a replica holds six per plan, and a Map's backing store is ~200 B even for
 * two entries (BENCHMARKS.md, "Plans without small Maps").
 */
export type EnumTable = readonly EnumValue[];

/** The pairs of `map` as an {@link EnumTable}. */
export function enumTable(map: ReadonlyMap<EnumValue, EnumValue>): EnumTable {
  // Allocated at its size: an array grown by pushes keeps room for a dozen more.
  const table = new Array<EnumValue>(map.size * 2);
  let i = 0;
  for (const [from, to] of map) {
    table[i++] = from;
    table[i++] = to;
  }
  return table;
}

/** What `value` maps to, compared by type and value as a Map's keys are (1 never matches "1"). */
export function remappedValue(table: EnumTable, value: unknown): EnumValue | undefined {
  for (let i = 0; i < table.length; i += 2) if (table[i] === value) return table[i + 1];
  return undefined;
}

/**
 * A strategy's own conversion code, for what a move, a write or a remap cannot say (a scalar
 * wrapped into an object, a list joined into a string, a CEL expression). `run` reads the
 * pristine input and writes into the output, as the generated ops do; it copies what it takes
 * from the input with `take` (see convert.ts) and returns why it cannot convert, if it cannot.
 * `from` and `to` are the paths it reads and writes first, for a `when` that carries the value
 * over unchanged where it does not hold.
 */
export interface RunOp extends OpBase {
  kind: 'run';
  from: Segments;
  to: Segments;
  run: OpRun;
}

export type OpRun = (input: JsonObject, output: JsonObject, take: Take) => OpFailure | undefined;

/** Why an op cannot convert this object; `path` defaults to the op's `from`. */
export interface OpFailure {
  message: string;
  path?: string;
}

export type Op = MoveOp | WriteOp | RemapOp | RunOp;

/**
 * Keys the pass-through copy must skip: every path a rule claims, on either side. Skipping the
 * destination paths too means a stray unknown field in the input can never masquerade as a
 * rule's output. Each level is flat, [key, branch, key, branch, …], where a `null` branch marks
 * a skipped key and a branch a key to copy selectively. Flat, not a Map or a list of pairs: a
 * level has one to a dozen keys and is read once, when the plan's step function is generated,
 * while a Map's backing store is ~200 B even for one key and a pair is an array of its own
 * (BENCHMARKS.md, "Plans without small Maps").
 */
export type OmitTree = readonly (string | OmitBranch | null)[];

/** One level of an omit tree as [key, branch] pairs, in order. */
export function omitEntries(tree: OmitTree): [string, OmitBranch | null][] {
  const entries: [string, OmitBranch | null][] = [];
  for (let i = 0; i < tree.length; i += 2)
    entries.push([tree[i] as string, tree[i + 1] as OmitBranch | null]);
  return entries;
}

export interface OmitBranch {
  children: OmitTree;
  /**
   * Whether to keep this object when skipping its claimed fields leaves it empty. Kept if the
   * destination declares it (spec stays `{}`); dropped otherwise, so a field moved into a new
   * parent (spec.a → spec.b.c) leaves no empty spec.b behind on the way back.
   */
  keepIfEmptied: boolean;
}

export interface SpokePlan {
  hubVersion: string;
  spokeVersion: string;
  omit: Readonly<Record<Direction, OmitTree>>;
  ops: Readonly<Record<Direction, readonly Op[]>>;
  /** Whether converting that way loses nothing (compile's diagnostics say what would be lost). */
  lossless: Readonly<Record<Direction, boolean>>;
}

/** Everything the webhook-server needs to convert one target between any two versions. */
export interface Router {
  hubVersion: string;
  spokes: ReadonlyMap<string, SpokePlan>;
  /** Served versions the config does not list and that differ from the hub: not converted. */
  unlisted: ReadonlySet<string>;
}
