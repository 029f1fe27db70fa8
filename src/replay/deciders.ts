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
 * holds the handler's decision as JSON, so "the same decision" means the same text.
 */
export function compareDecisions(recorded: unknown, replayed: unknown): Verdict {
  return JSON.stringify(recorded) === JSON.stringify(replayed ?? null) ? 'same' : 'different';
}
