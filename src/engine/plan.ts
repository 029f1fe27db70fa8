// The compiled form of a config: plain data, so a plan can be inspected, printed and compared
// (explain/replay), and so it retains little memory once the schemas it came from are gone.
// A plan exists only when compile found no error: there is no "partial" plan to misuse.
import type { EnumValue, Strategy } from '../api/rules.ts';
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
  table: ReadonlyMap<EnumValue, EnumValue>;
  onUnmapped: 'Error' | 'Drop';
}

export type Op = MoveOp | WriteOp | RemapOp;

/**
 * Keys the pass-through copy must skip: every path a rule claims, on either side. Skipping the
 * destination paths too means a stray unknown field in the input can never masquerade as a
 * rule's output. `null` marks a skipped key, a branch a key to copy selectively.
 */
export type OmitTree = ReadonlyMap<string, OmitBranch | null>;

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
