// Issue 10: what a user migrating from the reference operator hits first. Each table is built
// from the reference's documentation of the strategy or config field concerned
// (docs/strategies/*.md, docs/configuration/xrdconversionconfig.md, docs/cli.md of
// TeraSky-OSS/declarative-conversion-operator); docs/migrating-from-the-reference-operator.md
// states every difference these tests pin down.
import { describe, expect, it } from 'vitest';
import { ruleSchema } from '../api/rules.ts';
import { type CompileResult, compile } from './compile.ts';
import { convert } from './convert.ts';
import type { Diagnostic } from './diagnostics.ts';
import type { Router } from './plan.ts';
import type { TargetSchema } from './schema.ts';
import { bool, int, object, root, spec, str, versions } from './test-support.ts';

function compiled(result: CompileResult): Router {
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

function errorsOf(result: CompileResult): Diagnostic[] {
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

const typed = (type: string, ...values: unknown[]): TargetSchema =>
  values.length > 0 ? { type, enum: values } : { type };

describe('EnumRemap maps string, integer, number and boolean values, matched by type and value', () => {
  const remap = (mapping: [unknown, unknown][], extra: object = {}) => ({
    strategy: 'EnumRemap',
    enumRemap: { path: 'spec.code', mapping: mapping.map(([hub, spoke]) => ({ hub, spoke })), ...extra },
  });

  // The reference's documented example: hub 200/404 are spoke 2/4.
  const accepted: {
    name: string;
    hub: TargetSchema;
    spoke: TargetSchema;
    mapping: [unknown, unknown][];
    down: [unknown, unknown];
    up: [unknown, unknown];
  }[] = [
    {
      name: 'integers (the reference example: 200 → 2, 404 → 4)',
      hub: typed('integer', 200, 404),
      spoke: typed('integer', 2, 4),
      mapping: [
        [200, 2],
        [404, 4],
      ],
      down: [404, 4],
      up: [2, 200],
    },
    {
      name: 'numbers',
      hub: typed('number', 0.5, 1.5),
      spoke: typed('number', 50, 150),
      mapping: [
        [0.5, 50],
        [1.5, 150],
      ],
      down: [1.5, 150],
      up: [50, 0.5],
    },
    {
      name: 'booleans',
      hub: typed('boolean'),
      spoke: typed('boolean'),
      mapping: [
        [true, false],
        [false, true],
      ],
      down: [true, false],
      up: [true, false],
    },
    {
      name: 'a hub integer that the spoke spells as a string',
      hub: typed('integer', 1, 2),
      spoke: typed('string', 'one', 'two'),
      mapping: [
        [1, 'one'],
        [2, 'two'],
      ],
      down: [2, 'two'],
      up: ['one', 1],
    },
    {
      name: 'strings, as before',
      hub: typed('string', 'Large'),
      spoke: typed('string', 'L'),
      mapping: [['Large', 'L']],
      down: ['Large', 'L'],
      up: ['L', 'Large'],
    },
  ];

  it.each(accepted)('$name: parses, compiles and converts both ways', (row) => {
    const router = compiled(
      compile(
        spec('v2', { v1: [remap(row.mapping)] }),
        versions({ v2: root({ code: row.hub }), v1: root({ code: row.spoke }) }),
      ),
    );
    expect(convert(router, object('v2', { code: row.down[0] }), 'v2', 'v1')).toEqual({
      ok: true,
      object: object('v1', { code: row.down[1] }),
    });
    expect(convert(router, object('v1', { code: row.up[0] }), 'v1', 'v2')).toEqual({
      ok: true,
      object: object('v2', { code: row.up[1] }),
    });
  });

  it('1 is not "1": a value of another type has no mapping and fails the conversion', () => {
    const router = compiled(
      compile(
        spec('v2', { v1: [remap([[1, 'one']])] }),
        versions({ v2: root({ code: int() }), v1: root({ code: str() }) }),
      ),
    );
    const result = convert(router, object('v2', { code: '1' }), 'v2', 'v1');
    expect(result).toMatchObject({ ok: false, error: { path: 'spec.code' } });
    if (!result.ok) expect(result.error.message).toContain('value "1" has no mapping');
  });

  const rejected: {
    name: string;
    hub: TargetSchema;
    spoke: TargetSchema;
    mapping: [unknown, unknown][];
    says: string;
  }[] = [
    {
      name: 'a string mapping on an integer field ("1" is not 1)',
      hub: int(),
      spoke: int(),
      mapping: [['1', 2]],
      says: 'enumRemap.mapping[0].hub is "1", not an integer',
    },
    {
      name: 'an integer mapping on a boolean field',
      hub: bool(),
      spoke: bool(),
      mapping: [[true, 0]],
      says: 'enumRemap.mapping[0].spoke is 0, not a boolean',
    },
    {
      name: 'a fractional number on an integer field',
      hub: int(),
      spoke: typed('number'),
      mapping: [[1.5, 1.5]],
      says: 'enumRemap.mapping[0].hub is 1.5, not an integer',
    },
    {
      name: 'an integer enum value the mapping does not list (onUnmappedHubValue: Error)',
      hub: typed('integer', 200, 404, 500),
      spoke: typed('integer', 2, 4),
      mapping: [
        [200, 2],
        [404, 4],
      ],
      says: 'allows 500 at spec.code',
    },
    {
      name: 'a field that is an object, not a scalar',
      hub: { type: 'object', additionalProperties: str() },
      spoke: { type: 'object', additionalProperties: str() },
      mapping: [['a', 'b']],
      says: 'EnumRemap maps string, integer, number or boolean values',
    },
  ];

  it.each(rejected)('$name is rejected at compile time', (row) => {
    const result = compile(
      spec('v2', { v1: [remap(row.mapping)] }),
      versions({ v2: root({ code: row.hub }), v1: root({ code: row.spoke }) }),
    );
    expect(result.ok, 'a mapping the schema cannot hold must never be served').toBe(false);
    expect(
      errorsOf(result)
        .map((d) => d.message)
        .join('\n'),
    ).toContain(row.says);
  });

  it.each([
    ['an object', { a: 1 }],
    ['null', null],
    ['an array', [1]],
  ])('the API rejects %s as a mapping value', (_, value) => {
    expect(ruleSchema.safeParse(remap([[value, 1]])).success).toBe(false);
  });
});

describe('retiring a served version: drop it from spokes, stop serving it, remove it (reference docs/cli.md)', () => {
  const hubSpec = { size: str(), owner: str() };
  const v1Spec = { capacity: str(), owner: str() };
  const rename = {
    strategy: 'FieldRename',
    fieldRename: { hubPath: 'spec.size', spokePath: 'spec.capacity' },
  };
  const target = (v1: { served: boolean; schema?: TargetSchema } | undefined) => [
    { name: 'v3', served: true, storage: true, schema: root(hubSpec) },
    { name: 'v2', served: true, storage: false, schema: root(hubSpec) },
    ...(v1 ? [{ name: 'v1', served: v1.served, storage: false, schema: v1.schema ?? root(v1Spec) }] : []),
  ];
  const steps: {
    step: string;
    config: ReturnType<typeof spec>;
    versions: ReturnType<typeof target>;
    warnings: string[];
    v1: 'converts' | 'fails closed' | 'absent';
  }[] = [
    {
      step: '0. v1 is a spoke with rules',
      config: spec('v3', { v2: [], v1: [rename] }),
      versions: target({ served: true }),
      warnings: [],
      v1: 'converts',
    },
    {
      step: '1. v1 dropped from spokes, still served, differs from the hub',
      config: spec('v3', { v2: [] }),
      versions: target({ served: true }),
      warnings: ['UnlistedServedVersion'],
      v1: 'fails closed',
    },
    {
      step: '1. (v1 identical to the hub) dropped from spokes, still served',
      config: spec('v3', { v2: [] }),
      versions: target({ served: true, schema: root(hubSpec) }),
      warnings: [],
      v1: 'converts',
    },
    {
      step: '2. v1 no longer served',
      config: spec('v3', { v2: [] }),
      versions: target({ served: false }),
      warnings: [],
      v1: 'absent',
    },
    {
      step: '3. v1 removed from the target',
      config: spec('v3', { v2: [] }),
      versions: target(undefined),
      warnings: [],
      v1: 'absent',
    },
  ];

  it.each(steps)('$step: the config stays valid', (row) => {
    const result = compile(row.config, row.versions);
    const router = compiled(result);
    expect(result.ok && result.warnings.map((w) => w.code)).toEqual(row.warnings);
    const v2 = convert(router, object('v2', { size: '1', owner: 'me' }), 'v2', 'v3');
    expect(v2.ok, 'the remaining spoke must keep converting throughout').toBe(true);
    const fromV1 = convert(router, object('v1', { capacity: '1', size: '1', owner: 'me' }), 'v1', 'v3');
    expect(fromV1.ok).toBe(row.v1 === 'converts');
    if (row.v1 === 'fails closed' && !fromV1.ok) {
      expect(fromV1.error.message).toContain('version v1: it is served but not listed');
      expect(fromV1.error.message).toContain('list v1 in spokes with rules, or, if it is being retired');
    }
  });

  it('the warning names the version, what differs, and the next step', () => {
    const result = compile(spec('v3', { v2: [] }), target({ served: true }));
    expect(result.ok && result.warnings).toEqual([
      expect.objectContaining({
        severity: 'warning',
        code: 'UnlistedServedVersion',
        version: 'v1',
        message: expect.stringContaining('its schema differs from the hub v3 (spec.size, spec.capacity)'),
        hint: expect.stringContaining('stop serving it (served: false)'),
      }),
    ]);
  });

  it('the other order (stop serving while still listed) is rejected, naming the order that works', () => {
    const result = compile(spec('v3', { v2: [], v1: [rename] }), target({ served: false }));
    expect(errorsOf(result)).toEqual([expect.objectContaining({ code: 'SpokeNotServed', version: 'v1' })]);
  });
});
