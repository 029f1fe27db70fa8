// Compile: a config plus the target's versions in, a Router or diagnostics out, never both;
// and either way a report per listed spoke of what compile found there (the rules as resolved,
// the fields no rule accounts for), which a config's status verdicts are derived from.
//
// Fail closed by construction. Every field the hub or a spoke declares must be accounted for:
// claimed by a rule, or declared identically on both sides (then it passes through). Every
// direction a rule loses information in must be acknowledged. Anything compile cannot prove
// is an error, and a single error anywhere means no Router at all: the webhook-server keeps
// its last good plan rather than serve part of a config.
import type { Rule } from '../api/rules.ts';
import { type Claim, type Unclaimed, uncoveredFields } from './coverage.ts';
import { type Diagnostic, error, isError, warning } from './diagnostics.ts';
import { isPrefixOf, joinPath, overlaps, type Segments } from './paths.ts';
import {
  DIRECTIONS,
  type Direction,
  type OmitBranch,
  type OmitTree,
  type Op,
  type Router,
  type SpokePlan,
} from './plan.ts';
import { SchemaIndex, type TargetSchema } from './schema.ts';
import {
  arrow,
  type ItemsCompileResult,
  type PairContext,
  type ResolvedRule,
  type SideKey,
} from './strategies/common.ts';
import { resolveRule } from './strategies/resolve.ts';

/** The part of a CRDConversionConfig / XRDConversionConfig spec that compile reads. */
export interface ConversionSpec {
  hubVersion: string;
  spokes: readonly { version: string; rules: readonly Rule[] }[];
  /** Absent or Error: an unclaimed field that differs rejects the config; Warn: it is dropped. */
  unmappedFieldPolicy?: 'Error' | 'Warn' | undefined;
  unmappedFieldReason?: string | undefined;
}

/** What an unclaimed field that differs between hub and spoke does. */
type UnmappedFields = { warn: false } | { warn: true; reason: string };

const FAIL_ON_UNMAPPED: UnmappedFields = { warn: false };

function unmappedFieldsOf(spec: ConversionSpec): UnmappedFields {
  return spec.unmappedFieldPolicy === 'Warn'
    ? { warn: true, reason: spec.unmappedFieldReason ?? '' }
    : FAIL_ON_UNMAPPED;
}

/** One version of the target, as its CRD (storage) or XRD (referenceable) declares it. */
export interface TargetVersion {
  name: string;
  served: boolean;
  /** The version objects are stored at: `storage` on a CRD, `referenceable` on an XRD. */
  storage: boolean;
  schema: TargetSchema | undefined;
}

/**
 * A Router, or why not; and either way what compile found in each listed spoke (`spokeReports`),
 * beside the Router rather than in it: a replica holds thousands of Routers, and only a config's
 * status reads the reports (verdicts.ts).
 */
export type CompileResult =
  | { ok: true; router: Router; warnings: Diagnostic[]; spokeReports: SpokeReport[] }
  | { ok: false; diagnostics: Diagnostic[]; spokeReports: SpokeReport[] };

/**
 * What compile found in one spoke the config lists, on success and on failure alike. One per
 * distinct version listed in `spokes`, in the config's order; a spoke compile never got to (the
 * hub, or its own schema, is missing; it is the hub) has no rules and no unclaimed fields.
 */
export type SpokeReport = {
  version: string;
  /** One per rule the spoke lists, in order; none when the spoke was not compiled against. */
  rules: readonly RuleReport[];
  /**
   * The fields no rule accounts for, hub's first, in the order compile reports them, with the
   * directions their value is not carried in; those in a ForEach's elements (dropped under
   * unmappedFieldPolicy: Warn) after them, qualified with the items path. None unless every
   * rule resolved: before that, an unresolved rule's fields would show up as unclaimed.
   */
  unclaimed: readonly UnclaimedField[];
} & (
  | {
      /** The spoke's rules and coverage made a plan (the config may still fail on another spoke, or on its listing). */
      compiled: true;
      /** The plan's verdict per direction. */
      lossless: Readonly<Record<Direction, boolean>>;
    }
  | { compiled: false }
);

export type RuleReport =
  | {
      /** The rule's index in its spoke's `rules`. */
      index: number;
      strategy: string;
      resolved: true;
      /** The fields the rule claims on each side (writes, or reads in place of a pass-through). */
      claims: Readonly<Record<SideKey, readonly Segments[]>>;
      /** What the rule loses per direction, after compile's check of a `when` predicate's stability. */
      losses: Readonly<Partial<Record<Direction, string>>>;
    }
  | { index: number; strategy: string; resolved: false };

export interface UnclaimedField {
  path: string;
  lost: readonly Direction[];
}

/** Every plan without unlisted versions shares it: even an empty Set has a backing store. */
const NO_VERSIONS: ReadonlySet<string> = new Set();

export function compile(spec: ConversionSpec, versions: readonly TargetVersion[]): CompileResult {
  const byName = new Map(versions.map((v) => [v.name, v]));
  const hubProblems = checkHub(spec.hubVersion, byName);
  const spokeProblems = checkSpokes(spec, byName);
  // Keyed in the config's order, each listed version once; replaced as each spoke compiles.
  const reports = new Map<string, SpokeReport>();
  for (const { version } of spec.spokes)
    if (!reports.has(version)) reports.set(version, notCompiled(version));
  const hubSchema = byName.get(spec.hubVersion)?.schema;
  if (hubProblems.length > 0 || !hubSchema)
    return {
      ok: false,
      diagnostics: [...hubProblems, ...spokeProblems],
      spokeReports: [...reports.values()],
    };

  const hub = new SchemaIndex(hubSchema);
  const diagnostics: Diagnostic[] = [...spokeProblems];
  const spokes = new Map<string, SpokePlan>();
  const unlisted = new Set<string>();
  const omitTrees = new Map<string, OmitTree>();
  const listed = new Set<string>();
  for (const spoke of spokesToCompile(spec, versions)) {
    const schema = byName.get(spoke.version)?.schema;
    if (spoke.implicit) {
      const identity =
        schema &&
        compileSpoke(
          spec.hubVersion,
          hub,
          spoke.version,
          new SchemaIndex(schema),
          [],
          FAIL_ON_UNMAPPED,
          omitTrees,
        );
      if (identity?.plan) spokes.set(spoke.version, identity.plan);
      else {
        unlisted.add(spoke.version);
        diagnostics.push(unlistedServedVersion(spec.hubVersion, spoke.version, identity?.diagnostics));
      }
      continue;
    }
    if (listed.has(spoke.version)) continue; // listed twice: checkSpokes reports it
    listed.add(spoke.version);
    if (!schema) continue; // checkSpokes reports it
    const compiled = compileSpoke(
      spec.hubVersion,
      hub,
      spoke.version,
      new SchemaIndex(schema),
      spoke.rules,
      unmappedFieldsOf(spec),
      omitTrees,
    );
    diagnostics.push(...compiled.diagnostics);
    if (compiled.plan) spokes.set(spoke.version, compiled.plan);
    reports.set(spoke.version, spokeReport(spoke.version, spoke.rules, compiled));
  }
  const spokeReports = [...reports.values()];
  if (diagnostics.some(isError)) return { ok: false, diagnostics, spokeReports };
  return {
    ok: true,
    router: { hubVersion: spec.hubVersion, spokes, unlisted: unlisted.size > 0 ? unlisted : NO_VERSIONS },
    warnings: diagnostics,
    spokeReports,
  };
}

// --- versions

function checkHub(hubVersion: string, byName: ReadonlyMap<string, TargetVersion>): Diagnostic[] {
  const hub = byName.get(hubVersion);
  const storage = [...byName.values()].find((v) => v.storage)?.name;
  const at = { path: 'hubVersion' };
  if (!hub) {
    return [
      error(
        'UnknownVersion',
        at,
        `The target has no version ${hubVersion}.`,
        storage
          ? `Set hubVersion to ${storage}, the storage version.`
          : 'Set hubVersion to the storage version.',
      ),
    ];
  }
  if (!hub.storage) {
    return [
      error(
        'HubNotStorage',
        at,
        `hubVersion ${hubVersion} is not the target's storage version${storage ? ` (${storage} is)` : ''}.`,
        'Set hubVersion to the storage version (referenceable on an XRD); conversions pivot through it.',
      ),
    ];
  }
  if (!hub.schema) return [missingSchema(hubVersion, undefined)];
  return [];
}

function checkSpokes(spec: ConversionSpec, byName: ReadonlyMap<string, TargetVersion>): Diagnostic[] {
  const seen = new Set<string>();
  return spec.spokes.flatMap(({ version }, i): Diagnostic[] => {
    const at = { version, path: `spokes[${i}].version` };
    if (version === spec.hubVersion) {
      return [
        error(
          'HubListedAsSpoke',
          at,
          `${version} is the hub; it cannot also be a spoke.`,
          'Remove it from spokes.',
        ),
      ];
    }
    if (seen.has(version)) {
      return [
        error(
          'DuplicateSpoke',
          at,
          `${version} is listed twice in spokes.`,
          'Merge the two entries into one.',
        ),
      ];
    }
    seen.add(version);
    const target = byName.get(version);
    if (!target) {
      const known = [...byName.keys()].join(', ');
      return [error('UnknownVersion', at, `The target has no version ${version}.`, `Use one of: ${known}.`)];
    }
    if (!target.served) {
      return [
        error(
          'SpokeNotServed',
          at,
          `${version} is listed in spokes but not served by the target.`,
          `To retire ${version}, remove it from spokes first (it stays valid while still served), then stop serving it; otherwise serve it again.`,
        ),
      ];
    }
    return target.schema ? [] : [missingSchema(version, at.path)];
  });
}

function missingSchema(version: string, path: string | undefined): Diagnostic {
  return error(
    'MissingSchema',
    path === undefined ? { version } : { version, path },
    `Version ${version} has no openAPIV3Schema, so its fields cannot be checked.`,
    'Give the version a structural schema.',
  );
}

interface SpokeToCompile {
  version: string;
  rules: readonly Rule[];
  /** A served version the config does not list: it converts only if identical to the hub. */
  implicit: boolean;
}

/**
 * A served version the config does not list converts only when its schema equals the hub's:
 * then an identity plan (no rules) is provably exact. Otherwise this is the middle step of
 * retiring the version (dropped from spokes, still served): valid, with its requests failing
 * closed, and a warning for as long as it lasts. Failing closed rather than passing the object
 * through: a pass-through would hand clients objects in the wrong shape, silently.
 * `differences` is what compiling it against the hub without rules found; absent: no schema.
 */
function unlistedServedVersion(hubVersion: string, version: string, differences: Diagnostic[] | undefined) {
  const paths = [...new Set(differences?.flatMap((d) => (d.path ? [d.path] : [])))];
  const shown = paths.length > 3 ? [...paths.slice(0, 3), `${paths.length - 3} more`] : paths;
  const why = differences
    ? `its schema differs from the hub ${hubVersion}${shown.length > 0 ? ` (${shown.join(', ')})` : ''}`
    : 'it has no openAPIV3Schema';
  return warning(
    'UnlistedServedVersion',
    { version },
    `${version} is served but not listed in spokes, and ${why}: conversions to and from ${version} fail until this is resolved.`,
    `If you are retiring ${version}, stop serving it (served: false) and migrate objects stored at it, then remove it; otherwise list ${version} in spokes with rules for its differences.`,
  );
}

function spokesToCompile(spec: ConversionSpec, versions: readonly TargetVersion[]): SpokeToCompile[] {
  const listed = new Set(spec.spokes.map((s) => s.version));
  const valid = spec.spokes.filter((s) => s.version !== spec.hubVersion);
  const implicit = versions
    .filter((v) => v.served && v.name !== spec.hubVersion && !listed.has(v.name))
    .map((v) => ({ version: v.name, rules: [], implicit: true }));
  return [...valid.map((s) => ({ ...s, implicit: false })), ...implicit];
}

// --- one spoke, or the elements of a ForEach's arrays

/**
 * The two schemas rules resolve against, and what compiling them needs besides: a spoke's schema
 * and the hub's, or, for the rules nested in a ForEach, the items of its hub and spoke arrays.
 * Rules resolve with it as their context, so a ForEach compiles its nested rules (compileItems)
 * exactly as a spoke's, under the same unmappedFieldPolicy.
 */
interface Scope extends PairContext {
  unmapped: UnmappedFields;
  omitTrees: Map<string, OmitTree>;
  /** How many ForEach rules enclose these rules: 0 for a spoke's own. */
  depth: number;
  /** What the ForEach rules of this scope found in their elements without failing; set by the first. */
  nested: NestedFindings | undefined;
}

interface NestedFindings {
  warnings: Diagnostic[];
  /** Directions an element drops unmapped fields in (unmappedFieldPolicy: Warn): not lossless, yet acknowledged by the policy. */
  drops: Direction[];
  /** The fields dropped, each as its warning about the ForEach (the path qualified with the items path). */
  dropped: Uncovered[];
}

/** A field no rule accounts for, as compile reports it, and the directions its value is not carried in. */
interface Uncovered {
  diagnostic: Diagnostic;
  lost: readonly Direction[];
}

/** A spoke's or an element's conversion in both directions: what a SpokePlan holds besides its versions. */
interface Steps {
  omit: Readonly<Record<Direction, OmitTree>>;
  ops: Readonly<Record<Direction, readonly Op[]>>;
  lossless: Readonly<Record<Direction, boolean>>;
}

interface CompiledRules {
  /** Absent when any diagnostic is an error. */
  steps?: Steps;
  rules: readonly ResolvedRule[];
  /** The rules' own diagnostics, then the fields no rule accounts for, each with the side declaring it. */
  diagnostics: Diagnostic[];
  coverage: (Uncovered & { side: SideKey })[];
  /** The directions fields are dropped in under unmappedFieldPolicy: Warn, here or in an element. */
  drops: readonly Direction[];
}

/** A spoke's plan, or not; its diagnostics; and what its report is made of (spokeReport). */
interface CompiledSpoke {
  plan?: SpokePlan;
  diagnostics: Diagnostic[];
  compiled: CompiledRules;
  /** What its ForEach rules found in their elements. */
  nested: NestedFindings | undefined;
}

function compileSpoke(
  hubVersion: string,
  hub: SchemaIndex,
  version: string,
  spoke: SchemaIndex,
  rules: readonly Rule[],
  unmapped: UnmappedFields,
  omitTrees: Map<string, OmitTree>,
): CompiledSpoke {
  const scope = scopeOf({ hub, spoke, version, unmapped, omitTrees, depth: 0 });
  const compiled = compileRules(scope, rules);
  const { steps, diagnostics, coverage } = compiled;
  for (const c of coverage) diagnostics.push(c.diagnostic);
  if (!steps) return { diagnostics, compiled, nested: scope.nested };
  return {
    plan: { hubVersion, spokeVersion: version, omit: steps.omit, ops: steps.ops, lossless: steps.lossless },
    diagnostics,
    compiled,
    nested: scope.nested,
  };
}

const NO_RULE_REPORTS: readonly RuleReport[] = [];
const NO_UNCLAIMED: readonly UnclaimedField[] = [];

function notCompiled(version: string): SpokeReport {
  return { version, compiled: false, rules: NO_RULE_REPORTS, unclaimed: NO_UNCLAIMED };
}

/** A listed spoke's report: made of what its compile keeps anyway, so an implicit spoke pays nothing for it. */
function spokeReport(version: string, rules: readonly Rule[], spoke: CompiledSpoke): SpokeReport {
  const checked = spoke.compiled.rules;
  let next = 0;
  const ruleReports = rules.map((rule, index): RuleReport => {
    const resolved = checked[next];
    if (resolved?.ruleIndex !== index) return { index, strategy: String(rule.strategy), resolved: false };
    next++;
    const { strategy, claims, losses } = resolved;
    return { index, strategy, resolved: true, claims, losses };
  });
  const unclaimed =
    checked.length === rules.length
      ? [...spoke.compiled.coverage, ...(spoke.nested?.dropped ?? [])].map(
          (u): UnclaimedField => ({ path: u.diagnostic.path ?? '', lost: u.lost }),
        )
      : NO_UNCLAIMED;
  return spoke.plan
    ? { version, compiled: true, lossless: spoke.plan.lossless, rules: ruleReports, unclaimed }
    : { version, compiled: false, rules: ruleReports, unclaimed };
}

function compileRules(scope: Scope, rules: readonly Rule[]): CompiledRules {
  const { hub, spoke, version, unmapped } = scope;
  const diagnostics: Diagnostic[] = [];
  const resolved: ResolvedRule[] = [];
  rules.forEach((rule, i) => {
    const resolution = resolveRule(rule, i, scope);
    if (resolution.ok) {
      resolved.push(resolution.rule);
      diagnostics.push(...resolution.warnings);
    } else {
      diagnostics.push(...resolution.diagnostics);
    }
  });
  if (scope.nested) diagnostics.push(...scope.nested.warnings);
  const claims = claimsBySide(resolved);
  const checked = resolved.map((rule) => withPredicateStability(rule, claims));
  diagnostics.push(
    ...conflicts(claims.hub, 'hub', version),
    ...conflicts(claims.spoke, 'spoke', version),
    ...oneSidedProblems(checked, claims, version),
    ...unacknowledgedLosses(checked, version),
  );
  // Coverage is only meaningful once every rule resolved: an unresolved rule would show up
  // again as the fields it meant to claim.
  const unclaimed = resolved.length === rules.length ? uncoveredFields(hub, spoke, claims, version) : [];
  const coverage = unclaimed.map((u) => ({
    diagnostic: unmapped.warn ? droppedWithWarning(u, unmapped.reason) : u.diagnostic,
    side: sideDeclaring(u),
    lost: u.lost,
  }));
  const dropped = unmapped.warn ? unclaimed : [];
  const drops = DIRECTIONS.filter(
    (d) => dropped.some((u) => u.lost.includes(d)) || scope.nested?.drops.includes(d),
  );
  if (diagnostics.some(isError) || coverage.some((c) => isError(c.diagnostic)))
    return { rules: checked, diagnostics, coverage, drops };
  const steps = buildSteps(hub, spoke, checked, claims, dropped, drops, scope.omitTrees);
  return { steps, rules: checked, diagnostics, coverage, drops };
}

/** The side whose field an unclaimed finding is about: the hub's when both declare it. */
function sideDeclaring(unclaimed: Unclaimed): SideKey {
  return unclaimed.lost.length === 1 && unclaimed.lost[0] === 'spokeToHub' ? 'spoke' : 'hub';
}

/**
 * Compiles a ForEach's nested rules against the items of its arrays, as a spoke's against two
 * roots: claims, conflicts, coverage of every item field, losses. `relocate` turns a nested
 * diagnostic into one about the ForEach (`side`: which side declares the field, when known). A
 * plan without error hands its warnings and the directions its elements drop fields in to the
 * enclosing rules' compile, which reports them and counts the drops against its verdict.
 */
function compileItems(
  parent: PairContext,
  items: Readonly<Record<SideKey, SchemaIndex>>,
  rules: readonly Rule[],
  relocate: (diagnostic: Diagnostic, side?: SideKey) => Diagnostic,
): ItemsCompileResult {
  const outer = asScope(parent);
  const scope = scopeOf({
    version: outer.version,
    unmapped: outer.unmapped,
    omitTrees: outer.omitTrees,
    hub: items.hub,
    spoke: items.spoke,
    depth: outer.depth + 1,
  });
  const compiled = compileRules(scope, rules);
  const coverage = compiled.coverage.map((c) => ({
    diagnostic: relocate(c.diagnostic, c.side),
    lost: c.lost,
  }));
  const diagnostics = [...compiled.diagnostics.map((d) => relocate(d)), ...coverage.map((c) => c.diagnostic)];
  if (!compiled.steps) return { ok: false, diagnostics };
  outer.nested ??= { warnings: [], drops: [], dropped: [] };
  outer.nested.warnings.push(...diagnostics);
  outer.nested.drops.push(...compiled.drops);
  // Without an error, what coverage found is dropped (Warn); so is what the ForEach rules among
  // the nested ones found, relocated as their warnings are (in compiled.diagnostics).
  outer.nested.dropped.push(...coverage);
  for (const d of scope.nested?.dropped ?? [])
    outer.nested.dropped.push({ diagnostic: relocate(d.diagnostic), lost: d.lost });
  return { ok: true, plan: { omit: compiled.steps.omit, ops: compiled.steps.ops, rules: compiled.rules } };
}

function isScope(ctx: PairContext): ctx is Scope {
  return (ctx as Partial<Scope>).omitTrees !== undefined;
}

/** A context that compile made is a Scope; any other (a test resolving one rule) gets the defaults. */
function asScope(ctx: PairContext): Scope {
  if (isScope(ctx)) return ctx;
  return scopeOf({ ...ctx, unmapped: FAIL_ON_UNMAPPED, omitTrees: new Map(), depth: 0 });
}

/** A scope whose ForEach rules compile their nested rules in it (PairContext.nest). */
function scopeOf(fields: Omit<Scope, 'nest' | 'nested'>): Scope {
  const scope: Scope = { ...fields, nested: undefined };
  scope.nest = {
    depth: fields.depth,
    compileItems: (items, rules, relocate) => compileItems(scope, items, rules, relocate),
  };
  return scope;
}

/**
 * A `when` rule that carries its value over where the predicate does not match is lossless
 * only if the predicate reads the same value after the round trip. It does when its field
 * passes through; if a rule claims it, the value may change on the way and the predicate with
 * it, so the carried value is not guaranteed to come back: a loss to acknowledge.
 */
function withPredicateStability(rule: ResolvedRule, claims: Record<SideKey, Claim[]>): ResolvedRule {
  const carry = rule.carriesUnless;
  if (!carry) return rule;
  const changer = [...claims.hub, ...claims.spoke].find((c) => overlaps(c.segments, carry.segments));
  if (!changer) return rule;
  const losses = { ...rule.losses };
  for (const direction of DIRECTIONS) {
    losses[direction] ??=
      `${rule.path} is carried over unchanged where ${carry.when.path} is not ${JSON.stringify(carry.when.equals)}, but rule ${changer.ruleIndex} claims ${carry.when.path}, so the predicate can read differently on the way back (converting ${arrow(direction)}) and the value may not be restored.`;
  }
  return { ...rule, losses };
}

/** unmappedFieldPolicy: Warn: the field is left out of the output, and the warning says where. */
function droppedWithWarning(unclaimed: Unclaimed, reason: string): Diagnostic {
  const d = unclaimed.diagnostic;
  const where = unclaimed.lost.map(arrow).join(' and ');
  return warning(
    d.code,
    d,
    `${d.message} Under unmappedFieldPolicy: Warn it is dropped converting ${where} (unmappedFieldReason: ${reason}).`,
    d.hint,
  );
}

function claimsBySide(rules: readonly ResolvedRule[]): Record<SideKey, Claim[]> {
  const collect = (side: SideKey) =>
    rules.flatMap((r) => r.claims[side].map((segments) => ({ segments, ruleIndex: r.ruleIndex })));
  return { hub: collect('hub'), spoke: collect('spoke') };
}

/** Two rules claiming overlapping fields on one side would race for the same output. */
function conflicts(claims: readonly Claim[], side: SideKey, version: string): Diagnostic[] {
  const out: Diagnostic[] = [];
  claims.forEach((later, j) => {
    const earlier = claims
      .slice(0, j)
      .find((c) => c.ruleIndex !== later.ruleIndex && overlaps(c.segments, later.segments));
    if (!earlier) return;
    out.push(
      error(
        'ConflictingRules',
        { version, ruleIndex: later.ruleIndex, path: joinPath(later.segments) },
        `Rules ${earlier.ruleIndex} and ${later.ruleIndex} both claim the ${side} field ${joinPath(earlier.segments)}${sameOrNested(earlier, later)}.`,
        'Each field may be claimed by one rule: remove or merge one of them.',
      ),
    );
  });
  return out;
}

function sameOrNested(a: Claim, b: Claim): string {
  return a.segments.length === b.segments.length ? '' : ` (or a field inside it: ${joinPath(b.segments)})`;
}

function oneSidedProblems(rules: readonly ResolvedRule[], claims: Record<SideKey, Claim[]>, version: string) {
  return rules.flatMap((rule) => {
    const need = rule.needsClaimedElsewhere;
    if (
      !need ||
      claims[need.side].some((c) => c.ruleIndex !== rule.ruleIndex && isPrefixOf(c.segments, need.segments))
    ) {
      return [];
    }
    return [
      error(
        'NotOneSided',
        { version, ruleIndex: rule.ruleIndex, path: rule.path },
        `${rule.strategy} is for a field only one side declares, but the ${need.side} declares ${rule.path} too and no other rule moves it.`,
        'If the field is the same on both sides, drop the rule; if it changed, use FieldRename or EnumRemap.',
      ),
    ];
  });
}

function unacknowledgedLosses(rules: readonly ResolvedRule[], version: string): Diagnostic[] {
  return rules.flatMap((rule) => {
    const lossy = DIRECTIONS.filter((d) => rule.losses[d] !== undefined);
    if (rule.acknowledged || lossy.length === 0) return [];
    return [
      error(
        'UnacknowledgedLossy',
        { version, ruleIndex: rule.ruleIndex, path: rule.path },
        `${rule.strategy} loses information converting ${lossy.map(arrow).join(' and ')}: ${lossy.map((d) => rule.losses[d]).join(' ')}`,
        'Set acknowledgeLossy: true and say why in reason, or change the rule so nothing is lost.',
      ),
    ];
  });
}

// --- the plan

function buildSteps(
  hub: SchemaIndex,
  spoke: SchemaIndex,
  rules: readonly ResolvedRule[],
  claims: Record<SideKey, Claim[]>,
  dropped: readonly Unclaimed[],
  drops: readonly Direction[],
  omitTrees: Map<string, OmitTree>,
): Steps {
  const opsFor = (d: Direction) => rules.flatMap((r): Op[] => (r.ops[d] ? [r.ops[d]] : []));
  const losslessFor = (d: Direction) => rules.every((r) => r.losses[d] === undefined) && !drops.includes(d);
  // A dropped field is omitted like a claimed one: left out of the copy, written by no rule.
  const claimed = [...claims.hub, ...claims.spoke, ...dropped].map((c) => c.segments);
  return {
    omit: { hubToSpoke: omitTree(claimed, spoke, omitTrees), spokeToHub: omitTree(claimed, hub, omitTrees) },
    ops: { hubToSpoke: opsFor('hubToSpoke'), spokeToHub: opsFor('spokeToHub') },
    lossless: { hubToSpoke: losslessFor('hubToSpoke'), spokeToHub: losslessFor('spokeToHub') },
  };
}

interface MutableBranch {
  children: MutableOmitTree;
  keepIfEmptied: boolean;
}
type MutableOmitTree = Map<string, MutableBranch | null>;

/**
 * The omit tree for one direction; `destination` is the schema of the version converted to.
 * Equal subtrees are one object (`shared`, per plan): the two directions of a spoke skip the same
 * paths, so a replica holding thousands of plans keeps most omit trees once.
 */
function omitTree(
  paths: readonly Segments[],
  destination: SchemaIndex,
  shared: Map<string, OmitTree>,
): OmitTree {
  const root: MutableOmitTree = new Map();
  for (const segments of paths) {
    let level = root;
    for (let i = 0; i < segments.length; i++) {
      const segment = segments[i] as string;
      const existing = level.get(segment);
      if (existing === null) break; // an ancestor is already skipped whole
      if (i === segments.length - 1) {
        level.set(segment, null);
      } else if (existing === undefined) {
        const keepIfEmptied = destination.has(segments, i + 1);
        const branch: MutableBranch = { children: new Map(), keepIfEmptied };
        level.set(segment, branch);
        level = branch.children;
      } else {
        level = existing.children;
      }
    }
  }
  return interned(root, shared).tree;
}

/**
 * The tree with every subtree equal to one seen before replaced by that one; and its key. Keys
 * follow insertion order, unsorted: the two directions of a spoke build their trees from the
 * same claims in the same order, which is the sharing that counts, and sorting every level cost
 * a tenth of a replica's start.
 */
function interned(tree: MutableOmitTree, shared: Map<string, OmitTree>): { tree: OmitTree; key: string } {
  const parts: string[] = [];
  const entries: (string | OmitBranch | null)[] = [];
  for (const [key, branch] of tree) {
    if (branch === null) {
      parts.push(`${JSON.stringify(key)}`);
      entries.push(key, null);
      continue;
    }
    const child = interned(branch.children, shared);
    entries.push(key, { children: child.tree, keepIfEmptied: branch.keepIfEmptied });
    parts.push(`${JSON.stringify(key)}${branch.keepIfEmptied ? '+' : '-'}${child.key}`);
  }
  const key = `{${parts.join(',')}}`;
  const seen = shared.get(key);
  if (seen) return { tree: seen, key };
  // A copy at its size: an array grown by pushes keeps room for a dozen more.
  const level = entries.slice();
  shared.set(key, level);
  return { tree: level, key };
}
