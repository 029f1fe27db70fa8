import { describe, expect, it } from 'vitest';
import { type CompileResult, type ConversionSpec, compile, type TargetVersion } from './compile.ts';
import { arrayOf, enumOf, int, obj, root, spec, str, versions } from './test-support.ts';
import { deriveVerdicts, schemaHash } from './verdicts.ts';

const rename = (hubPath: string, spokePath: string) => ({
  strategy: 'FieldRename',
  fieldRename: { hubPath, spokePath },
});
const del = (path: string, existsOn: 'Hub' | 'Spoke') => ({
  strategy: 'Delete',
  delete: { path, existsOn },
  acknowledgeLossy: true,
});
const forEach = (items: string, rules: unknown[]) => ({
  strategy: 'ForEach',
  forEach: { hubItemsPath: items, spokeItemsPath: items, rules },
});
const BOTH = { hubToSpoke: true, spokeToHub: true };
const NEITHER = { hubToSpoke: false, spokeToHub: false };
const WARN = { unmappedFieldPolicy: 'Warn', unmappedFieldReason: 'retired' } as const;

function verdicts(config: ConversionSpec, target: TargetVersion[]) {
  const result = compile(config, target);
  return { result, verdict: deriveVerdicts(result) };
}

describe('deriveVerdicts of a config that compiles', () => {
  const target = versions({
    v3: root({ size: int(), owner: str(), legacy: str() }),
    v2: root({ capacity: int(), owner: str() }),
    v1: root({ size: int(), owner: str(), legacy: str() }),
  });
  const config = spec('v3', {
    v2: [rename('spec.size', 'spec.capacity'), del('spec.legacy', 'Hub')],
    v1: [],
  });
  const { result, verdict } = verdicts(config, target);

  it('gives each spoke its plan’s verdict and each rule its own, with the paths it claims', () => {
    expect(result.ok).toBe(true);
    expect(verdict.overallLossless).toBe(false);
    expect(verdict.spokes).toEqual([
      {
        version: 'v2',
        lossless: { hubToSpoke: false, spokeToHub: true },
        ruleResults: [
          {
            index: 0,
            strategy: 'FieldRename',
            hubPaths: ['spec.size'],
            spokePaths: ['spec.capacity'],
            lossless: BOTH,
            resolved: true,
            errors: [],
            warnings: [],
          },
          {
            index: 1,
            strategy: 'Delete',
            hubPaths: ['spec.legacy'],
            spokePaths: [],
            lossless: { hubToSpoke: false, spokeToHub: true },
            resolved: true,
            errors: [],
            warnings: [],
          },
        ],
        fieldsUncoveredHub: [],
        fieldsUncoveredSpoke: [],
        errors: [],
        warnings: [],
      },
      {
        version: 'v1',
        lossless: BOTH,
        ruleResults: [],
        fieldsUncoveredHub: [],
        fieldsUncoveredSpoke: [],
        errors: [],
        warnings: [],
      },
    ]);
    if (result.ok)
      for (const spoke of verdict.spokes)
        expect(spoke.lossless).toEqual(result.router.spokes.get(spoke.version)?.lossless);
  });

  it('is overall lossless when every spoke is, both ways', () => {
    const lossless = verdicts(spec('v3', { v1: [] }), target).verdict;
    expect(lossless.overallLossless).toBe(true);
  });
});

describe('deriveVerdicts of a config that does not compile', () => {
  it('keeps the verdicts of the rules that resolved, and puts each diagnostic where it belongs', () => {
    const target = versions({
      v2: root({ size: int(), owner: str() }),
      v1: root({ replicas: int(), owner: str() }),
    });
    const { result, verdict } = verdicts(
      spec('v2', { v1: [rename('spec.size', 'spec.replicas'), rename('spec.owner', 'spec.nobody')] }),
      target,
    );
    expect(result.ok).toBe(false);
    expect(verdict.overallLossless).toBe(false);
    const [spoke] = verdict.spokes;
    expect(spoke?.lossless, 'a spoke with an error proves nothing').toEqual(NEITHER);
    expect(spoke?.ruleResults[0]).toMatchObject({ resolved: true, lossless: BOTH, errors: [] });
    expect(spoke?.ruleResults[1]).toMatchObject({
      resolved: false,
      hubPaths: [],
      spokePaths: [],
      lossless: NEITHER,
      errors: [expect.objectContaining({ code: 'UnknownPath', ruleIndex: 1, path: 'spec.nobody' })],
    });
    expect(spoke?.errors, "the rule's error is the rule's").toEqual([]);
    expect(spoke?.fieldsUncoveredHub, 'coverage means nothing before every rule resolved').toEqual([]);
  });

  it('lists the fields no rule accounts for on the side whose value would not be carried', () => {
    const target = versions({
      v2: root({ hubOnly: str(), typed: int(), same: str() }),
      v1: root({ spokeOnly: str(), typed: str(), same: str() }),
    });
    const { verdict } = verdicts(spec('v2', { v1: [] }), target);
    const [spoke] = verdict.spokes;
    expect(spoke?.fieldsUncoveredHub).toEqual(['spec.hubOnly', 'spec.typed']);
    expect(spoke?.fieldsUncoveredSpoke, 'in the order compile reports them').toEqual([
      'spec.typed',
      'spec.spokeOnly',
    ]);
    expect(spoke?.errors.map((d) => d.code)).toEqual(['UnclaimedField', 'UnclaimedField', 'UnclaimedField']);
    expect(spoke?.lossless).toEqual(NEITHER);
  });

  it('gives every spoke the hub’s error, and resolves nothing, when the hub cannot be compiled against', () => {
    const target = versions({ v2: root({ size: int() }), v1: root({ size: int() }) });
    const { verdict } = verdicts(spec('v1', { v2: [rename('spec.size', 'spec.size')] }), target);
    expect(verdict.spokes).toEqual([
      expect.objectContaining({
        version: 'v2',
        lossless: NEITHER,
        ruleResults: [],
        errors: [expect.objectContaining({ code: 'HubNotStorage' })],
      }),
    ]);
  });

  it('reports a spoke listed twice once, from its first listing, with the duplicate as its error', () => {
    const target = versions({ v2: root({ size: int() }), v1: root({ replicas: int() }) });
    const config: ConversionSpec = {
      hubVersion: 'v2',
      spokes: [
        ...spec('v2', { v1: [rename('spec.size', 'spec.nobody')] }).spokes,
        ...spec('v2', { v1: [rename('spec.nothing', 'spec.replicas')] }).spokes,
      ],
    };
    const { result, verdict } = verdicts(config, target);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(
      result.diagnostics.map((d) => [d.code, d.ruleIndex]),
      'the second listing is not compiled',
    ).toEqual([
      ['DuplicateSpoke', undefined],
      ['UnknownPath', 0],
    ]);
    expect(verdict.spokes).toEqual([
      expect.objectContaining({
        version: 'v1',
        lossless: NEITHER,
        ruleResults: [expect.objectContaining({ resolved: false, errors: [expect.anything()] })],
        errors: [expect.objectContaining({ code: 'DuplicateSpoke' })],
      }),
    ]);
  });

  it('reports a listed version the target does not have as that spoke’s error', () => {
    const target = versions({ v2: root({ size: int() }), v1: root({ size: int() }) });
    const { verdict } = verdicts(spec('v2', { v1: [], v9: [] }), target);
    expect(verdict.spokes.map((s) => [s.version, s.errors.map((d) => d.code)])).toEqual([
      ['v1', []],
      ['v9', ['UnknownVersion']],
    ]);
    expect(verdict.spokes[0]?.lossless, 'v1 alone compiles, and is lossless').toEqual(BOTH);
  });
});

describe('deriveVerdicts agrees with compile', () => {
  const swap = {
    strategy: 'EnumRemap',
    enumRemap: {
      path: 'spec.mode',
      mapping: [
        { hub: 'a', spoke: 'b' },
        { hub: 'b', spoke: 'a' },
      ],
    },
  };
  const cases: [string, ConversionSpec, TargetVersion[]][] = [
    [
      'a rename and an acknowledged delete',
      spec('v2', { v1: [rename('spec.size', 'spec.replicas'), del('spec.debug', 'Spoke')] }),
      versions({ v2: root({ size: int() }), v1: root({ replicas: int(), debug: str() }) }),
    ],
    [
      'a `when` EnumRemap whose predicate reads its own field (lossy: the predicate may read differently back)',
      spec('v2', { v1: [{ ...swap, when: { path: 'spec.mode', equals: 'a' }, acknowledgeLossy: true }] }),
      versions({ v2: root({ mode: enumOf('a', 'b') }), v1: root({ mode: enumOf('a', 'b') }) }),
    ],
    [
      'a `when` EnumRemap whose predicate reads a field no rule claims (carried over, lossless)',
      spec('v2', { v1: [{ ...swap, when: { path: 'spec.tier', equals: 'gold' } }] }),
      versions({
        v2: root({ mode: enumOf('a', 'b'), tier: str() }),
        v1: root({ mode: enumOf('a', 'b'), tier: str() }),
      }),
    ],
    [
      'a ForEach renaming a field of every element',
      spec('v2', { v1: [forEach('spec.pools', [rename('size', 'count')])] }),
      versions({
        v2: root({ pools: arrayOf(obj({ size: int() })) }),
        v1: root({ pools: arrayOf(obj({ count: int() })) }),
      }),
    ],
    [
      'unmappedFieldPolicy: Warn dropping a hub-only field',
      { ...spec('v2', { v1: [] }), ...WARN },
      versions({ v2: root({ size: int(), old: str() }), v1: root({ size: int() }) }),
    ],
    [
      'unmappedFieldPolicy: Warn dropping a field of every element of a ForEach',
      { ...spec('v2', { v1: [forEach('spec.pools', [rename('size', 'count')])] }), ...WARN },
      versions({
        v2: root({ pools: arrayOf(obj({ size: int(), extra: str() })) }),
        v1: root({ pools: arrayOf(obj({ count: int() })) }),
      }),
    ],
    [
      'unmappedFieldPolicy: Warn dropping a field of the elements of a ForEach in a ForEach',
      {
        ...spec('v2', { v1: [forEach('spec.pools', [forEach('disks', [rename('size', 'count')])])] }),
        ...WARN,
      },
      versions({
        v2: root({ pools: arrayOf(obj({ disks: arrayOf(obj({ size: int(), extra: str() })) })) }),
        v1: root({ pools: arrayOf(obj({ disks: arrayOf(obj({ count: int() })) })) }),
      }),
    ],
  ];
  const named = (name: string) => {
    const found = cases.find(([title]) => title.startsWith(name));
    if (!found) throw new Error(`no case ${name}`);
    return { config: found[1], target: found[2] };
  };

  it.each(cases)('%s: the verdict derived without a plan is the plan’s', (_, config, target) => {
    const result = compile(config, target);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    // The same diagnostics and reports, but no Router: the verdicts come from the reports alone.
    const withoutPlan: CompileResult = {
      ok: false,
      diagnostics: result.warnings,
      spokeReports: result.spokeReports,
    };
    const derived = deriveVerdicts(withoutPlan);
    expect(derived.spokes.map((s) => s.lossless)).toEqual(
      deriveVerdicts(result).spokes.map((s) => s.lossless),
    );
    for (const spoke of derived.spokes)
      expect(spoke.lossless, spoke.version).toEqual(result.router.spokes.get(spoke.version)?.lossless);
  });

  it.each(
    cases,
  )('%s: the rules and the uncovered fields account for the plan’s verdict', (_, config, target) => {
    const result = compile(config, target);
    if (!result.ok) throw new Error('expected the config to compile');
    for (const spoke of deriveVerdicts(result).spokes) {
      const plan = result.router.spokes.get(spoke.version)?.lossless;
      const uncovered = { hubToSpoke: spoke.fieldsUncoveredHub, spokeToHub: spoke.fieldsUncoveredSpoke };
      for (const d of ['hubToSpoke', 'spokeToHub'] as const)
        expect(plan?.[d], `${spoke.version} ${d}`).toBe(
          spoke.ruleResults.every((r) => r.lossless[d]) && uncovered[d].length === 0,
        );
    }
  });

  it('lists a dropped field under Warn, with the warning on the spoke', () => {
    const { config, target } = named('unmappedFieldPolicy: Warn dropping a hub-only field');
    const [spoke] = deriveVerdicts(compile(config, target)).spokes;
    expect(spoke).toMatchObject({
      lossless: { hubToSpoke: false, spokeToHub: true },
      fieldsUncoveredHub: ['spec.old'],
      errors: [],
      warnings: [expect.objectContaining({ code: 'UnclaimedField', path: 'spec.old' })],
    });
  });

  it('gives a ForEach whose elements drop fields under Warn its claims and lossless verdict, the warning, and the spoke the dropped field', () => {
    const { config, target } = named('unmappedFieldPolicy: Warn dropping a field of every element');
    const result = compile(config, target);
    expect(result.ok).toBe(true);
    const [spoke] = deriveVerdicts(result).spokes;
    expect(spoke).toEqual({
      version: 'v1',
      lossless: { hubToSpoke: false, spokeToHub: true },
      ruleResults: [
        {
          index: 0,
          strategy: 'ForEach',
          hubPaths: ['spec.pools'],
          spokePaths: ['spec.pools'],
          lossless: BOTH,
          resolved: true,
          errors: [],
          warnings: [
            expect.objectContaining({
              code: 'UnclaimedField',
              severity: 'warning',
              ruleIndex: 0,
              path: 'spec.pools.extra',
            }),
          ],
        },
      ],
      fieldsUncoveredHub: ['spec.pools.extra'],
      fieldsUncoveredSpoke: [],
      errors: [],
      warnings: [],
    });
  });

  it('qualifies a field dropped in the elements of a ForEach in a ForEach with both items paths', () => {
    const { config, target } = named(
      'unmappedFieldPolicy: Warn dropping a field of the elements of a ForEach in',
    );
    const [spoke] = deriveVerdicts(compile(config, target)).spokes;
    expect(spoke?.fieldsUncoveredHub).toEqual(['spec.pools.disks.extra']);
    expect(spoke?.ruleResults[0]?.warnings.map((d) => [d.code, d.path])).toEqual([
      ['UnclaimedField', 'spec.pools.disks.extra'],
    ]);
    expect(spoke?.lossless).toEqual({ hubToSpoke: false, spokeToHub: true });
  });
});

describe('deriveVerdicts of a ForEach whose nested rule does not resolve', () => {
  const target = versions({
    v2: root({ pools: arrayOf(obj({ size: int() })), owner: str() }),
    v1: root({ pools: arrayOf(obj({ count: int() })), holder: str() }),
  });
  const { result, verdict } = verdicts(
    spec('v2', {
      v1: [forEach('spec.pools', [rename('size', 'nobody')]), rename('spec.owner', 'spec.holder')],
    }),
    target,
  );
  const [spoke] = verdict.spokes;

  it('reads the ForEach as unresolved, with the nested error located at it', () => {
    expect(result.ok).toBe(false);
    expect(spoke?.ruleResults[0]).toEqual({
      index: 0,
      strategy: 'ForEach',
      hubPaths: [],
      spokePaths: [],
      lossless: NEITHER,
      resolved: false,
      errors: [
        expect.objectContaining({
          code: 'UnknownPath',
          ruleIndex: 0,
          path: 'spec.pools.nobody',
          message: expect.stringContaining('forEach.rules[0] (FieldRename)'),
        }),
      ],
      warnings: [],
    });
  });

  it('keeps the verdicts of the other rules, and proves nothing about the spoke', () => {
    expect(spoke?.ruleResults[1]).toMatchObject({
      index: 1,
      resolved: true,
      hubPaths: ['spec.owner'],
      spokePaths: ['spec.holder'],
      lossless: BOTH,
      errors: [],
    });
    expect(spoke?.lossless).toEqual(NEITHER);
    expect(spoke?.errors, "the nested rule's error is the ForEach's").toEqual([]);
    expect(spoke?.fieldsUncoveredHub, 'coverage means nothing before every rule resolved').toEqual([]);
    expect(verdict.overallLossless).toBe(false);
  });
});

describe('schemaHash', () => {
  const target = versions({ v2: root({ size: int() }), v1: root({ replicas: int() }) });

  it('is sha256 of what compile reads, whatever order the keys were written in', () => {
    const reordered = target.map((v) => ({
      schema: v.schema,
      storage: v.storage,
      served: v.served,
      name: v.name,
    }));
    expect(schemaHash(target)).toMatch(/^sha256:[A-Za-z0-9_-]{43}$/);
    expect(schemaHash(reordered)).toBe(schemaHash(target));
  });

  it('changes with a schema, a flag or the order of the versions', () => {
    const hash = schemaHash(target);
    expect(schemaHash(versions({ v2: root({ size: int() }), v1: root({ count: int() }) }))).not.toBe(hash);
    expect(schemaHash(target.map((v) => ({ ...v, served: v.name === 'v2' })))).not.toBe(hash);
    expect(schemaHash([...target].reverse())).not.toBe(hash);
  });
});
