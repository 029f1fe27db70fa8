// The decisions `switchyard replay` can take again: for each concern that records what it
// decides (stream DECISIONS), the kinds its view reads and the very function its handler decides
// with, applied to a view rebuilt at the recorded sequence. No I/O.
import type { ObjectView } from '../bus/view.ts';
import { ASSIGN_CONCERN, ASSIGN_VIEW_KINDS } from '../handlers/assign/world.ts';
import { configAssignmentOnView } from '../handlers/assign.ts';
import { operatorNamespace } from '../handlers/operator-namespace.ts';
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
      return parsed && configAssignmentOnView(view, parsed, decidedAt, operatorNamespace())?.decision;
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
    for (let i = 0; i < a.length; i++) if (!sameJsonText(a[i] ?? null, b[i] ?? null)) return false;
    return true;
  }
  return sameFields(a as Record<string, unknown>, b as Record<string, unknown>);
}

/** Both objects' defined fields, pairwise in order: the same names, the same text. */
function sameFields(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const bKeys: string[] = [];
  for (const key in b) if (b[key] !== undefined) bKeys.push(key);
  let i = 0;
  for (const key in a) {
    if (a[key] === undefined) continue;
    if (bKeys[i] !== key || !sameJsonText(a[key], b[key])) return false;
    i++;
  }
  return i === bKeys.length;
}
