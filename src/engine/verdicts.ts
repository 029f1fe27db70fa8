// What a compile says about each spoke and each of its rules, in the terms of the reference
// operator's status (SpokeConversionStatus, RuleResult): whether converting each way loses
// nothing, which paths each rule claims, the fields no rule accounts for, and the diagnostics
// where they belong. Pure, and derived from one compile's result and the inputs it was given,
// so the verdicts and the Validated condition written beside them are one statement.
//
// compile keeps the rules it resolved to itself (ResolvedRule never leaves compile.ts), and its
// Router has a verdict per spoke only when the whole config compiles. So the per-rule verdicts
// are derived here by resolving each rule again with the strategies' own resolution
// (strategies/resolve.ts `resolveRule`) against the same schemas, then applying what compile
// adds once all claims are known (a `when` whose predicate field another rule claims is lossy)
// and the same coverage check. Everything compile does report is taken from it: a compiled
// spoke's verdict is its plan's, and every error and warning is compile's diagnostic. Were
// compile to return, per listed spoke, the rules it resolved (losses after the predicate check,
// claims) and its unclaimed fields, on failure as on success, this second resolution would go.
//
// "lossless" is a proof, not a guess: true in a direction only when converting that way is
// known to lose nothing. A rule that does not resolve, and a spoke with an error (its own, a
// rule's, or the hub's), are lossless in neither direction.
import { createHash } from 'node:crypto';
import type { Rule } from '../api/rules.ts';
import type { CompileResult, ConversionSpec, TargetVersion } from './compile.ts';
import { type Claim, type Unclaimed, uncoveredFields } from './coverage.ts';
import { type Diagnostic, isError } from './diagnostics.ts';
import { joinPath, overlaps } from './paths.ts';
import { DIRECTIONS, type Direction } from './plan.ts';
import { SchemaIndex } from './schema.ts';
import type { ResolvedRule, SideKey } from './strategies/common.ts';
import { resolveRule } from './strategies/resolve.ts';

export type LosslessVerdict = Record<Direction, boolean>;

const NEITHER: LosslessVerdict = Object.freeze({ hubToSpoke: false, spokeToHub: false });

export interface RuleVerdict {
  /** The rule's index in its spoke's `rules`. */
  index: number;
  strategy: string;
  /** The hub fields the rule claims (writes or reads in place of a pass-through); empty when it did not resolve. */
  hubPaths: string[];
  spokePaths: string[];
  lossless: LosslessVerdict;
  /** Whether the rule resolved against the two schemas (false: its errors say why). */
  resolved: boolean;
  errors: Diagnostic[];
  warnings: Diagnostic[];
}

export interface SpokeVerdict {
  version: string;
  lossless: LosslessVerdict;
  /** One per rule the spoke's schemas let resolve (none when the hub's or the spoke's schema is missing). */
  ruleResults: RuleVerdict[];
  /** Fields no rule accounts for whose hub value would not reach the spoke (hub-only, or differing). */
  fieldsUncoveredHub: string[];
  /** Likewise for the spoke's values on the way to the hub. */
  fieldsUncoveredSpoke: string[];
  /** The diagnostics about the spoke as a whole (no rule), and about the hub, which stops every spoke. */
  errors: Diagnostic[];
  warnings: Diagnostic[];
}

export interface ConfigVerdict {
  /** Every listed spoke lossless both ways, and the config compiled. */
  overallLossless: boolean;
  /** One per distinct version listed in `spokes`, in the config's order. */
  spokes: SpokeVerdict[];
}

/** The verdicts of `spec` against `versions`, given what `compile(spec, versions)` returned. */
export function deriveVerdicts(
  spec: ConversionSpec,
  versions: readonly TargetVersion[],
  result: CompileResult,
): ConfigVerdict {
  const diagnostics = result.ok ? result.warnings : result.diagnostics;
  const byName = new Map(versions.map((v) => [v.name, v]));
  const hubVersion = byName.get(spec.hubVersion);
  const hubSchema = hubVersion?.storage ? hubVersion.schema : undefined;
  const hub = hubSchema && new SchemaIndex(hubSchema);
  const aboutHub = diagnostics.filter((d) => d.version === undefined);
  const seen = new Set<string>();
  const spokes: SpokeVerdict[] = [];
  for (const { version, rules } of spec.spokes) {
    if (seen.has(version)) continue; // listed twice: compile's DuplicateSpoke is about this spoke
    seen.add(version);
    const own = diagnostics.filter((d) => d.version === version);
    const schema = version === spec.hubVersion ? undefined : byName.get(version)?.schema;
    const resolved = hub && schema ? resolveSpoke(hub, new SchemaIndex(schema), version, rules) : undefined;
    const ruleResults = resolved
      ? resolved.rules.map((r, i) => ruleVerdict(rules[i] as Rule, i, r, own))
      : [];
    const spokeErrors = [...aboutHub, ...own].filter(isError);
    const lossless = result.ok
      ? (result.router.spokes.get(version)?.lossless ?? NEITHER)
      : spokeErrors.length > 0 || resolved?.uncovered === undefined
        ? NEITHER
        : derivedLossless(ruleResults, resolved.uncovered);
    spokes.push({
      version,
      lossless: { hubToSpoke: lossless.hubToSpoke, spokeToHub: lossless.spokeToHub },
      ruleResults,
      fieldsUncoveredHub: uncoveredIn('hubToSpoke', resolved?.uncovered),
      fieldsUncoveredSpoke: uncoveredIn('spokeToHub', resolved?.uncovered),
      errors: [...aboutHub.filter(isError), ...own.filter((d) => isError(d) && d.ruleIndex === undefined)],
      warnings: [...aboutHub, ...own].filter((d) => !isError(d) && d.ruleIndex === undefined),
    });
  }
  return {
    overallLossless: result.ok && spokes.every((s) => s.lossless.hubToSpoke && s.lossless.spokeToHub),
    spokes,
  };
}

/**
 * A digest of the target's versions as compile reads them (name, served, storage or
 * referenceable, and the openAPIV3Schema), in the target's order, keys sorted:
 * `sha256:<base64url>`. It changes exactly when what a config is compiled against does; a
 * repoint of the target's conversion, which bumps a CRD's generation, leaves it as it is.
 */
export function schemaHash(versions: readonly TargetVersion[]): string {
  const canonical = canonicalJson(
    versions.map((v) => ({ name: v.name, served: v.served, storage: v.storage, schema: v.schema ?? null })),
  );
  return `sha256:${createHash('sha256').update(canonical).digest('base64url')}`;
}

// --- the second resolution (see the top of the file)

interface ResolvedSpoke {
  /** Per rule, in order: its resolution with compile's predicate check applied, or undefined. */
  rules: (ResolvedRule | undefined)[];
  /** Undefined unless every rule resolved: coverage means nothing before (compile's rule). */
  uncovered: Unclaimed[] | undefined;
}

function resolveSpoke(
  hub: SchemaIndex,
  spoke: SchemaIndex,
  version: string,
  rules: readonly Rule[],
): ResolvedSpoke {
  const ctx = { hub, spoke, version };
  const resolutions = rules.map((rule, i) => {
    const resolution = resolveRule(rule, i, ctx);
    return resolution.ok ? resolution.rule : undefined;
  });
  const resolved = resolutions.filter((r): r is ResolvedRule => r !== undefined);
  const claims: Record<SideKey, Claim[]> = {
    hub: claimsOf(resolved, 'hub'),
    spoke: claimsOf(resolved, 'spoke'),
  };
  return {
    rules: resolutions.map((r) => r && withPredicateStability(r, claims)),
    uncovered: resolved.length === rules.length ? uncoveredFields(hub, spoke, claims, version) : undefined,
  };
}

function claimsOf(rules: readonly ResolvedRule[], side: SideKey): Claim[] {
  return rules.flatMap((r) => r.claims[side].map((segments) => ({ segments, ruleIndex: r.ruleIndex })));
}

/**
 * compile's check, as compile states it: a `when` rule that carries its value over where the
 * predicate does not hold is lossless only if no rule claims the predicate's field.
 */
function withPredicateStability(rule: ResolvedRule, claims: Record<SideKey, Claim[]>): ResolvedRule {
  const carry = rule.carriesUnless;
  if (!carry) return rule;
  if (![...claims.hub, ...claims.spoke].some((c) => overlaps(c.segments, carry.segments))) return rule;
  const losses = { ...rule.losses };
  for (const direction of DIRECTIONS)
    losses[direction] ??= 'the predicate may read differently on the way back';
  return { ...rule, losses };
}

function ruleVerdict(
  rule: Rule,
  index: number,
  resolved: ResolvedRule | undefined,
  spokeDiagnostics: readonly Diagnostic[],
): RuleVerdict {
  const own = spokeDiagnostics.filter((d) => d.ruleIndex === index);
  return {
    index,
    strategy: String(rule.strategy),
    hubPaths: resolved ? resolved.claims.hub.map(joinPath) : [],
    spokePaths: resolved ? resolved.claims.spoke.map(joinPath) : [],
    lossless: resolved
      ? {
          hubToSpoke: resolved.losses.hubToSpoke === undefined,
          spokeToHub: resolved.losses.spokeToHub === undefined,
        }
      : NEITHER,
    resolved: resolved !== undefined,
    errors: own.filter(isError),
    warnings: own.filter((d) => !isError(d)),
  };
}

/** A spoke without an error: lossless where every rule is and no unclaimed field is dropped (compile's plan verdict). */
function derivedLossless(rules: readonly RuleVerdict[], uncovered: readonly Unclaimed[]): LosslessVerdict {
  const way = (d: Direction) =>
    rules.every((r) => r.lossless[d]) && uncovered.every((u) => !u.lost.includes(d));
  return { hubToSpoke: way('hubToSpoke'), spokeToHub: way('spokeToHub') };
}

/** The unclaimed fields whose value would not be carried converting `direction`: the hub's going to the spoke, and back. */
function uncoveredIn(direction: Direction, uncovered: readonly Unclaimed[] | undefined): string[] {
  return (uncovered ?? []).filter((u) => u.lost.includes(direction)).map((u) => joinPath(u.segments));
}

/** JSON with every object's keys sorted: the same value hashes the same whatever order it was written in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
