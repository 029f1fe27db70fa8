import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Rule, ruleSchema } from '../../api/rules.ts';
import { type CompileResult, type ConversionSpec, compile } from '../compile.ts';
import { type ConvertResult, convert, convertOwned } from '../convert.ts';
import type { Diagnostic } from '../diagnostics.ts';
import type { Router } from '../plan.ts';
import type { TargetSchema } from '../schema.ts';
import { arrayOf, enumOf, int, mapOf, obj, object, root, spec, str, versions } from '../test-support.ts';

// The reference's examples/for-each: each node pool's fields are renamed, its mode remapped.
const hubPool = obj({ instanceType: str(), nodeCount: int(), mode: enumOf('fast', 'slow'), zone: str() });
const spokePool = obj({ machineType: str(), replicas: int(), mode: enumOf('FAST', 'SLOW'), zone: str() });
const hubV = root({ nodePools: arrayOf(hubPool), name: str() });
const spokeV = root({ nodePools: arrayOf(spokePool), name: str() });

const renames = [
  { strategy: 'FieldRename', fieldRename: { hubPath: 'instanceType', spokePath: 'machineType' } },
  { strategy: 'FieldRename', fieldRename: { hubPath: 'nodeCount', spokePath: 'replicas' } },
  {
    strategy: 'EnumRemap',
    enumRemap: {
      path: 'mode',
      mapping: [
        { hub: 'fast', spoke: 'FAST' },
        { hub: 'slow', spoke: 'SLOW' },
      ],
    },
  },
];

function forEachRule(
  nested: unknown[],
  extra: Record<string, unknown> = {},
  paths = ['nodePools', 'nodePools'],
) {
  return {
    strategy: 'ForEach',
    forEach: { hubItemsPath: `spec.${paths[0]}`, spokeItemsPath: `spec.${paths[1]}`, rules: nested },
    ...extra,
  };
}

function compiled(
  hub: TargetSchema,
  spoke: TargetSchema,
  rules: unknown[],
  extra: Partial<ConversionSpec> = {},
) {
  return compile({ ...spec('v2', { v1: rules }), ...extra }, versions({ v2: hub, v1: spoke }));
}

function routerOf(result: CompileResult): Router {
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

function errorsOf(result: CompileResult): Diagnostic[] {
  if (result.ok) throw new Error('expected the config to be refused');
  return result.diagnostics.filter((d) => d.severity === 'error');
}

function specOf(result: ConvertResult): unknown {
  if (!result.ok) throw new Error(result.error.message);
  return (result.object as { spec?: unknown }).spec;
}

const router = routerOf(compiled(hubV, spokeV, [forEachRule(renames)]));

describe('ForEach converts each element with its nested rules', () => {
  it('renames and remaps in every element, both ways, keeping fields declared alike and unknown ones', () => {
    const hub = {
      name: 'c1',
      nodePools: [
        { instanceType: 'm5', nodeCount: 3, mode: 'fast', zone: 'a', note: 'kept' },
        { instanceType: 'c6', mode: 'slow' },
        {},
      ],
    };
    const spoke = {
      name: 'c1',
      nodePools: [
        { machineType: 'm5', replicas: 3, mode: 'FAST', zone: 'a', note: 'kept' },
        { machineType: 'c6', mode: 'SLOW' },
        {},
      ],
    };
    expect(specOf(convert(router, object('v2', hub), 'v2', 'v1'))).toEqual(spoke);
    expect(specOf(convert(router, object('v1', spoke), 'v1', 'v2'))).toEqual(hub);
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('writes nothing for an absent array, and an empty array for an empty one', () => {
    expect(specOf(convert(router, object('v2', { name: 'x' }), 'v2', 'v1'))).toEqual({ name: 'x' });
    expect(specOf(convert(router, object('v2', { nodePools: [] }), 'v2', 'v1'))).toEqual({ nodePools: [] });
  });

  it('never mutates its input, and converting an input given away gives the same', () => {
    const input = object('v2', { nodePools: [{ instanceType: 'm5', mode: 'fast', labels: { a: 1 } }] });
    const before = structuredClone(input);
    const copied = convert(router, input, 'v2', 'v1');
    expect(input).toEqual(before);
    expect(convertOwned(router, structuredClone(input), 'v2', 'v1')).toEqual(copied);
  });

  it('converts a thousand elements', () => {
    const pools = Array.from({ length: 1000 }, (_, i) => ({
      instanceType: `t${i}`,
      nodeCount: i,
      mode: 'slow',
    }));
    const down = specOf(convert(router, object('v2', { nodePools: pools }), 'v2', 'v1')) as {
      nodePools: unknown[];
    };
    expect(down.nodePools).toHaveLength(1000);
    expect(down.nodePools[999]).toEqual({ machineType: 't999', replicas: 999, mode: 'SLOW' });
  });

  it("runs the reference docs' volumes example, a ForEach inside a ForEach, there and back", () => {
    const disk = (size: string) => obj({ [size]: str() });
    const hub = root({ volumes: arrayOf(obj({ name: str(), disks: arrayOf(disk('sizeGB')) })) });
    const spoke = root({ volumes: arrayOf(obj({ name: str(), disks: arrayOf(disk('size')) })) });
    const inner = forEachRule([
      { strategy: 'FieldRename', fieldRename: { hubPath: 'sizeGB', spokePath: 'size' } },
    ]);
    inner.forEach = { ...inner.forEach, hubItemsPath: 'disks', spokeItemsPath: 'disks' };
    const nested = routerOf(
      compiled(hub, spoke, [
        forEachRule(
          [{ strategy: 'FieldRename', fieldRename: { hubPath: 'name', spokePath: 'name' } }, inner],
          {},
          ['volumes', 'volumes'],
        ),
      ]),
    );
    const hubSpec = {
      volumes: [{ name: 'data', disks: [{ sizeGB: '10' }, { sizeGB: '20' }] }, { name: 'empty' }],
    };
    const spokeSpec = {
      volumes: [{ name: 'data', disks: [{ size: '10' }, { size: '20' }] }, { name: 'empty' }],
    };
    expect(specOf(convert(nested, object('v2', hubSpec), 'v2', 'v1'))).toEqual(spokeSpec);
    expect(specOf(convert(nested, object('v1', spokeSpec), 'v1', 'v2'))).toEqual(hubSpec);
    expect(nested.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('treats element fields named apiVersion, kind and metadata as any other (the engine owns them only at the root)', () => {
    const resource = (size: string) =>
      obj({ apiVersion: str(), kind: str(), metadata: obj({ name: str() }), [size]: int() });
    const r = routerOf(
      compiled(root({ pools: arrayOf(resource('size')) }), root({ pools: arrayOf(resource('capacity')) }), [
        forEachRule(
          [{ strategy: 'FieldRename', fieldRename: { hubPath: 'size', spokePath: 'capacity' } }],
          {},
          ['pools', 'pools'],
        ),
      ]),
    );
    const element = { apiVersion: 'a/v1', kind: 'Disk', metadata: { name: 'd' } };
    expect(specOf(convert(r, object('v2', { pools: [{ ...element, size: 1 }] }), 'v2', 'v1'))).toEqual({
      pools: [{ ...element, capacity: 1 }],
    });
  });

  it('moves the array between paths when the items paths differ', () => {
    const hub = root({ hubReplicas: arrayOf(obj({ region: str() })) });
    const spoke = root({ spokeReplicas: arrayOf(obj({ zone: str() })) });
    const moved = routerOf(
      compiled(hub, spoke, [
        forEachRule(
          [{ strategy: 'FieldRename', fieldRename: { hubPath: 'region', spokePath: 'zone' } }],
          {},
          ['hubReplicas', 'spokeReplicas'],
        ),
      ]),
    );
    expect(specOf(convert(moved, object('v2', { hubReplicas: [{ region: 'eu' }] }), 'v2', 'v1'))).toEqual({
      spokeReplicas: [{ zone: 'eu' }],
    });
    expect(specOf(convert(moved, object('v1', { spokeReplicas: [{ zone: 'us' }] }), 'v1', 'v2'))).toEqual({
      hubReplicas: [{ region: 'us' }],
    });
  });
});

describe('ForEach refuses at run time what it cannot pair or convert, as the reference', () => {
  const failure = (r: Router, spec: Record<string, unknown>, from = 'v2', to = 'v1') => {
    const result = convert(r, object(from, spec), from, to);
    if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.object)}`);
    return result.error;
  };

  it.each([
    ['an object', {}],
    ['a string', 'm5'],
    ['null', null],
    ['a number', 3],
  ])('a value that is %s where the array is', (_, value) => {
    expect(failure(router, { nodePools: value })).toMatchObject({
      message: 'rule 0 (ForEach): forEach: value at "spec.nodePools" is not an array',
      path: 'spec.nodePools',
      ruleIndex: 0,
    });
  });

  it.each([
    ['a string', 'x'],
    ['null', null],
    ['an array', [{}]],
    ['a number', 1],
  ])('an element that is %s', (_, element) => {
    expect(failure(router, { nodePools: [{ mode: 'fast' }, element] })).toMatchObject({
      message: 'rule 0 (ForEach): forEach: element 1 at "spec.nodePools" is not an object',
      path: 'spec.nodePools[1]',
    });
  });

  it("a nested rule's failure, with the element's index", () => {
    expect(failure(router, { nodePools: [{ mode: 'fast' }, {}, { mode: 'medium' }] })).toMatchObject({
      message: 'rule 0 (ForEach): forEach: element 2: value "medium" has no mapping in rule 2 (EnumRemap)',
      path: 'spec.nodePools[2].mode',
      ruleIndex: 0,
    });
  });

  describe('with items paths that differ, a destination array already on the input', () => {
    const hub = root({ hubReplicas: arrayOf(obj({ region: str() })) });
    const spoke = root({ spokeReplicas: arrayOf(obj({ zone: str() })) });
    const paired = routerOf(
      compiled(hub, spoke, [
        forEachRule(
          [{ strategy: 'FieldRename', fieldRename: { hubPath: 'region', spokePath: 'zone' } }],
          {},
          ['hubReplicas', 'spokeReplicas'],
        ),
      ]),
    );

    it('of another length fails: strict positional correspondence', () => {
      const input = { hubReplicas: [{ region: 'a' }, { region: 'b' }], spokeReplicas: [{ zone: 'a' }] };
      expect(failure(paired, input)).toMatchObject({
        message:
          'rule 0 (ForEach): forEach: length mismatch between "spec.hubReplicas" (2) and "spec.spokeReplicas" (1)',
        path: 'spec.spokeReplicas',
      });
    });

    it('that is not an array fails', () => {
      expect(failure(paired, { hubReplicas: [], spokeReplicas: 'x' })).toMatchObject({
        message: 'rule 0 (ForEach): forEach: value at "spec.spokeReplicas" is not an array',
      });
    });

    it('of the same length is replaced by the converted source', () => {
      const input = { hubReplicas: [{ region: 'a' }], spokeReplicas: [{ zone: 'stale' }] };
      expect(specOf(convert(paired, object('v2', input), 'v2', 'v1'))).toEqual({
        spokeReplicas: [{ zone: 'a' }],
      });
    });

    it('is not looked at when the source array is absent', () => {
      expect(specOf(convert(paired, object('v2', { spokeReplicas: 'x' }), 'v2', 'v1'))).toEqual({});
    });
  });

  it('a nested ForEach failure names both elements', () => {
    const hub = root({ groups: arrayOf(obj({ members: arrayOf(obj({ role: enumOf('admin') })) })) });
    const spoke = root({ groups: arrayOf(obj({ members: arrayOf(obj({ role: enumOf('Admin') })) })) });
    const inner = {
      strategy: 'ForEach',
      forEach: {
        hubItemsPath: 'members',
        spokeItemsPath: 'members',
        rules: [
          { strategy: 'EnumRemap', enumRemap: { path: 'role', mapping: [{ hub: 'admin', spoke: 'Admin' }] } },
        ],
      },
    };
    const nested = routerOf(compiled(hub, spoke, [forEachRule([inner], {}, ['groups', 'groups'])]));
    expect(
      failure(nested, { groups: [{}, { members: [{ role: 'admin' }, { role: 'root' }] }] }),
    ).toMatchObject({
      message:
        'rule 0 (ForEach): forEach: element 1: rule 0 (ForEach): forEach: element 1: value "root" has no mapping in rule 0 (EnumRemap)',
      path: 'spec.groups[1].members[1].role',
    });
    expect(failure(nested, { groups: [{ members: [1] }] })).toMatchObject({
      message:
        'rule 0 (ForEach): forEach: element 0: rule 0 (ForEach): forEach: element 0 at "members" is not an object',
      path: 'spec.groups[0].members[0]',
    });
  });
});

describe('ForEach verdicts', () => {
  const hub = root({ pools: arrayOf(obj({ size: int() })) });
  const spoke = root({ pools: arrayOf(obj({ size: int(), tier: str() })) });
  const defaultTier = (acknowledgeLossy: boolean) => ({
    strategy: 'DefaultValue',
    defaultValue: { path: 'tier', existsOn: 'Spoke', default: 'standard' },
    acknowledgeLossy,
  });
  const paths = ['pools', 'pools'];

  it('is lossy exactly where a nested rule is, and fills the default in every element', () => {
    const r = routerOf(
      compiled(hub, spoke, [forEachRule([defaultTier(true)], { acknowledgeLossy: true }, paths)]),
    );
    expect(r.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: false });
    expect(specOf(convert(r, object('v2', { pools: [{ size: 1 }, {}] }), 'v2', 'v1'))).toEqual({
      pools: [{ size: 1, tier: 'standard' }, { tier: 'standard' }],
    });
    expect(specOf(convert(r, object('v1', { pools: [{ size: 1, tier: 'gold' }] }), 'v1', 'v2'))).toEqual({
      pools: [{ size: 1 }],
    });
  });

  it('needs the loss acknowledged on the ForEach too, as the reference', () => {
    const [only, ...rest] = errorsOf(compiled(hub, spoke, [forEachRule([defaultTier(true)], {}, paths)]));
    expect(rest).toEqual([]);
    expect(only).toMatchObject({ code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.pools' });
    expect(only?.message).toBe(
      'ForEach loses information converting spoke → hub: its nested rules lose information in each element converting spoke → hub: forEach.rules[0] (DefaultValue): tier exists only on the spoke; converting spoke → hub drops its value (DefaultValue).',
    );
  });

  it("reports an unacknowledged nested rule at the ForEach, naming it, with the path under the items' path", () => {
    const errors = errorsOf(
      compiled(hub, spoke, [forEachRule([defaultTier(false)], { acknowledgeLossy: true }, paths)]),
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'UnacknowledgedLossy', ruleIndex: 0, path: 'spec.pools.tier' });
    expect(errors[0]?.message).toMatch(
      /^forEach\.rules\[0\] \(DefaultValue\): DefaultValue loses information/,
    );
  });

  it('an element field dropped under unmappedFieldPolicy: Warn makes the direction lossy without an acknowledgement', () => {
    const result = compiled(
      hub,
      spoke,
      [
        forEachRule(
          [{ strategy: 'FieldRename', fieldRename: { hubPath: 'size', spokePath: 'size' } }],
          {},
          paths,
        ),
      ],
      {
        unmappedFieldPolicy: 'Warn',
        unmappedFieldReason: 'tier is being retired',
      },
    );
    const r = routerOf(result);
    expect(r.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: false });
    if (result.ok)
      expect(result.warnings).toEqual([
        expect.objectContaining({
          code: 'UnclaimedField',
          severity: 'warning',
          ruleIndex: 0,
          path: 'spec.pools.tier',
          message: expect.stringMatching(
            /^In each element of spec\.pools: The spoke declares tier .* tier is being retired/,
          ),
        }),
      ]);
    expect(specOf(convert(r, object('v1', { pools: [{ size: 2, tier: 'gold' }] }), 'v1', 'v2'))).toEqual({
      pools: [{ size: 2 }],
    });
  });

  it('a nested `when` reads the element, and its loss is the ForEach’s', () => {
    const h = root({ pools: arrayOf(obj({ type: str(), size: int() })) });
    const s = root({ pools: arrayOf(obj({ type: str(), capacity: int() })) });
    const rename = {
      strategy: 'FieldRename',
      fieldRename: { hubPath: 'size', spokePath: 'capacity' },
      when: { path: 'type', equals: 'disk' },
      acknowledgeLossy: true,
    };
    const result = compiled(h, s, [forEachRule([rename], { acknowledgeLossy: true }, paths)]);
    const r = routerOf(result);
    expect(r.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    if (result.ok)
      expect(result.warnings).toEqual([
        expect.objectContaining({ code: 'PartialCoverage', ruleIndex: 0, path: 'spec.pools.size' }),
      ]);
    expect(
      specOf(
        convert(
          r,
          object('v2', {
            pools: [
              { type: 'disk', size: 1 },
              { type: 'ram', size: 2 },
            ],
          }),
          'v2',
          'v1',
        ),
      ),
    ).toEqual({ pools: [{ type: 'disk', capacity: 1 }, { type: 'ram' }] });
  });

  it('a `when` on the ForEach carries the array over where it does not hold, if both sides declare it alike', () => {
    const same = root({ pools: arrayOf(obj({ size: int(), tier: str() })), mode: str() });
    const swap = [
      { strategy: 'FieldRename', fieldRename: { hubPath: 'size', spokePath: 'size' } },
      { strategy: 'FieldRename', fieldRename: { hubPath: 'tier', spokePath: 'tier' } },
    ];
    const r = routerOf(
      compiled(same, same, [forEachRule(swap, { when: { path: 'spec.mode', equals: 'on' } }, paths)]),
    );
    expect(r.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    const input = { mode: 'off', pools: [{ size: 1, extra: true }, 'not an object'] };
    expect(specOf(convert(r, object('v2', input), 'v2', 'v1'))).toEqual(input);
  });
});

describe('ForEach compile-time refusals', () => {
  const codes = (result: CompileResult) => errorsOf(result).map((d) => [d.code, d.ruleIndex, d.path]);

  it('an items path the schema does not declare, or that is not an array of objects with fields', () => {
    const h = root({
      list: arrayOf(str()),
      maps: arrayOf(mapOf(str())),
      one: obj({ a: str() }),
      pools: arrayOf(hubPool),
    });
    const rule = (hubPath: string) => forEachRule(renames, {}, [hubPath, 'nodePools']);
    expect(codes(compiled(h, spokeV, [rule('poolz')]))).toEqual([['UnknownPath', 0, 'spec.poolz']]);
    for (const [path, says] of [
      ['list', 'its elements are string'],
      ['maps', 'its elements are a map (additionalProperties)'],
      ['one', 'it is an object with fields, not an array with an item schema'],
    ]) {
      const [only] = errorsOf(compiled(h, spokeV, [rule(path as string)]));
      expect(only).toMatchObject({ code: 'ShapeMismatch', ruleIndex: 0, path: `spec.${path}` });
      expect(only?.message).toContain(says);
    }
  });

  it("a nested rule's error, located at the ForEach, the nested rule named and its path under the items path", () => {
    const typo = [
      { strategy: 'FieldRename', fieldRename: { hubPath: 'instanceTyp', spokePath: 'machineType' } },
      ...renames.slice(1),
    ];
    const [only, ...rest] = errorsOf(
      compiled(hubV, spokeV, [
        { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.name', spokePath: 'spec.name' } },
        forEachRule(typo),
      ]),
    );
    expect(rest).toEqual([]);
    expect(only).toMatchObject({
      code: 'UnknownPath',
      version: 'v1',
      ruleIndex: 1,
      path: 'spec.nodePools.instanceTyp',
      hint: 'Did you mean instanceType?',
    });
    expect(only?.message).toBe(
      'forEach.rules[0] (FieldRename): The hub schema (hub version) declares no field instanceTyp.',
    );
  });

  it('an item field no nested rule accounts for, on either side, with its full path', () => {
    const h = root({ replicas: arrayOf(obj({ region: str(), hubOnly: str() })) });
    const s = root({ readReplicas: arrayOf(obj({ zone: str(), spokeOnly: str() })) });
    const result = compiled(h, s, [
      forEachRule([{ strategy: 'FieldRename', fieldRename: { hubPath: 'region', spokePath: 'zone' } }], {}, [
        'replicas',
        'readReplicas',
      ]),
    ]);
    const errors = errorsOf(result);
    expect(errors.map((d) => [d.code, d.ruleIndex, d.path])).toEqual([
      ['UnclaimedField', 0, 'spec.replicas.hubOnly'],
      ['UnclaimedField', 0, 'spec.readReplicas.spokeOnly'],
    ]);
    expect(errors[0]?.message).toBe(
      'In each element of hub spec.replicas and spoke spec.readReplicas: The hub declares hubOnly (string) but the spoke does not, and no rule claims it.',
    );
  });

  it('an item field that differs between the sides, and a nested rule between fields of different shapes', () => {
    const h = root({ pools: arrayOf(obj({ size: int(), name: str() })) });
    const s = root({ pools: arrayOf(obj({ size: str(), name: str() })) });
    const rename = (field: string) => ({
      strategy: 'FieldRename',
      fieldRename: { hubPath: field, spokePath: field },
    });
    const [differs, ...none] = errorsOf(
      compiled(h, s, [forEachRule([rename('name')], {}, ['pools', 'pools'])]),
    );
    expect(none).toEqual([]);
    expect(differs).toMatchObject({ code: 'UnclaimedField', ruleIndex: 0, path: 'spec.pools.size' });
    expect(differs?.message).toBe(
      'In each element of spec.pools: size differs: hub integer, spoke string; no rule claims it.',
    );
    const [mismatch] = errorsOf(compiled(h, s, [forEachRule([rename('size')], {}, ['pools', 'pools'])]));
    expect(mismatch).toMatchObject({ code: 'ShapeMismatch', ruleIndex: 0, path: 'spec.pools.size' });
    expect(mismatch?.message).toMatch(
      /^forEach\.rules\[0\] \(FieldRename\): FieldRename carries the value unchanged/,
    );
  });

  it('two nested rules claiming one item field, and a rule beside the ForEach claiming its array', () => {
    const twice = [
      ...renames,
      { strategy: 'FieldRename', fieldRename: { hubPath: 'instanceType', spokePath: 'zone' } },
    ];
    const [conflict] = errorsOf(compiled(hubV, spokeV, [forEachRule(twice)]));
    expect(conflict).toMatchObject({
      code: 'ConflictingRules',
      ruleIndex: 0,
      path: 'spec.nodePools.instanceType',
    });
    expect(conflict?.message).toMatch(
      /^forEach\.rules\[3\] \(FieldRename\): Rules 0 and 3 both claim the hub field instanceType/,
    );
    const beside = {
      strategy: 'Delete',
      delete: { path: 'spec.nodePools', existsOn: 'Hub' },
      acknowledgeLossy: true,
    };
    expect(codes(compiled(hubV, spokeV, [forEachRule(renames), beside]))).toContainEqual([
      'ConflictingRules',
      1,
      'spec.nodePools',
    ]);
  });

  it('a third level of ForEach, which the API refuses too', () => {
    const leaf = obj({ x: str() });
    const schema = root({ a: arrayOf(obj({ b: arrayOf(obj({ c: arrayOf(leaf) })) })) });
    const level = (path: string, rules: unknown[]) => ({
      strategy: 'ForEach',
      forEach: { hubItemsPath: path, spokeItemsPath: path, rules },
      acknowledgeLossy: false,
    });
    const rename = {
      strategy: 'FieldRename',
      fieldRename: { hubPath: 'x', spokePath: 'x' },
      acknowledgeLossy: false,
    };
    const three = level('spec.a', [level('b', [level('c', [rename])])]);
    expect(ruleSchema.safeParse(three).success).toBe(false);
    const raw: ConversionSpec = {
      hubVersion: 'v2',
      spokes: [{ version: 'v1', rules: [three as unknown as Rule] }],
    };
    const [only] = errorsOf(compile(raw, versions({ v2: schema, v1: schema })));
    expect(only).toMatchObject({ code: 'InvalidRule', ruleIndex: 0, path: 'spec.a.b.c' });
    expect(only?.message).toBe(
      'forEach.rules[0] (ForEach): forEach.rules[0] (ForEach): This ForEach is nested 3 levels deep; at most 2 are supported (a ForEach inside a ForEach whose rules hold none).',
    );
    const wholeC = {
      strategy: 'FieldRename',
      fieldRename: { hubPath: 'c', spokePath: 'c' },
      acknowledgeLossy: false,
    };
    const two = level('spec.a', [level('b', [wholeC])]);
    const twoLevels = { ...raw, spokes: [{ version: 'v1', rules: [two as unknown as Rule] }] };
    expect(compile(twoLevels, versions({ v2: schema, v1: schema })).ok).toBe(true);
  });
});

// --- properties

/** Values for an element field: mostly of the declared type, sometimes anything. */
function fieldValue(typed: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 4, arbitrary: typed }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
}

function elements(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<unknown> {
  const element = fc.record({ ...fields, unknown: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] });
  return fc.oneof({ weight: 8, arbitrary: element }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) });
}

function arrays(element: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 6, arbitrary: fc.array(element, { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.array(element, { minLength: 40, maxLength: 60 }) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  );
}

const hubPools = arrays(
  elements({
    instanceType: fieldValue(fc.string({ maxLength: 4 })),
    nodeCount: fieldValue(fc.integer()),
    mode: fieldValue(fc.constantFrom('fast', 'slow')),
    zone: fieldValue(fc.string({ maxLength: 3 })),
  }),
);
const spokePools = arrays(
  elements({
    machineType: fieldValue(fc.string({ maxLength: 4 })),
    replicas: fieldValue(fc.integer()),
    mode: fieldValue(fc.constantFrom('FAST', 'SLOW')),
    zone: fieldValue(fc.string({ maxLength: 3 })),
  }),
);

function objects(version: string, pools: fc.Arbitrary<unknown>) {
  return fc
    .record({ nodePools: pools, name: fc.string({ maxLength: 3 }) }, { requiredKeys: [] })
    .map((specFields) => object(version, specFields));
}

/** There and back: undefined when either step fails (allowed: the input had something unconvertible). */
function roundTrip(r: Router, input: object, from: string, to: string): unknown {
  const there = convert(r, input, from, to);
  if (!there.ok) return undefined;
  const back = convert(r, there.object, to, from);
  expect(back.ok, 'what one step produced, the way back converts').toBe(true);
  return back.ok ? back.object : undefined;
}

describe('ForEach round trips (fast-check)', () => {
  it('hub → spoke → hub and spoke → hub → spoke restore the input, or the conversion fails without throwing', () => {
    const lossless = router.spokes.get('v1')?.lossless;
    expect(lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    fc.assert(
      fc.property(objects('v2', hubPools), objects('v1', spokePools), (hub, spoke) => {
        for (const [input, from, to] of [
          [hub, 'v2', 'v1'],
          [spoke, 'v1', 'v2'],
        ] as const) {
          const back = roundTrip(router, input, from, to);
          if (back !== undefined) expect(back).toEqual(input);
        }
      }),
    );
  });

  it('converts well-formed objects always, and the same whether the input is copied or given away', () => {
    const wellFormed = fc.array(
      fc.record(
        { instanceType: fc.string(), nodeCount: fc.integer(), mode: fc.constantFrom('fast', 'slow') },
        { requiredKeys: [] },
      ),
      { maxLength: 5 },
    );
    fc.assert(
      fc.property(objects('v2', wellFormed), objects('v2', hubPools), (good, any) => {
        expect(roundTrip(router, good, 'v2', 'v1')).toEqual(good);
        const copied = convert(router, any, 'v2', 'v1');
        expect(convertOwned(router, structuredClone(any), 'v2', 'v1')).toEqual(copied);
      }),
    );
  });

  it('a ForEach inside a ForEach round-trips too', () => {
    const hub = root({ groups: arrayOf(obj({ name: str(), members: arrayOf(obj({ user: str() })) })) });
    const spoke = root({ groups: arrayOf(obj({ name: str(), members: arrayOf(obj({ login: str() })) })) });
    const inner = {
      strategy: 'ForEach',
      forEach: {
        hubItemsPath: 'members',
        spokeItemsPath: 'members',
        rules: [{ strategy: 'FieldRename', fieldRename: { hubPath: 'user', spokePath: 'login' } }],
      },
    };
    const nested = routerOf(compiled(hub, spoke, [forEachRule([inner], {}, ['groups', 'groups'])]));
    expect(nested.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    const groups = (field: string) =>
      arrays(
        elements({
          name: fieldValue(fc.string()),
          members: arrays(elements({ [field]: fieldValue(fc.string()) })),
        }),
      );
    const objectsOf = (version: string, field: string) =>
      fc.record({ groups: groups(field) }, { requiredKeys: [] }).map((s) => object(version, s));
    fc.assert(
      fc.property(objectsOf('v2', 'user'), objectsOf('v1', 'login'), (h, s) => {
        const hubBack = roundTrip(nested, h, 'v2', 'v1');
        if (hubBack !== undefined) expect(hubBack).toEqual(h);
        const spokeBack = roundTrip(nested, s, 'v1', 'v2');
        if (spokeBack !== undefined) expect(spokeBack).toEqual(s);
      }),
    );
  });
});
