// The decisions `switchyard replay` can take again: for each concern that records what it
// decides (stream DECISIONS), the kinds its view reads and the very function its handler decides
// with, applied to a view rebuilt at the recorded sequence. No I/O.
import type { ObjectView } from '../bus/view.ts';
import { configAssignmentOnView } from '../handlers/assign.ts';
import { ASSIGN_CONCERN, ASSIGN_VIEW_KINDS } from '../handlers/assign-world.ts';
import { parseWorkKey } from '../handlers/work-keys.ts';

export interface Decider {
  /** What the handler's view holds: the replayed view holds the same. */
  viewKinds: readonly string[];
  /** The decision about `key` on `view` at `decidedAt`; undefined when the handler had nothing to decide. */
  decide(view: ObjectView, key: string, decidedAt: string): unknown;
}

export const DECIDERS: Readonly<Record<string, Decider>> = {
  [ASSIGN_CONCERN]: {
    viewKinds: ASSIGN_VIEW_KINDS,
    decide(view, key, decidedAt) {
      const parsed = parseWorkKey(key);
      return parsed && configAssignmentOnView(view, parsed, decidedAt)?.decision;
    },
  },
};

export type Verdict = 'same' | 'different';

/**
 * Compares a replayed decision with the recorded one as the bytes of their JSON: the record
 * holds the handler's decision as JSON, so "the same decision" means the same text, key order
 * included. Walked in place rather than printed twice: a replay compares thousands.
 */
export function compareDecisions(recorded: unknown, replayed: unknown): Verdict {
  return sameJsonText(recorded, replayed ?? null) ? 'same' : 'different';
}

/** Whether `JSON.stringify` would print `a` and `b` the same (keys in order, undefined left out). */
export function sameJsonText(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((item, i) => sameJsonText(item ?? null, b[i] ?? null));
  }
  const keysOf = (o: object) => Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== undefined);
  const [ka, kb] = [keysOf(a), keysOf(b)];
  return (
    ka.length === kb.length &&
    ka.every(
      (k, i) =>
        k === kb[i] && sameJsonText((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    )
  );
}
