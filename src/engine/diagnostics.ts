// What compile says about a config. A diagnostic is written for the person who owns the
// config: it names the spoke version, the rule (by index in that spoke's `rules`) and the
// field path, states what is wrong, and says how to fix it. The admission webhook and the
// config status show these verbatim, so the text must stand on its own.

export const DIAGNOSTIC_CODES = [
  // version checks
  'UnknownVersion',
  'HubNotStorage',
  'SpokeNotServed',
  'DuplicateSpoke',
  'HubListedAsSpoke',
  'MissingSchema',
  // rule checks
  'InvalidRule',
  'InvalidPath',
  'UnknownPath',
  'ShapeMismatch',
  'NotOneSided',
  'InvalidValue',
  'UnmappedEnumValue',
  'ConflictingRules',
  'UnacknowledgedLossy',
  'InvalidExpression',
  // coverage
  'UnclaimedField',
  // warnings
  'PartialCoverage',
  'UnlistedServedVersion',
] as const;
export type DiagnosticCode = (typeof DIAGNOSTIC_CODES)[number];

export type Severity = 'error' | 'warning';

export interface Diagnostic {
  severity: Severity;
  code: DiagnosticCode;
  message: string;
  /** How to fix it, phrased as an instruction. */
  hint: string;
  /** The spoke version whose rules or schema are concerned. */
  version?: string;
  /** Index into that spoke's `rules`. */
  ruleIndex?: number;
  /** The field path concerned, dotted from the object root. */
  path?: string;
}

export interface DiagnosticLocation {
  version?: string;
  ruleIndex?: number;
  path?: string;
}

export function error(
  code: DiagnosticCode,
  at: DiagnosticLocation,
  message: string,
  hint: string,
): Diagnostic {
  return { severity: 'error', code, message, hint, ...definedOnly(at) };
}

export function warning(
  code: DiagnosticCode,
  at: DiagnosticLocation,
  message: string,
  hint: string,
): Diagnostic {
  return { severity: 'warning', code, message, hint, ...definedOnly(at) };
}

function definedOnly(at: DiagnosticLocation): DiagnosticLocation {
  const out: DiagnosticLocation = {};
  if (at.version !== undefined) out.version = at.version;
  if (at.ruleIndex !== undefined) out.ruleIndex = at.ruleIndex;
  if (at.path !== undefined) out.path = at.path;
  return out;
}

export function isError(diagnostic: Diagnostic): boolean {
  return diagnostic.severity === 'error';
}

/** One line, e.g. `error UnknownPath spokes[v1].rules[2] spec.sise: … Fix: …`. */
export function formatDiagnostic(d: Diagnostic): string {
  const where = [
    d.version === undefined ? undefined : `spokes[${d.version}]`,
    d.ruleIndex === undefined ? undefined : `rules[${d.ruleIndex}]`,
  ]
    .filter((part) => part !== undefined)
    .join('.');
  const location = [where, d.path].filter((part) => part).join(' ');
  return `${d.severity} ${d.code}${location ? ` ${location}` : ''}: ${d.message} Fix: ${d.hint}`;
}
