// What a compile says about each spoke and each of its rules, in the terms of the reference
// operator's status (SpokeConversionStatus, RuleResult): whether converting each way loses
// nothing, which paths each rule claims, the fields no rule accounts for, and the diagnostics
// where they belong. Pure, and derived from one compile's result alone (its spokeReports and
// its diagnostics), so the verdicts and the Validated condition written beside them are one
// statement: a rule's claims and losses are the ones compile resolved and checked, a ForEach's
// included; a spoke's verdict is its plan's; every error and warning is compile's diagnostic.
//
// "lossless" is a proof, not a guess: true in a direction only when converting that way is
// known to lose nothing. A rule that does not resolve, and a spoke with an error (its own, a
// rule's, or the hub's), are lossless in neither direction.
import { createHash } from 'node:crypto';
import type { CompileResult, RuleReport, SpokeReport, TargetVersion } from './compile.ts';
import { type Diagnostic, isError } from './diagnostics.ts';
import { joinPath } from './paths.ts';
import type { Direction } from './plan.ts';

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
  /** One per rule of the spoke, when compile got to it (none when the hub's or the spoke's schema is missing). */
  ruleResults: RuleVerdict[];
  /**
   * Fields no rule accounts for whose hub value would not reach the spoke (hub-only, or
   * differing), those in a ForEach's elements included; none unless every rule resolved.
   */
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

/**
 * The verdicts of a config, given what `compile` returned for it: one per listed spoke, from
 * compile's report of it. The config and the target's versions are not read again.
 */
export function deriveVerdicts(result: CompileResult): ConfigVerdict {
  const diagnostics = result.ok ? result.warnings : result.diagnostics;
  const aboutHub = diagnostics.filter((d) => d.version === undefined);
  const spokes = result.spokeReports.map((report) =>
    spokeVerdict(
      report,
      aboutHub,
      diagnostics.filter((d) => d.version === report.version),
    ),
  );
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

// --- from the reports

function spokeVerdict(
  report: SpokeReport,
  aboutHub: readonly Diagnostic[],
  own: readonly Diagnostic[],
): SpokeVerdict {
  const proven = report.compiled && !aboutHub.some(isError) && !own.some(isError);
  return {
    version: report.version,
    lossless: proven
      ? { hubToSpoke: report.lossless.hubToSpoke, spokeToHub: report.lossless.spokeToHub }
      : { ...NEITHER },
    ruleResults: report.rules.map((r) => ruleVerdict(r, own)),
    fieldsUncoveredHub: uncoveredIn('hubToSpoke', report),
    fieldsUncoveredSpoke: uncoveredIn('spokeToHub', report),
    errors: [...aboutHub.filter(isError), ...own.filter((d) => isError(d) && d.ruleIndex === undefined)],
    warnings: [...aboutHub, ...own].filter((d) => !isError(d) && d.ruleIndex === undefined),
  };
}

function ruleVerdict(rule: RuleReport, spokeDiagnostics: readonly Diagnostic[]): RuleVerdict {
  const own = spokeDiagnostics.filter((d) => d.ruleIndex === rule.index);
  return {
    index: rule.index,
    strategy: rule.strategy,
    hubPaths: rule.resolved ? rule.claims.hub.map(joinPath) : [],
    spokePaths: rule.resolved ? rule.claims.spoke.map(joinPath) : [],
    lossless: rule.resolved
      ? {
          hubToSpoke: rule.losses.hubToSpoke === undefined,
          spokeToHub: rule.losses.spokeToHub === undefined,
        }
      : { ...NEITHER },
    resolved: rule.resolved,
    errors: own.filter(isError),
    warnings: own.filter((d) => !isError(d)),
  };
}

/** The unclaimed fields whose value would not be carried converting `direction`: the hub's going to the spoke, and back. */
function uncoveredIn(direction: Direction, report: SpokeReport): string[] {
  return report.unclaimed.filter((u) => u.lost.includes(direction)).map((u) => u.path);
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
