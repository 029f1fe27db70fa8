// Assignment benchmark: 100,000 targets over 16 instances, then a 17th joins.
//   node bench/assignment.ts
// Weighted rendezvous (src/core/assignment.ts) side by side, in the same run, with a consistent
// hash ring of 100 virtual nodes per instance and with round-robin over the sorted targets.
// Times are the median of several runs after a warm-up.
import type { ConversionConfig } from '../src/api/conversion-config.ts';
import { assignAll, type InstanceLike } from '../src/core/assignment.ts';
import { drawFrom, prefixState } from '../src/core/rendezvous-hash.ts';
import { targetNames } from './target-names.ts';

const TARGETS = 100_000;
const INSTANCES = 16;
const RING_VNODES = 100;
const RUNS = 9;

type Assign = (targets: readonly string[], instances: readonly Member[]) => string[];

interface Member {
  name: string;
  weight: number;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function sampleMs(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Median times of several functions, sampled in alternation so drift and GC hit each alike. */
function medianMs(...fns: Array<() => unknown>): number[] {
  for (const fn of fns) fn();
  const samples = fns.map(() => [] as number[]);
  for (let run = 0; run < RUNS; run++) {
    fns.forEach((fn, i) => {
      samples[i]?.push(sampleMs(fn));
    });
  }
  return samples.map(median);
}

function configFor(target: string): ConversionConfig {
  return {
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'CRDConversionConfig',
    metadata: { name: `cfg-${target}` },
    spec: { targetCRD: { name: target }, hubVersion: 'v2', spokes: [], conversionReviewVersions: ['v1'] },
  };
}

function asInstances(members: readonly Member[]): InstanceLike[] {
  return members.map((m) => ({
    metadata: { name: m.name },
    spec: { sharding: { enabled: true, weight: m.weight } },
  }));
}

// Timed: assignAll over the configs, exactly what the assign handler runs on a fleet change.
// Untimed: reading the owners back out for the comparison.
const rendezvous =
  (configs: readonly ConversionConfig[]): Assign =>
  (targets, members) => {
    const resolved = assignAll(configs, asInstances(members));
    return targets.map((t) => {
      const r = resolved.get(t);
      return r?.ok ? r.instance : '';
    });
  };

// The floor: the same (instance, target) draws, with nothing else done with them.
function hashFloor(targets: readonly string[], members: readonly Member[]): number {
  const prefixes = members.map((m) => prefixState(m.name));
  let sink = 0;
  for (const t of targets) for (const p of prefixes) sink += drawFrom(p, t);
  return sink;
}

// Karger ring with virtual nodes, on the same hash so only the placement scheme differs.
function ringAssign(targets: readonly string[], members: readonly Member[]): string[] {
  const tokens: Array<{ point: number; owner: string }> = [];
  const ringPrefix = prefixState('ring');
  for (const m of members) {
    for (let v = 0; v < RING_VNODES * m.weight; v++)
      tokens.push({ point: drawFrom(ringPrefix, `${m.name}#${v}`), owner: m.name });
  }
  tokens.sort((a, b) => a.point - b.point);
  const points = Float64Array.from(tokens.map((t) => t.point));
  return targets.map((target) => {
    const h = drawFrom(ringPrefix, target);
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((points[mid] as number) < h) lo = mid + 1;
      else hi = mid;
    }
    return (tokens[lo === points.length ? 0 : lo] as { owner: string }).owner;
  });
}

function roundRobinAssign(targets: readonly string[], members: readonly Member[]): string[] {
  const sorted = [...targets].sort();
  const rank = new Map(sorted.map((t, i) => [t, i]));
  return targets.map((t) => (members[(rank.get(t) as number) % members.length] as Member).name);
}

function worstShareError(owners: readonly string[], members: readonly Member[]): number {
  const total = members.reduce((s, m) => s + m.weight, 0);
  const counts = new Map<string, number>();
  for (const o of owners) counts.set(o, (counts.get(o) ?? 0) + 1);
  return Math.max(
    ...members.map((m) => {
      const expected = m.weight / total;
      return Math.abs((counts.get(m.name) ?? 0) / owners.length - expected) / expected;
    }),
  );
}

interface Row {
  scheme: string;
  recomputeMs: number;
  moved: number;
  ontoNew: number;
  shareError: number;
}

function measure(
  scheme: string,
  assign: Assign,
  recomputeMs: number,
  targets: string[],
  members: Member[],
  newcomer: Member,
): Row {
  const before = assign(targets, members);
  const after = assign(targets, [...members, newcomer]);
  let moved = 0;
  let ontoNew = 0;
  for (let i = 0; i < targets.length; i++) {
    if (before[i] !== after[i]) {
      moved++;
      if (after[i] === newcomer.name) ontoNew++;
    }
  }
  return {
    scheme,
    recomputeMs,
    moved: moved / targets.length,
    ontoNew: moved === 0 ? 1 : ontoNew / moved,
    shareError: worstShareError(before, members),
  };
}

function pct(x: number, digits = 2): string {
  return `${(x * 100).toFixed(digits)}%`;
}

function run(label: string, weights: (i: number) => number): void {
  const targets = targetNames(TARGETS);
  const configs = targets.map(configFor);
  const members = Array.from({ length: INSTANCES }, (_, i) => ({
    name: `cws-${String(i).padStart(2, '0')}`,
    weight: weights(i),
  }));
  const newcomer = { name: 'cws-16', weight: weights(16) };
  const totalAfter = members.reduce((s, m) => s + m.weight, 0) + newcomer.weight;
  const optimalMove = newcomer.weight / totalAfter;

  const instances = asInstances(members);
  const [floorMs, rendezvousMs, ringMs, roundRobinMs] = medianMs(
    () => hashFloor(targets, members),
    () => assignAll(configs, instances),
    () => ringAssign(targets, members),
    () => roundRobinAssign(targets, members),
  ) as [number, number, number, number];
  const rows = [
    measure('weighted rendezvous', rendezvous(configs), rendezvousMs, targets, members, newcomer),
    measure(`ring, ${RING_VNODES} vnodes`, ringAssign, ringMs, targets, members, newcomer),
    measure('round-robin', roundRobinAssign, roundRobinMs, targets, members, newcomer),
  ];
  console.log(`\n${label}: ${TARGETS.toLocaleString('en')} targets × ${INSTANCES} instances, then a 17th`);
  console.log(
    `hash floor (${(TARGETS * INSTANCES).toLocaleString('en')} draws): ${floorMs.toFixed(1)} ms; optimal move on adding the 17th: ${pct(optimalMove)}`,
  );
  console.log(
    '| scheme | full recompute | vs hash floor | moved on +1 | moved / optimal | moves onto new | worst share error |',
  );
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.scheme} | ${r.recomputeMs.toFixed(1)} ms | ${(r.recomputeMs / floorMs).toFixed(2)}× | ${pct(r.moved)} | ${(r.moved / optimalMove).toFixed(3)}× | ${pct(r.ontoNew, 1)} | ${pct(r.shareError)} |`,
    );
  }
}

run('Equal weights', () => 1);
run('Weights 1–4 (instance i has weight 1 + i mod 4)', (i) => 1 + (i % 4));
