// What every strategy's resolution shares: the types a strategy returns (the paths it claims on
// each side, the op it performs in each direction, and the losses computed here rather than
// taken from the config) and the lookups of a rule's paths in the two schemas.
//
// "Lossy in a direction" means: an object converted that way and back may not come back equal.
// That is the property the round-trip tests check and the one `acknowledgeLossy` acknowledges.
import type { Rule, RuleCondition, Side, Strategy } from '../../api/rules.ts';
import { type Diagnostic, error } from '../diagnostics.ts';
import { parsePath, type Segments } from '../paths.ts';
import type { Direction, OmitTree, Op } from '../plan.ts';
import { describeShape, differingKeywords, type SchemaIndex, type SchemaNode } from '../schema.ts';

export type SideKey = 'hub' | 'spoke';

export interface PairContext {
  hub: SchemaIndex;
  spoke: SchemaIndex;
  version: string;
  /**
   * Compiles a ForEach's nested rules, given by compile (whose scope this is), so that a strategy
   * never imports compile: absent where a rule resolves outside compile, and ForEach then refuses.
   */
  nest?: NestedCompile;
}

/** What compile lends a ForEach: its own depth, and the compile of rules against two item schemas. */
export interface NestedCompile {
  /** How many ForEach rules enclose the rules resolving here: 0 for a spoke's own. */
  depth: number;
  /**
   * Compiles rules against the items of a ForEach's arrays, as a spoke's against two roots.
   * `relocate` turns a nested diagnostic into one about the ForEach (`side`: which side declares
   * the field, when known).
   */
  compileItems(
    items: Readonly<Record<SideKey, SchemaIndex>>,
    rules: readonly Rule[],
    relocate: (diagnostic: Diagnostic, side?: SideKey) => Diagnostic,
  ): ItemsCompileResult;
}

/** The rules a ForEach nests, compiled against the items of its arrays, one element at a time. */
export interface ItemsPlan {
  omit: Readonly<Record<Direction, OmitTree>>;
  ops: Readonly<Record<Direction, readonly Op[]>>;
  /** The nested rules: their losses are the ForEach's. */
  rules: readonly ResolvedRule[];
}

export type ItemsCompileResult = { ok: true; plan: ItemsPlan } | { ok: false; diagnostics: Diagnostic[] };

export interface ResolvedRule {
  ruleIndex: number;
  strategy: Strategy;
  acknowledged: boolean;
  /** The path diagnostics about the whole rule point at. */
  path: string;
  claims: Readonly<Record<SideKey, readonly Segments[]>>;
  ops: Partial<Record<Direction, Op>>;
  losses: Partial<Record<Direction, string>>;
  /**
   * A one-sided rule whose field also exists on the other side: allowed only if another rule
   * claims that other-side field (it moved elsewhere), which compile checks once all claims
   * are known.
   */
  needsClaimedElsewhere?: { side: SideKey; segments: Segments };
  /**
   * A `when` rule that carries its value over unchanged where the predicate does not match:
   * lossless only if the predicate reads the same on both sides of a round trip, i.e. no rule
   * claims its field, which compile checks once all claims are known.
   */
  carriesUnless?: { when: RuleCondition; segments: Segments };
}

export type RuleResolution =
  | { ok: true; rule: ResolvedRule; warnings: Diagnostic[] }
  | { ok: false; diagnostics: Diagnostic[] };

export interface Located {
  ruleIndex: number;
  ctx: PairContext;
}

export type Lookup = { ok: true; node: SchemaNode } | { ok: false; diagnostic: Diagnostic };

/** What a strategy decides; the common parts of a rule (`when`, acknowledgement) are added after. */
export type Transform = Omit<ResolvedRule, 'ruleIndex' | 'strategy' | 'acknowledged'> & {
  /**
   * What happens to the input's value where a `when` predicate does not match: nothing (the
   * rule reads no value that way), carried over unchanged (the rule reads and writes the same
   * path, declared with the same shape on both sides), or lost.
   */
  onSkip: SkipOutcome;
};
export type SkipOutcome = 'nothing' | 'carry' | 'lose';
export type TransformResult = { ok: true; transform: Transform } | { ok: false; diagnostics: Diagnostic[] };
// --- shared helpers

export function lookup(side: SideKey, path: string, at: Located): Lookup {
  const parsed = parsePath(path, at.ctx[side].of === 'object');
  if (!parsed.ok) {
    return {
      ok: false,
      diagnostic: error(
        'InvalidPath',
        locate(at, path),
        `${parsed.problem}.`,
        'Write a dotted path of declared fields from the object root, e.g. spec.size.',
      ),
    };
  }
  const node = at.ctx[side].node(path);
  if (node) return { ok: true, node };
  const near = nearestPath(path, at.ctx[side]);
  return {
    ok: false,
    diagnostic: error(
      'UnknownPath',
      locate(at, path),
      `The ${side} schema (${side === 'hub' ? 'hub version' : `version ${at.ctx.version}`}) declares no field ${path}.`,
      near ? `Did you mean ${near}?` : `Use a field the ${side} schema declares.`,
    ),
  };
}

export function failed(...lookups: Lookup[]): { ok: false; diagnostics: Diagnostic[] } {
  return { ok: false, diagnostics: lookups.flatMap((l) => (l.ok ? [] : [l.diagnostic])) };
}

export function locate(at: Located, path: string) {
  return { version: at.ctx.version, ruleIndex: at.ruleIndex, path };
}

export function sideKey(side: Side): SideKey {
  return side === 'Hub' ? 'hub' : 'spoke';
}

export function otherSide(side: SideKey): SideKey {
  return side === 'hub' ? 'spoke' : 'hub';
}

export function directionInto(side: SideKey): Direction {
  return side === 'spoke' ? 'hubToSpoke' : 'spokeToHub';
}

export function arrow(direction: Direction): string {
  return direction === 'hubToSpoke' ? 'hub → spoke' : 'spoke → hub';
}

export function sameDescription(a: SchemaNode, b: SchemaNode): string {
  return describeShape(a.schema) === describeShape(b.schema)
    ? ` (their ${differingKeywords(a.schema, b.schema).join(', ')} differ)`
    : '';
}

/** The declared path closest to a misspelt one, if any is close enough to be a likely typo. */
function nearestPath(path: string, index: SchemaIndex): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(path.length / 4)) + 1;
  for (const candidate of index.paths()) {
    const distance = editDistance(path, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] as number;
}
