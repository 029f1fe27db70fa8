// The fleet the engine and webhook-server benchmarks share: targets of three versions with 50
// leaves each, their 10-rule configs, and typical objects at the hub version.
//
// A target is a CRD whose versions are 50 leaves each: 40 in five nested objects, 8 top-level
// spec fields, 2 status fields. The hub (v3) differs from v2 by 10 rules (FieldRename ×6,
// EnumRemap ×2, Constant, Delete) and from v1 by 4.
import type { TargetSchema } from '../src/engine/schema.ts';

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

/** The CRD `widgets<i>.example.org`, hub v3 stored. */
export function target(i: number) {
  const seed = i;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets${i}.example.org` },
    spec: {
      group: 'example.org',
      scope: 'Namespaced',
      names: { plural: `widgets${i}`, singular: `widget${i}`, kind: `Widget${i}` },
      versions: (['v3', 'v2', 'v1'] as const).map((name) => ({
        name,
        served: true,
        storage: name === 'v3',
        schema: { openAPIV3Schema: versionSchema(name, seed) },
      })),
    },
  };
}

/** The config spec's hub and spokes, its rules as a user writes them (unparsed). */
export function configSpec(i: number) {
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
      { version: 'v2', rules: v2 },
      { version: 'v1', rules: v1 },
    ],
  };
}

/** An object of the target at its hub version: metadata, 50 spec leaves, status. */
export function hubObject(i: number) {
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
