import { describe, expect, it } from 'vitest';
import { type CompileResult, type ConversionSpec, compile, type TargetVersion } from './compile.ts';
import { convert } from './convert.ts';
import type { DiagnosticCode } from './diagnostics.ts';
import { formatDiagnostic } from './diagnostics.ts';
import { arrayOf, enumOf, int, obj, object, root, spec, str, versions } from './test-support.ts';

const sameSpec = { name: str(), size: enumOf('Small', 'Large') };
const twoVersions = versions({ v2: root(sameSpec), v1: root(sameSpec) });
const rename = (hubPath: string, spokePath: string) => ({
  strategy: 'FieldRename',
  fieldRename: { hubPath, spokePath },
});

interface Row {
  name: string;
  spec: ConversionSpec;
  versions: TargetVersion[];
  expected: { code: DiagnosticCode; version?: string; ruleIndex?: number; path?: string };
}

const rows: Row[] = [
  {
    name: 'a hub version the target does not have',
    spec: spec('v3', { v1: [] }),
    versions: twoVersions,
    expected: { code: 'UnknownVersion', path: 'hubVersion' },
  },
  {
    name: 'a hub that is not the storage version',
    spec: spec('v1', { v2: [] }),
    versions: twoVersions,
    expected: { code: 'HubNotStorage', path: 'hubVersion' },
  },
  {
    name: 'a spoke version the target does not have',
    spec: spec('v2', { v1: [], v9: [] }),
    versions: twoVersions,
    expected: { code: 'UnknownVersion', version: 'v9', path: 'spokes[1].version' },
  },
  {
    name: 'a spoke that is not served',
    spec: spec('v2', { v1: [] }),
    versions: [
      { name: 'v2', served: true, storage: true, schema: root(sameSpec) },
      { name: 'v1', served: false, storage: false, schema: root(sameSpec) },
    ],
    expected: { code: 'SpokeNotServed', version: 'v1' },
  },
  {
    name: 'a spoke listed twice',
    spec: { hubVersion: 'v2', spokes: [...spec('v2', { v1: [] }).spokes, ...spec('v2', { v1: [] }).spokes] },
    versions: twoVersions,
    expected: { code: 'DuplicateSpoke', version: 'v1', path: 'spokes[1].version' },
  },
  {
    name: 'the hub listed as a spoke',
    spec: spec('v2', { v2: [] }),
    versions: twoVersions,
    expected: { code: 'HubListedAsSpoke', version: 'v2' },
  },
  {
    name: 'a spoke without a schema',
    spec: spec('v2', { v1: [] }),
    versions: [
      { name: 'v2', served: true, storage: true, schema: root(sameSpec) },
      { name: 'v1', served: true, storage: false, schema: undefined },
    ],
    expected: { code: 'MissingSchema', version: 'v1' },
  },
  {
    name: 'a path with an empty segment',
    spec: spec('v2', { v1: [rename('spec..name', 'spec.name')] }),
    versions: twoVersions,
    expected: { code: 'InvalidPath', version: 'v1', ruleIndex: 0, path: 'spec..name' },
  },
  {
    name: 'a path indexing into an array',
    spec: spec('v2', { v1: [rename('spec.items[0]', 'spec.name')] }),
    versions: twoVersions,
    expected: { code: 'InvalidPath', ruleIndex: 0, path: 'spec.items[0]' },
  },
  {
    name: 'a path under metadata, which the engine owns',
    spec: spec('v2', { v1: [rename('metadata.name', 'spec.name')] }),
    versions: twoVersions,
    expected: { code: 'InvalidPath', ruleIndex: 0, path: 'metadata.name' },
  },
  {
    name: 'a path the schema does not declare',
    spec: spec('v2', { v1: [rename('spec.nmae', 'spec.name')] }),
    versions: twoVersions,
    expected: { code: 'UnknownPath', version: 'v1', ruleIndex: 0, path: 'spec.nmae' },
  },
  {
    name: 'FieldRename between fields of different shapes',
    spec: spec('v2', { v1: [rename('spec.a', 'spec.b')] }),
    versions: versions({ v2: root({ a: str() }), v1: root({ b: int() }) }),
    expected: { code: 'ShapeMismatch', ruleIndex: 0, path: 'spec.a' },
  },
  {
    name: 'EnumRemap on a field that is not a scalar',
    spec: spec('v2', {
      v1: [{ strategy: 'EnumRemap', enumRemap: { path: 'spec.n', mapping: [{ hub: '1', spoke: '2' }] } }],
    }),
    versions: versions({ v2: root({ n: arrayOf(int()) }), v1: root({ n: arrayOf(int()) }) }),
    expected: { code: 'ShapeMismatch', ruleIndex: 0, path: 'spec.n' },
  },
  {
    name: 'Delete of a field both sides declare and no rule moves',
    spec: spec('v2', {
      v1: [{ strategy: 'Delete', delete: { path: 'spec.name', existsOn: 'Spoke' }, acknowledgeLossy: true }],
    }),
    versions: twoVersions,
    expected: { code: 'NotOneSided', ruleIndex: 0, path: 'spec.name' },
  },
  {
    name: 'a default value of the wrong type',
    spec: spec('v2', {
      v1: [
        {
          strategy: 'DefaultValue',
          defaultValue: { path: 'spec.units', existsOn: 'Spoke', default: 'one' },
          acknowledgeLossy: true,
        },
      ],
    }),
    versions: versions({ v2: root({}), v1: root({ units: int() }) }),
    expected: { code: 'InvalidValue', ruleIndex: 0, path: 'spec.units' },
  },
  {
    name: 'a constant outside the enum',
    spec: spec('v2', {
      v1: [
        {
          strategy: 'Constant',
          constant: { path: 'spec.tier', existsOn: 'Spoke', value: 'gold' },
          acknowledgeLossy: true,
        },
      ],
    }),
    versions: versions({
      v2: root({ name: str() }),
      v1: root({ name: str(), tier: enumOf('bronze', 'silver') }),
    }),
    expected: { code: 'InvalidValue', ruleIndex: 0, path: 'spec.tier' },
  },
  {
    name: 'an enum mapping to a value the spoke does not allow',
    spec: spec('v2', {
      v1: [
        {
          strategy: 'EnumRemap',
          enumRemap: {
            path: 'spec.size',
            mapping: [
              { hub: 'Small', spoke: 'S' },
              { hub: 'Large', spoke: 'XL' },
            ],
          },
        },
      ],
    }),
    versions: versions({
      v2: root({ size: enumOf('Small', 'Large') }),
      v1: root({ size: enumOf('S', 'L') }),
    }),
    expected: { code: 'InvalidValue', ruleIndex: 0, path: 'spec.size' },
  },
  {
    name: 'a `when` value the field can never take',
    spec: spec('v2', {
      v1: [
        {
          ...rename('spec.name', 'spec.name'),
          when: { path: 'spec.size', equals: 'Huge' },
          acknowledgeLossy: true,
        },
      ],
    }),
    versions: twoVersions,
    expected: { code: 'InvalidValue', ruleIndex: 0, path: 'spec.size' },
  },
  {
    name: 'an enum value without a mapping under onUnmapped…Value: Error',
    spec: spec('v2', {
      v1: [
        { strategy: 'EnumRemap', enumRemap: { path: 'spec.size', mapping: [{ hub: 'Small', spoke: 'S' }] } },
      ],
    }),
    versions: versions({
      v2: root({ size: enumOf('Small', 'Large') }),
      v1: root({ size: enumOf('S', 'L') }),
    }),
    expected: { code: 'UnmappedEnumValue', ruleIndex: 0, path: 'spec.size' },
  },
  {
    name: 'two rules claiming the same field',
    spec: spec('v2', { v1: [rename('spec.a', 'spec.b'), rename('spec.a', 'spec.c')] }),
    versions: versions({ v2: root({ a: str() }), v1: root({ b: str(), c: str() }) }),
    expected: { code: 'ConflictingRules', ruleIndex: 1, path: 'spec.a' },
  },
  {
    name: 'a rule claiming a field inside a field another rule claims',
    spec: spec('v2', {
      v1: [
        rename('spec.disk', 'spec.storage'),
        {
          strategy: 'Delete',
          delete: { path: 'spec.storage.size', existsOn: 'Spoke' },
          acknowledgeLossy: true,
        },
      ],
    }),
    versions: versions({
      v2: root({ disk: obj({ size: int() }) }),
      v1: root({ storage: obj({ size: int() }) }),
    }),
    expected: { code: 'ConflictingRules', ruleIndex: 1, path: 'spec.storage.size' },
  },
  {
    name: 'a Delete without acknowledgeLossy',
    spec: spec('v2', { v1: [{ strategy: 'Delete', delete: { path: 'spec.debug', existsOn: 'Spoke' } }] }),
    versions: versions({ v2: root({ name: str() }), v1: root({ name: str(), debug: { type: 'boolean' } }) }),
    expected: { code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.debug' },
  },
  {
    name: 'a DefaultValue without acknowledgeLossy',
    spec: spec('v2', {
      v1: [{ strategy: 'DefaultValue', defaultValue: { path: 'spec.n', existsOn: 'Spoke', default: 1 } }],
    }),
    versions: versions({ v2: root({ name: str() }), v1: root({ name: str(), n: int() }) }),
    expected: { code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.n' },
  },
  {
    name: 'a folding EnumRemap without acknowledgeLossy',
    spec: spec('v2', {
      v1: [
        {
          strategy: 'EnumRemap',
          enumRemap: {
            path: 'spec.size',
            mapping: [
              { hub: 'Small', spoke: 'S' },
              { hub: 'Large', spoke: 'S' },
            ],
          },
        },
      ],
    }),
    versions: versions({ v2: root({ size: enumOf('Small', 'Large') }), v1: root({ size: enumOf('S') }) }),
    expected: { code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.size' },
  },
  {
    name: 'a `when` rule without acknowledgeLossy',
    spec: spec('v2', { v1: [{ ...rename('spec.a', 'spec.b'), when: { path: 'spec.name', equals: 'x' } }] }),
    versions: versions({ v2: root({ name: str(), a: str() }), v1: root({ name: str(), b: str() }) }),
    expected: { code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.a' },
  },
  {
    name: 'a hub-only field no rule claims',
    spec: spec('v2', { v1: [] }),
    versions: versions({ v2: root({ name: str(), extra: str() }), v1: root({ name: str() }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'spec.extra' },
  },
  {
    name: 'a spoke-only field no rule claims',
    spec: spec('v2', { v1: [] }),
    versions: versions({ v2: root({ name: str() }), v1: root({ name: str(), extra: str() }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'spec.extra' },
  },
  {
    name: 'a field whose type differs and no rule claims',
    spec: spec('v2', { v1: [] }),
    versions: versions({ v2: root({ n: str() }), v1: root({ n: int() }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'spec.n' },
  },
  {
    name: 'a field whose enum values differ and no rule claims',
    spec: spec('v2', { v1: [] }),
    versions: versions({ v2: root({ size: enumOf('Small') }), v1: root({ size: enumOf('S') }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'spec.size' },
  },
  {
    name: 'a status field that differs: status is converted like spec',
    spec: spec('v2', { v1: [] }),
    versions: versions({ v2: root(sameSpec, { phase: str() }), v1: root(sameSpec, { state: str() }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'status.phase' },
  },
  {
    name: 'a field claimed on one side only, whose twin would pass through into a rule-owned path',
    spec: spec('v2', { v1: [rename('spec.a', 'spec.b')] }),
    versions: versions({ v2: root({ a: str() }), v1: root({ a: str(), b: str() }) }),
    expected: { code: 'UnclaimedField', version: 'v1', path: 'spec.a' },
  },
];

function errorsOf(result: CompileResult) {
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

describe('compile fails closed', () => {
  it.each(rows)('$name → $expected.code', (row) => {
    const result = compile(row.spec, row.versions);
    expect(result.ok, 'a config with an error must never yield a plan the webhook-server could serve').toBe(
      false,
    );
    expect(result).not.toHaveProperty('router');
    expect(errorsOf(result)).toContainEqual(expect.objectContaining(row.expected));
  });

  it.each(rows)('$name: the diagnostic says how to fix it', (row) => {
    const result = compile(row.spec, row.versions);
    for (const d of errorsOf(result)) {
      expect(d.hint.length, formatDiagnostic(d)).toBeGreaterThan(10);
      expect(d.message.length, formatDiagnostic(d)).toBeGreaterThan(10);
    }
  });

  it('suggests the declared path closest to a misspelt one', () => {
    const [d] = errorsOf(compile(spec('v2', { v1: [rename('spec.nmae', 'spec.name')] }), twoVersions));
    expect(d?.hint).toContain('spec.name');
  });

  it('reports every problem at once, so one fix cycle can address them all', () => {
    const result = compile(
      spec('v2', {
        v1: [
          rename('spec.missing', 'spec.name'),
          { strategy: 'Delete', delete: { path: 'spec.debug', existsOn: 'Spoke' } },
        ],
      }),
      versions({ v2: root({ name: str() }), v1: root({ name: str(), debug: str(), extra: int() }) }),
    );
    expect(errorsOf(result).map((d) => d.code)).toEqual(
      expect.arrayContaining(['UnknownPath', 'UnacknowledgedLossy']),
    );
  });

  it('formats a diagnostic as one self-contained line', () => {
    const [d] = errorsOf(compile(spec('v2', { v1: [rename('spec.nmae', 'spec.name')] }), twoVersions));
    expect(formatDiagnostic(d as NonNullable<typeof d>)).toBe(
      'error UnknownPath spokes[v1].rules[0] spec.nmae: The hub schema (hub version) declares no field spec.nmae. Fix: Did you mean spec.name?',
    );
  });
});

describe('compile accepts', () => {
  it('identical versions with no rules: every field passes through', () => {
    const result = compile(spec('v2', { v1: [] }), twoVersions);
    expect(result.ok).toBe(true);
  });

  it('a served version missing from spokes when it is identical to the hub', () => {
    const result = compile(
      spec('v3', { v2: [] }),
      versions({ v3: root(sameSpec), v2: root(sameSpec), v1: root(sameSpec) }),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    const converted = convert(result.router, object('v1', { name: 'n' }), 'v1', 'v2');
    expect(converted).toEqual({ ok: true, object: object('v2', { name: 'n' }) });
  });

  it('a one-sided rule on a field the other side declares, when another rule moved that field away', () => {
    // spoke renamed hub `a` to `b`, and reuses the name `a` for a new field with a default.
    const result = compile(
      spec('v2', {
        v1: [
          rename('spec.a', 'spec.b'),
          {
            strategy: 'DefaultValue',
            defaultValue: { path: 'spec.a', existsOn: 'Spoke', default: 0 },
            acknowledgeLossy: true,
          },
        ],
      }),
      versions({ v2: root({ a: str() }), v1: root({ a: int(), b: str() }) }),
    );
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    expect(convert(result.router, object('v2', { a: 'x' }), 'v2', 'v1')).toEqual({
      ok: true,
      object: object('v1', { a: 0, b: 'x' }),
    });
  });

  it('a `when` rule, with a PartialCoverage warning beside the plan', () => {
    const result = compile(
      spec('v2', {
        v1: [
          { ...rename('spec.a', 'spec.b'), when: { path: 'spec.name', equals: 'x' }, acknowledgeLossy: true },
        ],
      }),
      versions({ v2: root({ name: str(), a: str() }), v1: root({ name: str(), b: str() }) }),
    );
    expect(result).toMatchObject({
      ok: true,
      warnings: [{ code: 'PartialCoverage', ruleIndex: 0, version: 'v1' }],
    });
  });
});
