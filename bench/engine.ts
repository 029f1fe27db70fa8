// Conversion engine benchmark: compile cost for a fleet of targets, retained memory per
// compiled target, and convert throughput against the floor of a JSON parse-and-stringify copy
// (the work a webhook does for every object anyway).
//
//   node --expose-gc bench/engine.ts
//
// Reference figures (TeraSky-OSS/declarative-conversion-operator, BenchmarkInitialSync with
// 50-leaf XRDs, and its retained-plan benchmark): 1,000 targets compile in 825 ms serial,
// 391 ms in parallel on 24 cores; ~18 KiB retained per target.
import { ruleSchema } from '../src/api/rules.ts';
import { type ConversionSpec, compile } from '../src/engine/compile.ts';
import { convert, convertOwned } from '../src/engine/convert.ts';
import type { Router } from '../src/engine/plan.ts';
import { targetVersions } from '../src/engine/target-versions.ts';
import { configSpec, hubObject, target } from './fleet.ts';

const TARGETS = 1000;
const OBJECTS = 2000;
const CONVERT_ROUNDS = 10;

/** The config as the engine compiles it: rules parsed as the config handler parses them. */
function config(i: number): ConversionSpec {
  const spec = configSpec(i);
  return {
    ...spec,
    spokes: spec.spokes.map((s) => ({ ...s, rules: s.rules.map((r) => ruleSchema.parse(r)) })),
  };
}

function gc(): boolean {
  const collect = (globalThis as { gc?: () => void }).gc;
  if (!collect) return false;
  collect();
  collect();
  return true;
}

function compileAll(targets: ReturnType<typeof target>[], configs: ConversionSpec[]): Router[] {
  return targets.map((t, i) => {
    const result = compile(configs[i] as ConversionSpec, targetVersions(t));
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
    return result.router;
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function timeIt(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

const targets = Array.from({ length: TARGETS }, (_, i) => target(i));
const configs = Array.from({ length: TARGETS }, (_, i) => config(i));

// Compile: a cold first pass (what a webhook-server replica pays at start), then the median of
// five warm passes.
const coldMs = timeIt(() => compileAll(targets, configs));
const warmMs = median(Array.from({ length: 5 }, () => timeIt(() => compileAll(targets, configs))));

// Retained memory: heap held by the routers alone; the inputs stay alive across both readings.
let retainedPerTarget: number | undefined;
if (gc()) {
  const before = process.memoryUsage().heapUsed;
  const routers = compileAll(targets, configs);
  gc();
  const after = process.memoryUsage().heapUsed;
  retainedPerTarget = (after - before) / routers.length;
}

// Convert throughput: the 10-rule hub → v2 plan against a JSON parse-and-stringify copy of the
// same objects, the work a webhook does for every object whatever the engine does.
const router = compileAll(
  [targets[0] as ReturnType<typeof target>],
  [configs[0] as ConversionSpec],
)[0] as Router;
const objects = Array.from({ length: OBJECTS }, (_, i) => hubObject(i));
const runConvert = () => {
  for (const o of objects) {
    const r = convert(router, o, 'v3', 'v2');
    if (!r.ok) throw new Error(r.error.message);
  }
};
// What the webhook-server runs: objects just parsed from a review, given away to the engine.
const parsedObjects = objects.map((o) => JSON.parse(JSON.stringify(o)) as unknown);
const runConvertOwned = () => {
  for (const o of parsedObjects) {
    const r = convertOwned(router, o, 'v3', 'v2');
    if (!r.ok) throw new Error(r.error.message);
  }
};
const runClone = () => {
  for (const o of objects) JSON.parse(JSON.stringify(o));
};
for (let i = 0; i < 3; i++) {
  runConvert();
  runConvertOwned();
  runClone();
}
const rate = (fn: () => void) =>
  (OBJECTS * 1000) / median(Array.from({ length: CONVERT_ROUNDS }, () => timeIt(fn))) ||
  Number.POSITIVE_INFINITY;
const convertRate = rate(runConvert);
const convertOwnedRate = rate(runConvertOwned);
const cloneRate = rate(runClone);

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
const rows = [
  [
    'compile 1,000 targets × 3 versions × 50 leaves, serial, cold',
    `${fmt(coldMs)} ms`,
    '≤ 825 ms serial (391 ms on 24 cores)',
  ],
  ['compile 1,000 targets, serial, warm (median of 5)', `${fmt(warmMs)} ms`, '≤ 825 ms serial'],
  [
    'retained per compiled target (after gc)',
    retainedPerTarget === undefined ? 'run with --expose-gc' : `${(retainedPerTarget / 1024).toFixed(1)} KiB`,
    '≤ 18 KiB',
  ],
  ['convert hub → spoke, 10-rule plan', `${fmt(convertRate)} objects/s`, ''],
  [
    'the same, input given away (convertOwned, as a review)',
    `${fmt(convertOwnedRate)} objects/s (${(1e6 / convertOwnedRate).toFixed(2)} µs each)`,
    '',
  ],
  ['JSON parse-and-stringify copy of the same objects (floor)', `${fmt(cloneRate)} objects/s`, ''],
  ['convert / copy floor', (convertRate / cloneRate).toFixed(2), '≥ 0.5'],
];
console.log(`Node ${process.version}, ${process.platform}/${process.arch}`);
console.log('| measure | result | target |\n|---|---|---|');
for (const [measure, result, goal] of rows) console.log(`| ${measure} | ${result} | ${goal} |`);
