// The compile's verdicts (engine/verdicts.ts) as a config's status carries them: the reference
// operator's field names (overallLossless, spokeStatuses[] with ruleResults[]), bounded so a
// config of 32 spokes × 256 rules still writes a status of a sane size (VERDICT_LIMITS).
//
// The bound: every message and path is cut to a length, every rule result to a few paths and
// messages, and the whole of spokeStatuses to `bytes` as JSON. The budget is shared out so that
// a small spoke keeps everything and the large ones split the rest evenly; within a spoke,
// what says something goes first: the spoke's errors, the rules with errors, the uncovered
// fields, the lossy rules, the spoke's warnings, the rules with warnings, then the rules with
// nothing to report. Whatever does not fit is counted per spoke in `omitted`, and the lists
// keep the config's order. Pure.
import { type RuleResult, type SpokeStatus, VERDICT_LIMITS } from '../api/conversion-config.ts';
import type { Diagnostic } from '../engine/diagnostics.ts';
import type { ConfigVerdict, RuleVerdict, SpokeVerdict } from '../engine/verdicts.ts';

export type VerdictLimits = { readonly [K in keyof typeof VERDICT_LIMITS]: number };

export interface VerdictStatus {
  overallLossless: boolean;
  spokeStatuses: SpokeStatus[];
}

/** The status fields of `verdict`, within `limits`. */
export function verdictStatus(verdict: ConfigVerdict, limits: VerdictLimits = VERDICT_LIMITS): VerdictStatus {
  const spokes = verdict.spokes.map((s) => candidatesOf(s, limits));
  // Two brackets, and a comma between spokes.
  const allowances = shareOut(
    spokes.map((s) => s.fullBytes),
    limits.bytes - 2 - Math.max(0, spokes.length - 1),
  );
  return {
    overallLossless: verdict.overallLossless,
    spokeStatuses: spokes.map((s, i) => fitSpoke(s, allowances[i] as number)),
  };
}

// --- what a spoke could list

type ListKey = 'errors' | 'ruleResults' | 'fieldsUncoveredHub' | 'fieldsUncoveredSpoke' | 'warnings';

interface Rendered {
  value: string | RuleResult;
  /** As JSON, with the comma before it. */
  bytes: number;
  /** Paths and messages cut from a rule result to bound it. */
  cut: number;
}

/**
 * One entry a spoke's lists could hold, rendered only when the budget gets to it: a config
 * whose lists run to thousands (every field of a large schema unclaimed) costs what is kept,
 * not what is left out.
 */
interface Item {
  list: ListKey;
  /** Lower goes first. */
  priority: number;
  /** Its place in its list. */
  order: number;
  get: () => Rendered;
}

function lazyItem(
  list: ListKey,
  priority: number,
  order: number,
  render: () => { value: string | RuleResult; cut?: number },
): Item {
  let rendered: Rendered | undefined;
  const get = () => {
    if (rendered === undefined) {
      const { value, cut = 0 } = render();
      rendered = { value, bytes: jsonBytes(value) + 1, cut };
    }
    return rendered;
  };
  return { list, priority, order, get };
}

interface Candidates {
  head: Pick<SpokeStatus, 'version' | 'lossless'>;
  items: Item[];
  /** The spoke's status with every item, or more than the whole budget when that is already more. */
  fullBytes: number;
}

/** The keys of every list, their brackets and commas, and the largest `omitted` object. */
const SPOKE_OVERHEAD_BYTES = 300;

/** No entry is smaller (`"a",`): below it, nothing more fits. */
const SMALLEST_ITEM_BYTES = 4;

/**
 * How many entries too large for what is left are passed over for smaller ones after them
 * before the rest is left out unmeasured: the filling stays in proportion to what is kept.
 */
const MAX_MISFITS = 16;

const PRIORITY = {
  spokeError: 0,
  ruleWithError: 1,
  uncovered: 2,
  lossyRule: 3,
  spokeWarning: 4,
  ruleWithWarning: 5,
  rule: 6,
} as const;

function candidatesOf(spoke: SpokeVerdict, limits: VerdictLimits): Candidates {
  const items: Item[] = [];
  const text = (d: Diagnostic) => () => ({ value: message(d, limits) });
  const path = (p: string) => () => ({ value: cutTo(p, limits.pathChars) });
  spoke.errors.forEach((d, i) => {
    items.push(lazyItem('errors', PRIORITY.spokeError, i, text(d)));
  });
  spoke.warnings.forEach((d, i) => {
    items.push(lazyItem('warnings', PRIORITY.spokeWarning, i, text(d)));
  });
  spoke.fieldsUncoveredHub.forEach((p, i) => {
    items.push(lazyItem('fieldsUncoveredHub', PRIORITY.uncovered, i, path(p)));
  });
  spoke.fieldsUncoveredSpoke.forEach((p, i) => {
    items.push(lazyItem('fieldsUncoveredSpoke', PRIORITY.uncovered, i, path(p)));
  });
  spoke.ruleResults.forEach((r, i) => {
    items.push(lazyItem('ruleResults', rulePriority(r), i, () => ruleResult(r, limits)));
  });
  const head = { version: spoke.version, lossless: { ...spoke.lossless } };
  let fullBytes = jsonBytes(head) + SPOKE_OVERHEAD_BYTES;
  for (const item of items) {
    if (fullBytes > limits.bytes) break; // wants all it can get: the rest need not be measured
    fullBytes += item.get().bytes;
  }
  return { head, items, fullBytes };
}

function rulePriority(rule: RuleVerdict): number {
  if (rule.errors.length > 0) return PRIORITY.ruleWithError;
  if (!rule.lossless.hubToSpoke || !rule.lossless.spokeToHub) return PRIORITY.lossyRule;
  if (rule.warnings.length > 0) return PRIORITY.ruleWithWarning;
  return PRIORITY.rule;
}

function ruleResult(rule: RuleVerdict, limits: VerdictLimits): { value: RuleResult; cut: number } {
  let cut = 0;
  const bounded = <T, U>(list: readonly T[], max: number, map: (t: T) => U): U[] => {
    cut += Math.max(0, list.length - max);
    return list.slice(0, max).map(map);
  };
  const path = (p: string) => cutTo(p, limits.pathChars);
  const text = (d: Diagnostic) => message(d, limits);
  const hubPaths = bounded(rule.hubPaths, limits.rulePaths, path);
  const spokePaths = bounded(rule.spokePaths, limits.rulePaths, path);
  const errors = bounded(rule.errors, limits.ruleMessages, text);
  const warnings = bounded(rule.warnings, limits.ruleMessages, text);
  const value: RuleResult = {
    index: rule.index,
    strategy: rule.strategy,
    ...(hubPaths.length > 0 && { hubPaths }),
    ...(spokePaths.length > 0 && { spokePaths }),
    lossless: { ...rule.lossless },
    ...(errors.length > 0 && { errors }),
    ...(warnings.length > 0 && { warnings }),
  };
  return { value, cut };
}

// --- the budget

/**
 * Splits `budget` over wants: the smallest first, each given what it wants or an even share of
 * what is left, whichever is less; so nothing is cut while everything fits.
 */
export function shareOut(wants: readonly number[], budget: number): number[] {
  const out = new Array<number>(wants.length).fill(0);
  const order = wants.map((_, i) => i).sort((a, b) => (wants[a] as number) - (wants[b] as number) || a - b);
  let left = budget;
  order.forEach((index, k) => {
    const share = Math.floor(left / (order.length - k));
    const given = Math.min(wants[index] as number, share);
    out[index] = given;
    left -= given;
  });
  return out;
}

function fitSpoke(spoke: Candidates, allowance: number): SpokeStatus {
  let room = allowance - jsonBytes(spoke.head) - SPOKE_OVERHEAD_BYTES;
  const chosen = new Set<Item>();
  const byPriority = [...spoke.items].sort((a, b) => a.priority - b.priority || a.order - b.order);
  let misfits = 0;
  for (const item of byPriority) {
    if (room < SMALLEST_ITEM_BYTES || misfits === MAX_MISFITS) break;
    const { bytes } = item.get();
    if (bytes > room) {
      misfits++;
      continue;
    }
    chosen.add(item);
    room -= bytes;
  }
  const omitted: Partial<Record<ListKey | 'ruleEntries', number>> = {};
  const lists: Partial<Record<ListKey, (string | RuleResult)[]>> = {};
  // Items were listed list by list, each in its order: the lists come out in the config's order.
  for (const item of spoke.items) {
    if (!chosen.has(item)) {
      omitted[item.list] = (omitted[item.list] ?? 0) + 1;
      continue;
    }
    const { value, cut } = item.get();
    if (cut > 0) omitted.ruleEntries = (omitted.ruleEntries ?? 0) + cut;
    const list = lists[item.list] ?? [];
    list.push(value);
    lists[item.list] = list;
  }
  return {
    ...spoke.head,
    ...(lists.ruleResults && { ruleResults: lists.ruleResults as RuleResult[] }),
    ...(lists.fieldsUncoveredHub && { fieldsUncoveredHub: lists.fieldsUncoveredHub as string[] }),
    ...(lists.fieldsUncoveredSpoke && { fieldsUncoveredSpoke: lists.fieldsUncoveredSpoke as string[] }),
    ...(lists.errors && { errors: lists.errors as string[] }),
    ...(lists.warnings && { warnings: lists.warnings as string[] }),
    ...(Object.keys(omitted).length > 0 && { omitted }),
  };
}

// --- text

/** A diagnostic in a spoke's or a rule's list: the spoke and rule are where it is listed. */
function message(d: Diagnostic, limits: VerdictLimits): string {
  const at = `${d.code}${d.path ? ` ${cutTo(d.path, limits.pathChars)}` : ''}: `;
  // Cut before joining: a message of kilobytes is not copied whole to keep 512 characters of it.
  return cutTo(
    `${at}${cutTo(d.message, limits.messageChars)} Fix: ${cutTo(d.hint, limits.messageChars)}`,
    limits.messageChars,
  );
}

function cutTo(text: string, chars: number): string {
  if (text.length <= chars) return text;
  // Never half a surrogate pair.
  const last = text.charCodeAt(chars - 2);
  const end = last >= 0xd800 && last <= 0xdbff ? chars - 2 : chars - 1;
  return `${text.slice(0, end)}…`;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
