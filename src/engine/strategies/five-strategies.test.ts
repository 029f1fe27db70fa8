import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { Router } from '../plan.ts';
import type { TargetSchema } from '../schema.ts';
import { enumOf, int, obj, object, root, spec, str, versions } from '../test-support.ts';

interface Row {
  name: string;
  hub: Record<string, TargetSchema>;
  spoke: Record<string, TargetSchema>;
  rules: unknown[];
  /** hub spec → expected spoke spec */
  down: [Record<string, unknown>, Record<string, unknown>];
  /** spoke spec → expected hub spec */
  up: [Record<string, unknown>, Record<string, unknown>];
  lossless: { hubToSpoke: boolean; spokeToHub: boolean };
}

const rows: Row[] = [
  {
    name: 'FieldRename moves the value, both ways, losslessly',
    hub: { storageGB: str(), tier: str() },
    spoke: { storageSize: str(), tier: str() },
    rules: [
      { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.storageGB', spokePath: 'spec.storageSize' } },
    ],
    down: [
      { storageGB: '500', tier: 'gold' },
      { storageSize: '500', tier: 'gold' },
    ],
    up: [
      { storageSize: '64', tier: 'gold' },
      { storageGB: '64', tier: 'gold' },
    ],
    lossless: { hubToSpoke: true, spokeToHub: true },
  },
  {
    name: 'FieldRename into a new parent object, without leaving an empty parent behind',
    hub: { size: int() },
    spoke: { disk: obj({ size: int() }) },
    rules: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.disk.size' } }],
    down: [{ size: 3 }, { disk: { size: 3 } }],
    up: [{ disk: { size: 3 } }, { size: 3 }],
    lossless: { hubToSpoke: true, spokeToHub: true },
  },
  {
    name: 'FieldRename of a whole object moves everything under it',
    hub: { storage: obj({ size: int(), class: str() }) },
    spoke: { disk: obj({ size: int(), class: str() }) },
    rules: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'spec.storage', spokePath: 'spec.disk' } }],
    down: [{ storage: { size: 1, class: 'ssd' } }, { disk: { size: 1, class: 'ssd' } }],
    up: [{ disk: { size: 2 } }, { storage: { size: 2 } }],
    lossless: { hubToSpoke: true, spokeToHub: true },
  },
  {
    name: 'FieldRename of an absent field writes nothing',
    hub: { a: str() },
    spoke: { b: str() },
    rules: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'spec.a', spokePath: 'spec.b' } }],
    down: [{}, {}],
    up: [{}, {}],
    lossless: { hubToSpoke: true, spokeToHub: true },
  },
  {
    name: 'Delete existsOn: Spoke drops the value going up, and is a no-op going down',
    hub: { storageGB: str() },
    spoke: { storageGB: str(), debugMode: { type: 'boolean' } },
    rules: [
      { strategy: 'Delete', delete: { path: 'spec.debugMode', existsOn: 'Spoke' }, acknowledgeLossy: true },
    ],
    down: [{ storageGB: '64' }, { storageGB: '64' }],
    up: [{ storageGB: '64', debugMode: true }, { storageGB: '64' }],
    lossless: { hubToSpoke: true, spokeToHub: false },
  },
  {
    name: 'Delete existsOn: Hub drops the value going down, and is a no-op going up',
    hub: { legacy: str(), owner: str() },
    spoke: { owner: str() },
    rules: [{ strategy: 'Delete', delete: { path: 'spec.legacy', existsOn: 'Hub' }, acknowledgeLossy: true }],
    down: [{ legacy: 'x', owner: 'me' }, { owner: 'me' }],
    up: [{ owner: 'me' }, { owner: 'me' }],
    lossless: { hubToSpoke: false, spokeToHub: true },
  },
  {
    name: 'DefaultValue existsOn: Spoke injects going down and drops going up',
    hub: { storageGB: str() },
    spoke: { storageGB: str(), computeUnits: int() },
    rules: [
      {
        strategy: 'DefaultValue',
        defaultValue: { path: 'spec.computeUnits', existsOn: 'Spoke', default: 1 },
        acknowledgeLossy: true,
      },
    ],
    down: [{ storageGB: '500' }, { storageGB: '500', computeUnits: 1 }],
    up: [{ storageGB: '500', computeUnits: 7 }, { storageGB: '500' }],
    lossless: { hubToSpoke: true, spokeToHub: false },
  },
  {
    name: 'DefaultValue existsOn: Hub injects going up and drops going down',
    hub: { replicas: int(), owner: str() },
    spoke: { owner: str() },
    rules: [
      {
        strategy: 'DefaultValue',
        defaultValue: { path: 'spec.replicas', existsOn: 'Hub', default: 3 },
        acknowledgeLossy: true,
      },
    ],
    down: [{ replicas: 5, owner: 'me' }, { owner: 'me' }],
    up: [{ owner: 'me' }, { replicas: 3, owner: 'me' }],
    lossless: { hubToSpoke: false, spokeToHub: true },
  },
  {
    name: 'Constant existsOn: Spoke always writes the constant going down, whatever was there',
    hub: { storageGB: str() },
    spoke: { storageGB: str(), schemaVersion: str() },
    rules: [
      {
        strategy: 'Constant',
        constant: { path: 'spec.schemaVersion', existsOn: 'Spoke', value: 'v2' },
        acknowledgeLossy: true,
      },
    ],
    down: [{ storageGB: '500' }, { storageGB: '500', schemaVersion: 'v2' }],
    up: [{ storageGB: '500', schemaVersion: 'other' }, { storageGB: '500' }],
    lossless: { hubToSpoke: true, spokeToHub: false },
  },
  {
    name: 'Constant existsOn: Hub writes an object constant going up',
    hub: { marker: obj({ kind: str(), rev: int() }), owner: str() },
    spoke: { owner: str() },
    rules: [
      {
        strategy: 'Constant',
        constant: { path: 'spec.marker', existsOn: 'Hub', value: { kind: 'legacy', rev: 1 } },
        acknowledgeLossy: true,
      },
    ],
    down: [{ marker: { kind: 'x', rev: 9 } }, {}],
    up: [{}, { marker: { kind: 'legacy', rev: 1 } }],
    lossless: { hubToSpoke: false, spokeToHub: true },
  },
  {
    name: 'EnumRemap with a one-to-one table is lossless both ways',
    hub: { size: enumOf('Small', 'Medium', 'Large') },
    spoke: { size: enumOf('S', 'M', 'L') },
    rules: [
      {
        strategy: 'EnumRemap',
        enumRemap: {
          path: 'spec.size',
          mapping: [
            { hub: 'Small', spoke: 'S' },
            { hub: 'Medium', spoke: 'M' },
            { hub: 'Large', spoke: 'L' },
          ],
        },
      },
    ],
    down: [{ size: 'Large' }, { size: 'L' }],
    up: [{ size: 'S' }, { size: 'Small' }],
    lossless: { hubToSpoke: true, spokeToHub: true },
  },
  {
    name: 'EnumRemap folding two hub values into one spoke value loses the hub distinction',
    hub: { size: enumOf('Small', 'Tiny', 'Large') },
    spoke: { size: enumOf('S', 'L') },
    rules: [
      {
        strategy: 'EnumRemap',
        enumRemap: {
          path: 'spec.size',
          mapping: [
            { hub: 'Small', spoke: 'S' },
            { hub: 'Tiny', spoke: 'S' },
            { hub: 'Large', spoke: 'L' },
          ],
        },
        acknowledgeLossy: true,
      },
    ],
    down: [{ size: 'Tiny' }, { size: 'S' }],
    up: [{ size: 'S' }, { size: 'Small' }],
    lossless: { hubToSpoke: false, spokeToHub: true },
  },
  {
    name: 'EnumRemap with Drop drops unmapped values (no enum declared)',
    hub: { mode: str() },
    spoke: { mode: str({ format: 'mode' }) },
    rules: [
      {
        strategy: 'EnumRemap',
        enumRemap: {
          path: 'spec.mode',
          mapping: [{ hub: 'fast', spoke: 'quick' }],
          onUnmappedHubValue: 'Drop',
          onUnmappedSpokeValue: 'Drop',
        },
        acknowledgeLossy: true,
      },
    ],
    down: [{ mode: 'slow' }, {}],
    up: [{ mode: 'quick' }, { mode: 'fast' }],
    lossless: { hubToSpoke: false, spokeToHub: false },
  },
  {
    name: 'a `when` rule applies only where the condition holds on the input',
    hub: { mode: str(), size: str() },
    spoke: { mode: str(), capacity: str() },
    rules: [
      {
        strategy: 'FieldRename',
        fieldRename: { hubPath: 'spec.size', spokePath: 'spec.capacity' },
        when: { path: 'spec.mode', equals: 'advanced' },
        acknowledgeLossy: true,
      },
    ],
    down: [{ mode: 'basic', size: '1' }, { mode: 'basic' }],
    up: [
      { mode: 'advanced', capacity: '2' },
      { mode: 'advanced', size: '2' },
    ],
    lossless: { hubToSpoke: false, spokeToHub: false },
  },
];

function compiled(row: Row): Router {
  const result = compile(spec('v2', { v1: row.rules }), versions({ v2: root(row.hub), v1: root(row.spoke) }));
  if (!result.ok)
    throw new Error(`expected the config to compile: ${JSON.stringify(result.diagnostics, null, 2)}`);
  return result.router;
}

describe.each(rows)('$name', (row) => {
  it('hub → spoke', () => {
    const result = convert(compiled(row), object('v2', row.down[0]), 'v2', 'v1');
    expect(result).toEqual({ ok: true, object: object('v1', row.down[1]) });
  });

  it('spoke → hub', () => {
    const result = convert(compiled(row), object('v1', row.up[0]), 'v1', 'v2');
    expect(result).toEqual({ ok: true, object: object('v2', row.up[1]) });
  });

  it('reports the computed losslessness per direction', () => {
    expect(compiled(row).spokes.get('v1')?.lossless).toEqual(row.lossless);
  });
});
