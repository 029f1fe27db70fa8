// Per strategy, Switchyard's conversion throughput and compile time beside the reference
// operator's engine (TeraSky-OSS/declarative-conversion-operator, built by
// scripts/lib/build-reference.sh, run with GOMAXPROCS=2), in the same run:
//
//   source scripts/lib/bootstrap.sh && ensure_reference && node bench/strategies.ts
//
// Each strategy's worked example (src/engine/strategy-reference/examples.ts, the one
// docs/strategies.md shows) is the config; its hub object is converted to the spoke, and its spoke
// object to the hub. Both sides do what a webhook does per object: decode it from JSON bytes,
// convert, encode the result. The compile figure is 1,000 targets, target i using the example of
// strategy i mod 29, so every strategy is compiled ~34 times; the reference compiles the same
// configs (its webhook server's path: structural checks, rule translation, Analyze, Router).
import { compile } from '../src/engine/compile.ts';
import { convertOwned } from '../src/engine/convert.ts';
import type { Router } from '../src/engine/plan.ts';
import { STRATEGY_EXAMPLES, type StrategyExample } from '../src/engine/strategy-reference/examples.ts';
import { exampleObject, exampleSpec, exampleVersions } from '../src/engine/strategy-reference/render.ts';
import { ReferenceEngine } from '../test/reference-engine/reference-engine.ts';

const HUB = 'v2';
const SPOKE = 'v1';
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 20_000);
const TARGETS = 1000;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Objects per second through decode, convert and encode, the median of three runs. */
function switchyardRate(router: Router, object: unknown, from: string, to: string): number {
  const bytes = JSON.stringify(object);
  const run = () => {
    const start = performance.now();
    for (let i = 0; i < ITERATIONS; i++) {
      const result = convertOwned(router, JSON.parse(bytes), from, to);
      if (!result.ok) throw new Error(result.error.message);
      JSON.stringify(result.object);
    }
    return performance.now() - start;
  };
  run();
  return (ITERATIONS * 1000) / median([run(), run(), run()]);
}

function apiSpec(example: StrategyExample) {
  return {
    targetCRD: { name: 'widgets.example.org' },
    hubVersion: HUB,
    spokes: [{ version: SPOKE, rules: example.rules }],
  };
}

async function referenceRate(
  reference: ReferenceEngine,
  handle: number,
  object: unknown,
  from: string,
  to: string,
): Promise<number> {
  await reference.bench(handle, object, from, to, Math.ceil(ITERATIONS / 4));
  const runs: number[] = [];
  for (let i = 0; i < 3; i++) {
    const outcome = await reference.bench(handle, object, from, to, ITERATIONS);
    if (!outcome.ok) throw new Error(`the reference cannot convert: ${JSON.stringify(outcome)}`);
    runs.push(outcome.opsPerSecond);
  }
  return median(runs);
}

function routerOf(example: StrategyExample): Router {
  const compiled = compile(exampleSpec(example), exampleVersions(example));
  if (!compiled.ok) throw new Error(`the ${example.strategy} example does not compile`);
  return compiled.router;
}

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

export async function benchStrategies(): Promise<void> {
  const reference = ReferenceEngine.start({ env: { GOMAXPROCS: '2' }, timeoutMs: 300_000 });
  try {
    console.log(
      `\nPer strategy, objects/s through decode + convert + encode (${fmt(ITERATIONS)} per run, median of 3); reference with GOMAXPROCS=2`,
    );
    console.log('| strategy | direction | Switchyard | reference | ratio |\n|---|---|---|---|---|');
    const ratios: number[] = [];
    for (const example of STRATEGY_EXAMPLES) {
      const router = routerOf(example);
      const compiled = await reference.compile(apiSpec(example), exampleVersions(example));
      if (!compiled.ok) throw new Error(`the reference refuses the ${example.strategy} example`);
      for (const [from, to, source] of [
        [HUB, SPOKE, example.hubObject],
        [SPOKE, HUB, example.spokeObject],
      ] as const) {
        const object = exampleObject(source, from);
        const ours = switchyardRate(router, object, from, to);
        const theirs = await referenceRate(reference, compiled.handle, object, from, to);
        ratios.push(ours / theirs);
        console.log(
          `| ${example.strategy} | ${from} → ${to} | ${fmt(ours)} | ${fmt(theirs)} | ${(ours / theirs).toFixed(2)}× |`,
        );
      }
      await reference.release(compiled.handle);
    }
    console.log(`lowest ratio ${Math.min(...ratios).toFixed(2)}× (target ≥ 1.0× for every strategy)`);
    await benchCompile(reference);
  } finally {
    await reference.close();
  }
}

/** 1,000 targets, target i the example of strategy i mod 29: Switchyard serial, cold then warm, beside the reference's sum. */
async function benchCompile(reference: ReferenceEngine): Promise<void> {
  const examples = Array.from(
    { length: TARGETS },
    (_, i) => STRATEGY_EXAMPLES[i % STRATEGY_EXAMPLES.length] as StrategyExample,
  );
  const inputs = examples.map((e) => ({ spec: exampleSpec(e), versions: exampleVersions(e) }));
  const compileAll = () => {
    const start = performance.now();
    for (const { spec, versions } of inputs)
      if (!compile(spec, versions).ok) throw new Error('a target does not compile');
    return performance.now() - start;
  };
  const cold = compileAll();
  const warm = median([compileAll(), compileAll(), compileAll(), compileAll(), compileAll()]);
  let referenceMs = 0;
  for (const example of STRATEGY_EXAMPLES) {
    const count = examples.filter((e) => e === example).length;
    const outcome = await reference.benchCompile(apiSpec(example), exampleVersions(example), 200);
    if (!outcome.ok) throw new Error(`the reference cannot compile the ${example.strategy} example`);
    referenceMs += (outcome.nanosPerOp * count) / 1e6;
  }
  console.log(`\nCompile ${fmt(TARGETS)} targets using every strategy (one example each, in turn), serial`);
  console.log('| measure | Switchyard | reference (warm, GOMAXPROCS=2) | ratio |\n|---|---|---|---|');
  console.log(
    `| cold | ${cold.toFixed(0)} ms | ${referenceMs.toFixed(0)} ms | ${(cold / referenceMs).toFixed(2)}× |`,
  );
  console.log(
    `| warm (median of 5) | ${warm.toFixed(0)} ms | ${referenceMs.toFixed(0)} ms | ${(warm / referenceMs).toFixed(2)}× |`,
  );
  console.log('(target: ≤ 1.0× the reference)');
}

if (import.meta.main) await benchStrategies();
