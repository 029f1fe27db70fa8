// Differential test against the reference conversion engine (TeraSky-OSS/declarative-conversion-
// operator, pinned by scripts/lib/build-reference.sh): every config of the reference's own corpus
// (corpus.ts) is compiled by both engines, and every object of it is converted from its version to
// each other version of the target by both. They must agree: the same converted object, or both
// refusing (the messages are not compared). A difference fails the case unless
// deliberate-differences.ts explains it; a crash of either side always fails it.
//
// Normalisation: none. The reference's engine leaves apiVersion to its webhook server, which sets
// it to the review's desiredAPIVersion and restores metadata when the result lacks it; the harness
// does both, exactly as that server does (harness/convert.go), so the reference side is what a
// client of the reference receives. Switchyard's convert sets apiVersion and metadata itself. Both
// sides travel through JSON (the harness decodes numbers as float64, as the reference's webhook
// server does; Switchyard's side is parsed from and serialised to JSON, as its webhook server
// does), so numbers compare as a client sees them, and key order does not matter.
//
// Also checked, on Switchyard alone: a round trip spoke → hub → spoke gives back the input wherever
// Switchyard's plan says spoke → hub is lossless, and hub → spoke → hub wherever it says hub →
// spoke is (router.spokes.get(v).lossless); only metadata is normalised, to the `{}` the protocol
// requires of a converted object that had none.
//
// Each case is its own test, so a strategy's implementer sees exactly which cases it turns green.
// After the run the suite prints every difference found, grouped by cause.
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { crdConfigSpecSchema, xrdConfigSpecSchema } from '../../src/api/conversion-config.ts';
import { STRATEGIES } from '../../src/api/rules.ts';
import { compile, type TargetVersion } from '../../src/engine/compile.ts';
import { convertOwned } from '../../src/engine/convert.ts';
import { formatDiagnostic, isError } from '../../src/engine/diagnostics.ts';
import { isJsonObject, type JsonObject } from '../../src/engine/json.ts';
import type { Router } from '../../src/engine/plan.ts';
import { type CorpusCase, type CorpusObject, loadCorpus } from './corpus.ts';
import {
  DELIBERATE_DIFFERENCES,
  type DeliberateDifference,
  type FindingKind,
} from './deliberate-differences.ts';
import {
  type CompileOutcome,
  type ConvertOutcome,
  HarnessExited,
  HarnessTimeout,
  ReferenceEngine,
} from './reference-engine.ts';

const corpus = loadCorpus();

interface Finding {
  case: string;
  kind: FindingKind;
  cause: string;
  strategies: string[];
  from?: string;
  to?: string;
  object?: string;
  reference: string;
  switchyard: string;
  /** For conversions and round trips: the two values compared (reference or expected first). */
  values?: [unknown, unknown];
  explainedBy?: DeliberateDifference;
}

// --- Switchyard's side

type SwitchyardCompile =
  | { ok: true; router: Router }
  | { ok: false; stage: 'parse' | 'compile'; why: string }
  | { ok: false; stage: 'crash'; why: string };

/** Parses the spec as Switchyard's admission does (the spec schema applies ruleSchema to every rule), then compiles. */
function switchyardCompile(spec: JsonObject, versions: readonly TargetVersion[]): SwitchyardCompile {
  try {
    const schema = isJsonObject(spec.targetCRD) ? crdConfigSpecSchema : xrdConfigSpecSchema;
    const parsed = schema.safeParse(spec);
    if (!parsed.success) {
      const why = parsed.error.issues.map((i) => `${i.path.join('.') || 'spec'}: ${i.message}`).join('; ');
      return { ok: false, stage: 'parse', why };
    }
    const result = compile(parsed.data, versions);
    if (!result.ok) {
      const why = result.diagnostics.filter(isError).map(formatDiagnostic).join('; ');
      return { ok: false, stage: 'compile', why };
    }
    return { ok: true, router: result.router };
  } catch (err) {
    return { ok: false, stage: 'crash', why: errorText(err) };
  }
}

type SwitchyardConvert = { ok: true; object: unknown } | { ok: false; error: string } | { crash: string };

/** As Switchyard's webhook server converts a review's object: parsed from JSON, owned, serialised back. */
function switchyardConvert(router: Router, object: unknown, from: string, to: string): SwitchyardConvert {
  try {
    const result = convertOwned(router, JSON.parse(JSON.stringify(object)), from, to);
    if (!result.ok) return { ok: false, error: result.error.message };
    return { ok: true, object: JSON.parse(JSON.stringify(result.object)) };
  } catch (err) {
    return { crash: errorText(err) };
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

// --- comparing

/** Every strategy a spec uses, ForEach's nested rules included. */
function strategiesOf(spec: JsonObject): string[] {
  const found = new Set<string>();
  const visit = (rules: unknown) => {
    if (!Array.isArray(rules)) return;
    for (const rule of rules) {
      if (!isJsonObject(rule)) continue;
      if (typeof rule.strategy === 'string') found.add(rule.strategy);
      if (isJsonObject(rule.forEach)) visit(rule.forEach.rules);
    }
  };
  for (const spoke of Array.isArray(spec.spokes) ? spec.spokes : [])
    if (isJsonObject(spoke)) visit(spoke.rules);
  return [...found].sort();
}

const SUPPORTED: ReadonlySet<string> = new Set(STRATEGIES);

/**
 * The strategies Switchyard refused a config for not supporting: named in its messages ("is not
 * implemented yet" from compile, "is not supported" from the rule schema), else, when the spec did
 * not parse, those the rule schema does not list.
 */
function unsupported(strategies: readonly string[], why: string, parseStage: boolean): string[] {
  const named = [...why.matchAll(/strategy "?(\w+)"? is not (?:implemented|supported)/g)].flatMap((m) =>
    m[1] ? [m[1]] : [],
  );
  if (named.length > 0) return [...new Set(named)].sort();
  return parseStage ? strategies.filter((s) => !SUPPORTED.has(s)) : [];
}

/** Up to `limit` paths where two JSON values differ, each with both values. */
function differences(a: unknown, b: unknown, path = '', limit = 6): string[] {
  if (isDeepStrictEqual(a, b)) return [];
  const both = (x: unknown, y: unknown) =>
    (isJsonObject(x) && isJsonObject(y)) || (Array.isArray(x) && Array.isArray(y));
  if (!both(a, b)) return [`${path || '.'}: reference ${short(a)} · switchyard ${short(b)}`];
  const keys = new Set([...Object.keys(a as object), ...Object.keys(b as object)]);
  const out: string[] = [];
  for (const key of keys) {
    const at = Array.isArray(a) ? `${path}[${key}]` : path ? `${path}.${key}` : key;
    out.push(...differences((a as JsonObject)[key], (b as JsonObject)[key], at, limit - out.length));
    if (out.length >= limit) break;
  }
  return out;
}

function short(value: unknown, max = 160): string {
  const text = value === undefined ? '(absent)' : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

function explain(finding: Finding): DeliberateDifference | undefined {
  if (finding.kind === 'crash') return undefined; // a crash is never deliberate
  return DELIBERATE_DIFFERENCES.find(
    (d) =>
      d.kind === finding.kind &&
      (typeof d.case === 'string' ? d.case === finding.case : d.case.test(finding.case)) &&
      (d.from === undefined || d.from === finding.from) &&
      (d.to === undefined || d.to === finding.to) &&
      (d.applies === undefined ||
        (finding.values !== undefined &&
          d.applies({ ok: true, object: finding.values[0] }, { ok: true, object: finding.values[1] }))),
  );
}

/** The input as a converted object must come back: with metadata (`{}` if it had none). */
function withMetadata(object: JsonObject): JsonObject {
  return object.metadata === undefined || object.metadata === null ? { ...object, metadata: {} } : object;
}

// --- the run

let reference: ReferenceEngine;
const findings: Finding[] = [];
/** Per case: how each side compiled, and how many conversions were compared. */
const outcomes: { case: string; reference: string; switchyard: string; conversions: number }[] = [];

/** The harness process died or hung: a crash of the reference, and the end of its handles. */
type HarnessLost = { crash: string; harnessLost: true };

/** A reference call; a dead or hung harness is a crash of the reference, and a fresh harness takes over. */
async function referenceCall<T>(call: (engine: ReferenceEngine) => Promise<T>): Promise<T | HarnessLost> {
  try {
    return await call(reference);
  } catch (err) {
    if (!(err instanceof HarnessExited || err instanceof HarnessTimeout)) throw err;
    await reference.close().catch(() => {});
    reference = ReferenceEngine.start();
    return { crash: err.message, harnessLost: true };
  }
}

function describeRefConvert(outcome: ConvertOutcome | HarnessLost): string {
  if ('crash' in outcome) return `CRASH ${short(outcome.crash, 400)}`;
  return outcome.ok ? short(outcome.object) : `refused: ${short(outcome.error, 300)}`;
}

function describeSyConvert(outcome: SwitchyardConvert): string {
  if ('crash' in outcome) return `CRASH ${short(outcome.crash, 400)}`;
  return outcome.ok ? short(outcome.object) : `refused: ${short(outcome.error, 300)}`;
}

function describeRefCompile(outcome: CompileOutcome | HarnessLost): string {
  if ('crash' in outcome) return `CRASH ${short(outcome.crash, 400)}`;
  if (outcome.ok) return 'compiles';
  // A spoke with errors: its errors say more than the summary.
  const errors = outcome.spokes.flatMap((s) => s.errors.map((e) => `[${s.version}] ${e}`));
  return `refused (${outcome.stage}): ${short(errors.length > 0 ? errors.join('; ') : outcome.error, 400)}`;
}

async function compareCase(c: CorpusCase): Promise<Finding[]> {
  const out: Finding[] = [];
  const strategies = strategiesOf(c.spec);
  const add = (f: Omit<Finding, 'case' | 'strategies'>) => {
    const finding: Finding = { case: c.name, strategies, ...f };
    finding.explainedBy = explain(finding);
    out.push(finding);
  };
  const ref = await referenceCall((engine) => engine.compile(c.spec, c.versions));
  const sy = switchyardCompile(c.spec, c.versions);
  const refText = describeRefCompile(ref);
  const syText = sy.ok
    ? 'compiles'
    : `${sy.stage === 'crash' ? 'CRASH' : `refused (${sy.stage})`}: ${short(sy.why, 400)}`;
  if ('crash' in ref || (!sy.ok && sy.stage === 'crash')) {
    add({ kind: 'crash', cause: 'crash while compiling', reference: refText, switchyard: syText });
    return out;
  }
  const refHandle = ref.ok ? ref.handle : undefined;
  const outcome = { case: c.name, reference: refText, switchyard: syText, conversions: 0 };
  outcomes.push(outcome);
  try {
    if ((refHandle !== undefined) !== sy.ok) {
      const missing = sy.ok ? [] : unsupported(strategies, sy.why, sy.stage === 'parse');
      const cause =
        missing.length > 0
          ? `unsupported strategy: ${missing.join(', ')}`
          : sy.ok
            ? 'compile: Switchyard compiles, the reference refuses'
            : `compile: the reference compiles, Switchyard refuses (${sy.stage})`;
      add({ kind: 'compile', cause, reference: refText, switchyard: syText });
      return out;
    }
    if (refHandle === undefined || !sy.ok) return out; // both refuse: they agree
    for (const item of c.objects) {
      for (const target of c.versions) {
        if (target.name === item.version) continue;
        const refCrashed = await compareConversion(refHandle, sy.router, item, target.name, add);
        outcome.conversions++;
        // The harness that held the handle is gone (a fresh one has taken over): stop the case.
        if (refCrashed) return out;
      }
    }
    roundTrips(sy.router, c.objects, add);
  } finally {
    if (refHandle !== undefined) await referenceCall((engine) => engine.release(refHandle)).catch(() => {});
  }
  return out;
}

async function compareConversion(
  handle: number,
  router: Router,
  item: CorpusObject,
  to: string,
  add: (f: Omit<Finding, 'case' | 'strategies'>) => void,
): Promise<boolean> {
  const from = item.version;
  const ref = await referenceCall((engine) => engine.convert(handle, item.object, from, to));
  const sy = switchyardConvert(router, item.object, from, to);
  const at = { from, to, object: item.source };
  if ('crash' in ref || 'crash' in sy) {
    add({
      kind: 'crash',
      cause: 'crash while converting',
      ...at,
      reference: describeRefConvert(ref),
      switchyard: describeSyConvert(sy),
    });
    return 'harnessLost' in ref;
  }
  if (!ref.ok && !sy.ok) return false; // both refuse
  if (ref.ok && sy.ok) {
    const diff = differences(ref.object, sy.object);
    if (diff.length === 0) return false;
    add({
      kind: 'convert',
      cause: 'convert: different output',
      ...at,
      values: [ref.object, sy.object],
      reference: diff.join('\n'),
      switchyard: '(see the paths)',
    });
    return false;
  }
  add({
    kind: 'convert',
    cause: ref.ok
      ? 'convert: Switchyard refuses, the reference converts'
      : 'convert: the reference refuses, Switchyard converts',
    ...at,
    reference: describeRefConvert(ref),
    switchyard: describeSyConvert(sy),
  });
  return false;
}

function roundTrips(
  router: Router,
  objects: readonly CorpusObject[],
  add: (f: Omit<Finding, 'case' | 'strategies'>) => void,
): void {
  const hub = router.hubVersion;
  for (const item of objects) {
    const legs: [string, string][] =
      item.version === hub
        ? [...router.spokes].filter(([, plan]) => plan.lossless.hubToSpoke).map(([spoke]) => [hub, spoke])
        : router.spokes.get(item.version)?.lossless.spokeToHub
          ? [[item.version, hub]]
          : [];
    for (const [from, via] of legs) {
      const there = switchyardConvert(router, item.object, from, via);
      if (!('ok' in there) || !there.ok) continue; // refused (or crashed: the conversion comparison reports it)
      const back = switchyardConvert(router, there.object, via, from);
      const expected = withMetadata(item.object);
      if ('ok' in back && back.ok && isDeepStrictEqual(back.object, expected)) continue;
      add({
        kind: 'round-trip',
        cause: `round trip: ${from === hub ? 'hub → spoke → hub' : 'spoke → hub → spoke'} declared lossless, not the identity`,
        from,
        to: via,
        object: item.source,
        reference: '(Switchyard only)',
        ...('ok' in back && back.ok ? { values: [expected, back.object] as [unknown, unknown] } : {}),
        switchyard:
          'ok' in back && back.ok ? differences(expected, back.object).join('\n') : describeSyConvert(back),
      });
    }
  }
}

function table(rows: readonly Finding[]): string {
  return rows
    .map((f) => {
      const where = f.from ? ` ${f.from}→${f.to}${f.object ? ` [${f.object}]` : ''}` : '';
      const why = f.explainedBy ? `\n    deliberate: ${f.explainedBy.what}` : '';
      return `• ${f.case} · ${f.kind}${where}\n    reference:  ${f.reference.replaceAll('\n', '\n                ')}\n    switchyard: ${f.switchyard.replaceAll('\n', '\n                ')}${why}`;
    })
    .join('\n');
}

function report(): string {
  const byCause = new Map<string, Finding[]>();
  for (const f of findings) {
    const cause = f.explainedBy ? `${f.cause} [deliberate]` : f.cause;
    byCause.set(cause, [...(byCause.get(cause) ?? []), f]);
  }
  const lines = [`[differential] ${corpus.cases.length} cases, ${findings.length} differences`];
  for (const [cause, rows] of [...byCause].sort((a, b) => b[1].length - a[1].length)) {
    const cases = [...new Set(rows.map((r) => r.case))];
    lines.push(`  ${cause}: ${rows.length} in ${cases.length} case(s)`);
    for (const name of cases) lines.push(`    - ${name}`);
  }
  lines.push('  per case (reference · switchyard · conversions compared):');
  for (const o of outcomes) {
    const side = (text: string) => (text === 'compiles' ? text : text.replace(/:.*/s, ''));
    lines.push(`    ${o.case}: ${side(o.reference)} · ${side(o.switchyard)} · ${o.conversions}`);
  }
  if (corpus.skipped.length > 0) {
    lines.push('  skipped while loading the corpus:');
    for (const s of corpus.skipped) lines.push(`    - ${s.source}: ${s.why}`);
  }
  return lines.join('\n');
}

beforeAll(() => {
  reference = ReferenceEngine.start();
});

afterAll(async () => {
  await reference?.close();
  process.stderr.write(`${report()}\n`);
});

describe('Switchyard and the reference engine agree on the reference corpus', () => {
  it('the corpus is the reference snapshot, unreduced', () => {
    if (corpus.cases.length === 0) throw new Error(`no conversion config found under ${corpus.root}`);
    if (corpus.skipped.length > 0)
      throw new Error(`configs that could not be read:\n${JSON.stringify(corpus.skipped, null, 2)}`);
  });

  it('the harness benchmarks a conversion and a compile, and refuses an unknown handle', async () => {
    const c = corpus.cases.find((x) => x.name.startsWith('docs/getting-started.md'));
    const object = c?.objects[0];
    const to = c?.versions.find((v) => v.name !== object?.version)?.name;
    if (!c || !object || !to) throw new Error('the corpus lost the getting-started example');
    const compiled = await reference.compile(c.spec, c.versions);
    if (!compiled.ok)
      throw new Error(`the getting-started example does not compile: ${JSON.stringify(compiled)}`);
    const bench = await reference.bench(compiled.handle, object.object, object.version, to, 100);
    const benchCompile = await reference.benchCompile(c.spec, c.versions, 10);
    await reference.release(compiled.handle);
    for (const outcome of [bench, benchCompile]) {
      if (!outcome.ok || !(outcome.nanosPerOp > 0))
        throw new Error(`a benchmark failed: ${JSON.stringify(outcome)}`);
    }
    const released = await reference.convert(compiled.handle, object.object, object.version, to);
    if (released.ok || !('error' in released) || !released.error.includes('no handle'))
      throw new Error(`a released handle still converts: ${JSON.stringify(released)}`);
  });

  it.each(corpus.cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const found = await compareCase(c);
    findings.push(...found);
    const unexplained = found.filter((f) => !f.explainedBy);
    if (unexplained.length > 0) {
      const notes = c.notes.length > 0 ? `\ncorpus notes: ${c.notes.join('; ')}` : '';
      throw new Error(
        `${unexplained.length} difference(s) from the reference engine not listed in deliberate-differences.ts (strategies: ${found[0]?.strategies.join(', ') || 'none'}):\n${table(unexplained)}${notes}`,
      );
    }
  });

  // Issue 45's acceptance, named: the reference's end-to-end config, its kitchen sink (every
  // strategy in one config) and every step of its crossplane-xr-multiversion walkthrough are in
  // the corpus, and both engines compile and convert them (the cases above show they agree).
  it.each([
    ['the kitchen sink (all 29 strategies)', /^internal\/cli\/testdata\/full\/config\.yaml/],
    ['the end-to-end XRD config', /^test\/e2e\/testdata\/xrdconversionconfig\.yaml/],
    ['the end-to-end CRD config', /^test\/e2e\/testdata\/crdconversionconfig\.yaml/],
    ...['02-add-v2', '03-promote-v2', '04-add-v3', '05-promote-v3', '06-deprecate-v1'].map(
      (step) =>
        [`walkthrough step ${step}`, new RegExp(`^examples/crossplane-xr-multiversion/${step}/`)] as const,
    ),
  ] as const)('%s compiles and converts in both engines', (_what, pattern) => {
    const cases = outcomes.filter((o) => pattern.test(o.case));
    if (cases.length === 0) throw new Error(`no corpus case matches ${pattern}`);
    for (const o of cases) {
      if (o.reference !== 'compiles' || o.switchyard !== 'compiles' || o.conversions === 0)
        throw new Error(
          `${o.case}: reference ${o.reference} · switchyard ${o.switchyard} · ${o.conversions} conversions`,
        );
    }
  });
});
