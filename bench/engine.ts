// Conversion engine benchmark: compile cost for a fleet of targets, retained memory per
// compiled target, and convert throughput against the floor of a plain deep copy.
//
//   node --expose-gc bench/engine.ts
//
// Reference figures (TeraSky-OSS/declarative-conversion-operator, BenchmarkInitialSync with
// 50-leaf XRDs, and its retained-plan benchmark): 1,000 targets compile in 825 ms serial,
// 391 ms in parallel on 24 cores; ~18 KiB retained per target.
import { ruleSchema } from '../src/api/rules.ts';
import { type ConversionSpec, compile } from '../src/engine/compile.ts';
import { convert } from '../src/engine/convert.ts';
import type { Router } from '../src/engine/plan.ts';
import type { TargetSchema } from '../src/engine/schema.ts';
import { targetVersions } from '../src/engine/target-versions.ts';

const TARGETS = 1000;
const OBJECTS = 2000;
const CONVERT_ROUNDS = 10;

const str = (): TargetSchema => ({ type: 'string' });
const int = (): TargetSchema => ({ type: 'integer' });
const enumOf = (...values: string[]): TargetSchema => ({ type: 'string', enum: values });
const obj = (properties: Record<string, TargetSchema>): TargetSchema => ({ type: 'object', properties });

/**
 * 50 leaves per version: 40 in five nested groups, 8 top-level spec fields, 2 in status.
 * v3 (the hub) and v2 differ by ten rules' worth of changes, v1 by five.
 */
function versionSchema(version: 'v1' | 'v2' | 'v3', seed: number): TargetSchema {
  const groups: Record<string, TargetSchema> = {};
  for (let g = 0; g < 5; g++) {
    const leaves: Record<string, TargetSchema> = {};
    for (let l = 0; l < 8; l++) leaves[`field${seed % 7}x${l}`] = l % 3 === 0 ? int() : str();
    groups[`group${g}`] = obj(leaves);
  }
  const top: Record<string, TargetSchema> = {
    ...groups,
    region: str(),
    zone: str(),
    replicas: int(),
    owner: str(),
    ...(version === 'v3'
      ? { storageGB: str(), size: enumOf('Small', 'Large'), tier: enumOf('Gold', 'Silver') }
      : {}),
    ...(version === 'v2'
      ? { storageSize: str(), size: enumOf('S', 'L'), tier: enumOf('G', 'S'), schemaVersion: str() }
      : {}),
    ...(version === 'v1'
      ? { storageSize: str(), size: enumOf('S', 'L'), tier: enumOf('Gold', 'Silver'), debug: str() }
      : {}),
  };
  if (version === 'v3') top.legacyNote = str();
  if (version === 'v2') {
    // v2 renamed three nested groups' first string field
    for (let g = 0; g < 3; g++) {
      const group = groups[`group${g}`] as TargetSchema & { properties: Record<string, TargetSchema> };
      const name = `field${seed % 7}x1`;
      group.properties[`${name}Renamed`] = group.properties[name] as TargetSchema;
      delete group.properties[name];
    }
  }
  return obj({
    apiVersion: str(),
    kind: str(),
    metadata: { type: 'object' },
    spec: obj(top),
    status: obj({ phase: str(), message: str() }),
  });
}

function target(i: number) {
  const seed = i;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets${i}.example.org` },
    spec: {
      group: 'example.org',
      versions: (['v3', 'v2', 'v1'] as const).map((name) => ({
        name,
        served: true,
        storage: name === 'v3',
        schema: { openAPIV3Schema: versionSchema(name, seed) },
      })),
    },
  };
}

function config(i: number): ConversionSpec {
  const f = `field${i % 7}x1`;
  const rename = (hubPath: string, spokePath: string) => ({
    strategy: 'FieldRename',
    fieldRename: { hubPath, spokePath },
  });
  const remap = (path: string, pairs: [string, string][]) => ({
    strategy: 'EnumRemap',
    enumRemap: { path, mapping: pairs.map(([hub, spoke]) => ({ hub, spoke })) },
  });
  const v2 = [
    rename('spec.storageGB', 'spec.storageSize'),
    rename(`spec.group0.${f}`, `spec.group0.${f}Renamed`),
    rename(`spec.group1.${f}`, `spec.group1.${f}Renamed`),
    rename(`spec.group2.${f}`, `spec.group2.${f}Renamed`),
    rename('status.phase', 'status.phase'),
    remap('spec.size', [
      ['Small', 'S'],
      ['Large', 'L'],
    ]),
    remap('spec.tier', [
      ['Gold', 'G'],
      ['Silver', 'S'],
    ]),
    {
      strategy: 'Constant',
      constant: { path: 'spec.schemaVersion', existsOn: 'Spoke', value: 'v2' },
      acknowledgeLossy: true,
    },
    { strategy: 'Delete', delete: { path: 'spec.legacyNote', existsOn: 'Hub' }, acknowledgeLossy: true },
    rename('spec.region', 'spec.region'),
  ];
  const v1 = [
    rename('spec.storageGB', 'spec.storageSize'),
    remap('spec.size', [
      ['Small', 'S'],
      ['Large', 'L'],
    ]),
    {
      strategy: 'DefaultValue',
      defaultValue: { path: 'spec.debug', existsOn: 'Spoke', default: 'off' },
      acknowledgeLossy: true,
    },
    { strategy: 'Delete', delete: { path: 'spec.legacyNote', existsOn: 'Hub' }, acknowledgeLossy: true },
  ];
  return {
    hubVersion: 'v3',
    spokes: [
      { version: 'v2', rules: v2.map((r) => ruleSchema.parse(r)) },
      { version: 'v1', rules: v1.map((r) => ruleSchema.parse(r)) },
    ],
  };
}

function hubObject(i: number) {
  const group = (g: number) =>
    Object.fromEntries(
      Array.from({ length: 8 }, (_, l) => [`field0x${l}`, l % 3 === 0 ? l * g : `value-${g}-${l}-${i}`]),
    );
  return {
    apiVersion: 'example.org/v3',
    kind: 'Widget',
    metadata: {
      name: `widget-${i}`,
      namespace: 'team-a',
      uid: `00000000-0000-0000-0000-${String(i).padStart(12, '0')}`,
      resourceVersion: String(1000 + i),
      generation: 3,
      labels: { app: 'widget', tier: 'backend' },
      annotations: { 'example.org/owner': 'team-a' },
    },
    spec: {
      region: 'eu-west-1',
      replicas: 3,
      owner: 'team-a',
      storageGB: '500',
      size: i % 2 ? 'Small' : 'Large',
      tier: 'Gold',
      legacyNote: 'n',
      group0: group(0),
      group1: group(1),
      group2: group(2),
      group3: group(3),
      group4: group(4),
    },
    status: { phase: 'Ready', message: 'all good' },
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

// Convert throughput: the 10-rule hub → v2 plan against structuredClone on the same objects.
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
const runClone = () => {
  for (const o of objects) structuredClone(o);
};
for (let i = 0; i < 3; i++) {
  runConvert();
  runClone();
}
const rate = (fn: () => void) =>
  (OBJECTS * 1000) / median(Array.from({ length: CONVERT_ROUNDS }, () => timeIt(fn))) ||
  Number.POSITIVE_INFINITY;
const convertRate = rate(runConvert);
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
  ['structuredClone of the same objects (floor)', `${fmt(cloneRate)} objects/s`, ''],
  ['convert / copy floor', (convertRate / cloneRate).toFixed(2), '≥ 0.5'],
];
console.log(`Node ${process.version}, ${process.platform}/${process.arch}`);
console.log('| measure | result | target |\n|---|---|---|');
for (const [measure, result, goal] of rows) console.log(`| ${measure} | ${result} | ${goal} |`);
