// Issue 10: what a user migrating from the reference operator hits first. Each table is built
// from the reference's documentation of the strategy or config field concerned
// (docs/strategies/*.md, docs/configuration/xrdconversionconfig.md, docs/cli.md of
// TeraSky-OSS/declarative-conversion-operator); docs/migrating-from-the-reference-operator.md
// states every difference these tests pin down.
import { describe, expect, it } from 'vitest';
import { conversionConfigSchema } from '../api/conversion-config.ts';
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

describe('nothing the user wrote is silently dropped (reference docs/configuration/xrdconversionconfig.md)', () => {
  const base = {
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'XRDConversionConfig',
    metadata: { name: 'xwidgets-conversion' },
    spec: {
      targetXRD: { name: 'xwidgets.example.org' },
      hubVersion: 'v3',
      spokes: [{ version: 'v2', rules: [] }],
    },
  };
  const withSpec = (extra: object) => ({ ...base, spec: { ...base.spec, ...extra } });
  const withRule = (rule: object) => withSpec({ spokes: [{ version: 'v2', rules: [rule] }] });
  const rename = { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.a', spokePath: 'spec.b' } };

  const rejected: { name: string; config: object; says: string[] }[] = [
    {
      name: 'a rule with two params blocks (fieldRename and delete)',
      config: withRule({ ...rename, delete: { path: 'spec.a', existsOn: 'Hub' } }),
      says: ['a FieldRename rule takes exactly one params block', 'remove delete'],
    },
    {
      name: 'an unknown rule field',
      config: withRule({ ...rename, priority: 1 }),
      says: ['a FieldRename rule has no field priority', 'acknowledgeLossy'],
    },
    {
      name: 'an unknown params field',
      config: withRule({ ...rename, fieldRename: { ...rename.fieldRename, losslessOverride: true } }),
      says: ['fieldRename has no field losslessOverride'],
    },
    {
      name: 'a strategy neither Switchyard nor the reference has',
      config: withRule({ strategy: 'Rename', rename: { path: 'spec.a' } }),
      says: [
        'strategy "Rename" is not supported',
        'FieldRename, ScalarToObject, ObjectToScalar',
        'MapKeyRename, CEL',
      ],
    },
    {
      name: 'a misspelt strategy',
      config: withRule({ strategy: 'fieldRename', fieldRename: rename.fieldRename }),
      says: ['strategy "fieldRename" is not supported'],
    },
    {
      name: 'an unknown spec field',
      config: withSpec({ conversionStrategy: 'Webhook' }),
      says: ['an XRDConversionConfig spec has no field conversionStrategy'],
    },
    {
      name: 'an unknown spoke field',
      config: withSpec({ spokes: [{ version: 'v2', rules: [], unmappedFieldPolicy: 'Warn' }] }),
      says: ['a spoke has no field unmappedFieldPolicy'],
    },
    {
      name: 'unmappedFieldPolicy: Warn without unmappedFieldReason',
      config: withSpec({ unmappedFieldPolicy: 'Warn' }),
      says: ['unmappedFieldReason is required when unmappedFieldPolicy is Warn'],
    },
    {
      name: 'a misspelt driftPolicy (never read as the default)',
      config: withSpec({ driftPolicy: 'Failclosed' }),
      says: ['driftPolicy "Failclosed" is not supported', 'KeepServingStale', 'FailClosed'],
    },
  ];

  it.each(rejected)('the API rejects $name, naming it', (row) => {
    const result = conversionConfigSchema.safeParse(row.config);
    expect(result.success, 'a field the engine would ignore must not be accepted').toBe(false);
    const messages = result.error?.issues.map((i) => i.message).join('\n') ?? '';
    for (const text of row.says) expect(messages).toContain(text);
  });

  it.each([
    ['unmappedFieldPolicy: Error', { unmappedFieldPolicy: 'Error' }],
    [
      'unmappedFieldPolicy: Warn with a reason',
      { unmappedFieldPolicy: 'Warn', unmappedFieldReason: 'legacy' },
    ],
    ['driftPolicy: KeepServingStale (the default)', { driftPolicy: 'KeepServingStale' }],
    ['driftPolicy: FailClosed', { driftPolicy: 'FailClosed' }],
  ])('the API accepts %s', (_, extra) => {
    expect(conversionConfigSchema.safeParse(withSpec(extra)).success).toBe(true);
  });

  const twoVersions = versions({ v3: root({ a: str() }), v2: root({ b: str() }) });
  it.each([
    [
      'an unknown strategy',
      { strategy: 'Rename', rename: {} },
      'strategy "Rename" is not supported; the supported strategies are FieldRename, ScalarToObject',
    ],
    ['no strategy at all', { fieldRename: rename.fieldRename }, 'a rule without a strategy is not supported'],
    [
      'two params blocks',
      { ...rename, delete: { path: 'spec.a', existsOn: 'Hub' } },
      'a FieldRename rule takes exactly one params block, fieldRename, but also has delete',
    ],
    ['a missing params block', { strategy: 'Delete' }, 'a Delete rule needs its params block, delete'],
  ])('compile() given %s (not parsed by the API) returns a diagnostic, never a TypeError', (_, rule, says) => {
    const config = { hubVersion: 'v3', spokes: [{ version: 'v2', rules: [rule as never] }] };
    const result = compile(config, twoVersions);
    expect(errorsOf(result)).toContainEqual(
      expect.objectContaining({
        code: 'InvalidRule',
        version: 'v2',
        ruleIndex: 0,
        message: expect.stringContaining(says),
      }),
    );
  });
});

describe('unmappedFieldPolicy: Warn downgrades an unclaimed field to a warning and drops it', () => {
  const warn = { unmappedFieldPolicy: 'Warn' as const, unmappedFieldReason: 'extra is being retired' };
  const rows: {
    name: string;
    hub: Record<string, TargetSchema>;
    spoke: Record<string, TargetSchema>;
    down: [Record<string, unknown>, Record<string, unknown>];
    up: [Record<string, unknown>, Record<string, unknown>];
    lossless: { hubToSpoke: boolean; spokeToHub: boolean };
  }[] = [
    {
      name: 'a hub-only field',
      hub: { name: str(), extra: str() },
      spoke: { name: str() },
      down: [{ name: 'n', extra: 'x' }, { name: 'n' }],
      up: [{ name: 'n' }, { name: 'n' }],
      lossless: { hubToSpoke: false, spokeToHub: true },
    },
    {
      name: 'a spoke-only field',
      hub: { name: str() },
      spoke: { name: str(), extra: int() },
      down: [{ name: 'n' }, { name: 'n' }],
      up: [{ name: 'n', extra: 1 }, { name: 'n' }],
      lossless: { hubToSpoke: true, spokeToHub: false },
    },
    {
      name: 'a field whose type differs',
      hub: { name: str(), extra: str() },
      spoke: { name: str(), extra: int() },
      down: [{ name: 'n', extra: '1' }, { name: 'n' }],
      up: [{ name: 'n', extra: 1 }, { name: 'n' }],
      lossless: { hubToSpoke: false, spokeToHub: false },
    },
  ];

  it.each(rows)('$name: rejected under Error (the default)', (row) => {
    const result = compile(spec('v3', { v2: [] }), versions({ v3: root(row.hub), v2: root(row.spoke) }));
    expect(errorsOf(result)).toContainEqual(
      expect.objectContaining({ code: 'UnclaimedField', path: 'spec.extra' }),
    );
  });

  it.each(rows)('$name: under Warn, a warning with the reason, and the value is dropped', (row) => {
    const result = compile(
      { ...spec('v3', { v2: [] }), ...warn },
      versions({ v3: root(row.hub), v2: root(row.spoke) }),
    );
    const router = compiled(result);
    expect(result.ok && result.warnings).toEqual([
      expect.objectContaining({
        severity: 'warning',
        code: 'UnclaimedField',
        path: 'spec.extra',
        message: expect.stringContaining('(unmappedFieldReason: extra is being retired)'),
      }),
    ]);
    expect(convert(router, object('v3', row.down[0]), 'v3', 'v2')).toEqual({
      ok: true,
      object: object('v2', row.down[1]),
    });
    expect(convert(router, object('v2', row.up[0]), 'v2', 'v3')).toEqual({
      ok: true,
      object: object('v3', row.up[1]),
    });
    expect(router.spokes.get('v2')?.lossless).toEqual(row.lossless);
  });
});

describe('`when` rules need acknowledgeLossy only where a skipped rule really loses the value', () => {
  const when = { path: 'spec.mode', equals: 'legacy' };
  const remap = (extra: object = {}) => ({
    strategy: 'EnumRemap',
    enumRemap: {
      path: 'spec.size',
      mapping: [
        { hub: 'Small', spoke: 'S' },
        { hub: 'Large', spoke: 'L' },
      ],
    },
    when,
    ...extra,
  });
  const rows: {
    name: string;
    rule: object;
    hub: Record<string, TargetSchema>;
    spoke: Record<string, TargetSchema>;
    verdict: 'lossless' | 'lossy';
    /** Where the predicate does not match: hub spec in, spoke spec out. */
    unmatched?: [Record<string, unknown>, Record<string, unknown>];
  }[] = [
    {
      name: 'EnumRemap between fields of the same shape: the unmatched value is carried over unchanged',
      rule: remap(),
      hub: { mode: str(), size: str() },
      spoke: { mode: str(), size: str() },
      verdict: 'lossless',
      unmatched: [
        { mode: 'current', size: 'Small' },
        { mode: 'current', size: 'Small' },
      ],
    },
    {
      name: 'FieldRename onto the same path: carried over unchanged',
      rule: { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.size' }, when },
      hub: { mode: str(), size: str() },
      spoke: { mode: str(), size: str() },
      verdict: 'lossless',
      unmatched: [
        { mode: 'current', size: 'x' },
        { mode: 'current', size: 'x' },
      ],
    },
    {
      name: 'EnumRemap between different enums: the spoke cannot hold the unmapped value, so it is lost',
      rule: remap(),
      hub: { mode: str(), size: { type: 'string', enum: ['Small', 'Large'] } },
      spoke: { mode: str(), size: { type: 'string', enum: ['S', 'L'] } },
      verdict: 'lossy',
    },
    {
      name: 'FieldRename to another path (the reference example: tuning → advancedTuning): lost',
      rule: {
        strategy: 'FieldRename',
        fieldRename: { hubPath: 'spec.tuning', spokePath: 'spec.advancedTuning' },
        when: { path: 'spec.mode', equals: 'advanced' },
      },
      hub: { mode: str(), tuning: str() },
      spoke: { mode: str(), advancedTuning: str() },
      verdict: 'lossy',
    },
    {
      name: 'a predicate on the field the rule itself changes: it reads differently on the way back',
      rule: remap({ when: { path: 'spec.size', equals: 'Small' } }),
      hub: { size: str() },
      spoke: { size: str() },
      verdict: 'lossy',
    },
  ];

  it.each(rows)('$name', (row) => {
    const versionsOf = versions({ v3: root(row.hub), v2: root(row.spoke) });
    const result = compile(spec('v3', { v2: [row.rule] }), versionsOf);
    if (row.verdict === 'lossy') {
      const [d] = errorsOf(result);
      expect(d, 'a value really lost must never be served unacknowledged').toMatchObject({
        code: 'UnacknowledgedLossy',
        message: expect.stringMatching(
          /on objects whose spec\.\w+ is not .*, the rule does not apply|may not be restored/,
        ),
        hint: expect.stringContaining('acknowledgeLossy: true'),
      });
      expect(compile(spec('v3', { v2: [{ ...row.rule, acknowledgeLossy: true }] }), versionsOf).ok).toBe(
        true,
      );
      return;
    }
    const router = compiled(result);
    expect(result.ok && result.warnings.map((w) => w.code)).toEqual(['PartialCoverage']);
    const [hubSpec, spokeSpec] = row.unmatched as [Record<string, unknown>, Record<string, unknown>];
    expect(convert(router, object('v3', hubSpec), 'v3', 'v2')).toEqual({
      ok: true,
      object: object('v2', spokeSpec),
    });
    expect(convert(router, object('v2', spokeSpec), 'v2', 'v3')).toEqual({
      ok: true,
      object: object('v3', hubSpec),
    });
    expect(router.spokes.get('v2')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('where the predicate matches, the rule applies as usual', () => {
    const router = compiled(
      compile(
        spec('v3', { v2: [remap()] }),
        versions({ v3: root({ mode: str(), size: str() }), v2: root({ mode: str(), size: str() }) }),
      ),
    );
    expect(convert(router, object('v3', { mode: 'legacy', size: 'Large' }), 'v3', 'v2')).toEqual({
      ok: true,
      object: object('v2', { mode: 'legacy', size: 'L' }),
    });
  });
});

describe('schema constructs the engine does not evaluate are named as written (reference docs/limitations.md)', () => {
  const oneOf = [{ required: ['a'] }, { required: ['b'] }];
  const rows: {
    name: string;
    hub: Record<string, TargetSchema>;
    spoke: Record<string, TargetSchema>;
    rules: unknown[];
    says: string;
  }[] = [
    {
      name: 'EnumRemap on a value typed only by oneOf',
      hub: { x: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
      spoke: { x: { oneOf: [{ type: 'string' }, { type: 'integer' }] } },
      rules: [{ strategy: 'EnumRemap', enumRemap: { path: 'spec.x', mapping: [{ hub: 'a', spoke: 'b' }] } }],
      says: 'hub spec.x is a value typed only by oneOf',
    },
    {
      name: 'a DefaultValue into a value typed only by anyOf',
      hub: {},
      spoke: { y: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
      rules: [
        {
          strategy: 'DefaultValue',
          defaultValue: { path: 'spec.y', existsOn: 'Spoke', default: 1 },
          acknowledgeLossy: true,
        },
      ],
      says: "the field's type is given only by anyOf, which the engine does not evaluate",
    },
    {
      name: 'an unclaimed field whose oneOf differs',
      hub: { x: { type: 'object', properties: { a: str(), b: str() }, oneOf } },
      spoke: { x: { type: 'object', properties: { a: str(), b: str() }, oneOf: [{ required: ['a'] }] } },
      rules: [],
      says: 'their oneOf differ',
    },
    {
      name: 'an EnumRemap on an untyped preserve-unknown-fields value',
      hub: { x: { 'x-kubernetes-preserve-unknown-fields': true } },
      spoke: { x: { 'x-kubernetes-preserve-unknown-fields': true } },
      rules: [{ strategy: 'EnumRemap', enumRemap: { path: 'spec.x', mapping: [{ hub: 'a', spoke: 'b' }] } }],
      says: 'a value of any type (x-kubernetes-preserve-unknown-fields, no type)',
    },
  ];

  it.each(rows)('$name', (row) => {
    const result = compile(
      spec('v3', { v2: row.rules }),
      versions({ v3: root(row.hub), v2: root(row.spoke) }),
    );
    const messages = errorsOf(result).map((d) => d.message);
    expect(messages.join('\n')).toContain(row.says);
    expect(messages.join('\n')).not.toContain('untyped value');
  });

  it('an identical oneOf on both sides passes through', () => {
    const shape: TargetSchema = { type: 'object', properties: { a: str(), b: str() }, oneOf };
    expect(
      compile(spec('v3', { v2: [] }), versions({ v3: root({ x: shape }), v2: root({ x: shape }) })).ok,
    ).toBe(true);
  });
});
