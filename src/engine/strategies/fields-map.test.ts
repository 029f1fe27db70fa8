import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Rule } from '../../api/rules.ts';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { TargetSchema } from '../schema.ts';
import {
  compiled,
  enumOf,
  int,
  mapOf,
  obj,
  object,
  refusal,
  root,
  specOf,
  str,
  versions,
} from '../test-support.ts';

const openMap: TargetSchema = { type: 'object', additionalProperties: true };

const fieldsToMap = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  strategy: 'FieldsToMap',
  fieldsToMap: params,
  ...extra,
});
const mapToFields = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  strategy: 'MapToFields',
  mapToFields: params,
  ...extra,
});

// The docs' two examples in one plan: the hub's cpuLimit/memoryLimit are the spoke's limits map,
// the hub's tags map is the spoke's envTag/teamTag.
const hubV = { cpuLimit: str(), memoryLimit: str(), tags: mapOf(str()) };
const spokeV = { limits: mapOf(str()), envTag: str(), teamTag: str() };
const limitsParams = {
  hubPaths: ['spec.cpuLimit', 'spec.memoryLimit'],
  spokeMapPath: 'spec.limits',
  keyNames: { 'spec.cpuLimit': 'cpu', 'spec.memoryLimit': 'memory' },
};
const tagsParams = {
  hubMapPath: 'spec.tags',
  spokePaths: ['spec.envTag', 'spec.teamTag'],
  keyNames: { 'spec.envTag': 'env', 'spec.teamTag': 'team' },
};
const docsRules = [fieldsToMap(limitsParams), mapToFields(tagsParams)];
const docs = compiled(hubV, spokeV, docsRules);

describe('FieldsToMap and MapToFields', () => {
  it('gathers the fields into the map and spreads the map into the fields', () => {
    const down = convert(
      docs,
      object('v2', { cpuLimit: '4', memoryLimit: '16Gi', tags: { env: 'prod', team: 'platform' } }),
      'v2',
      'v1',
    );
    expect(specOf(down)).toEqual({
      limits: { cpu: '4', memory: '16Gi' },
      envTag: 'prod',
      teamTag: 'platform',
    });
    const up = convert(docs, object('v1', { limits: { cpu: '2' }, envTag: 'dev' }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ cpuLimit: '2', tags: { env: 'dev' } });
  });

  it('keys a field without keyNames by its last segment, and also where keyNames gives ""', () => {
    const router = compiled({ res: obj({ cpu: str() }), memory: str() }, { limits: mapOf(str()) }, [
      fieldsToMap({
        hubPaths: ['spec.res.cpu', 'spec.memory'],
        spokeMapPath: 'spec.limits',
        keyNames: { 'spec.memory': '' },
      }),
    ]);
    const down = convert(router, object('v2', { res: { cpu: '1' }, memory: '2' }), 'v2', 'v1');
    expect(specOf(down)).toEqual({ limits: { cpu: '1', memory: '2' } });
    const up = convert(router, object('v1', { limits: { cpu: '3' } }), 'v1', 'v2');
    expect(specOf(up)).toEqual({ res: { cpu: '3' } });
  });

  it('is lossless both ways with onUnknown…Key: Error (the default)', () => {
    expect(docs.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
  });

  it('with Drop, drops unknown keys and is lossy towards the fields', () => {
    const rules = [
      fieldsToMap({ ...limitsParams, onUnknownSpokeKey: 'Drop' }, { acknowledgeLossy: true }),
      mapToFields({ ...tagsParams, onUnknownHubKey: 'Drop' }, { acknowledgeLossy: true }),
    ];
    const router = compiled(hubV, spokeV, rules);
    expect(router.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: false });
    expect(specOf(convert(router, object('v2', { tags: { env: 'e', extra: 'x' } }), 'v2', 'v1'))).toEqual({
      envTag: 'e',
    });
    expect(specOf(convert(router, object('v1', { limits: { gpu: '1', cpu: '2' } }), 'v1', 'v2'))).toEqual({
      cpuLimit: '2',
    });

    const fieldsOnly = compiled({ cpuLimit: str(), memoryLimit: str() }, { limits: mapOf(str()) }, [
      rules[0],
    ]);
    expect(fieldsOnly.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: false });
    const mapOnly = compiled({ tags: mapOf(str()) }, { envTag: str(), teamTag: str() }, [rules[1]]);
    expect(mapOnly.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: false, spokeToHub: true });

    const unacknowledged = refusal({ cpuLimit: str() }, { limits: mapOf(str()) }, [
      fieldsToMap({ hubPaths: ['spec.cpuLimit'], spokeMapPath: 'spec.limits', onUnknownSpokeKey: 'Drop' }),
    ]);
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/onUnknownSpokeKey: Drop/);
  });

  it('fails on a key no field takes, and on a map that is not an object', () => {
    const unknown = convert(docs, object('v2', { tags: { env: 'e', owner: 'o' } }), 'v2', 'v1');
    expect(unknown).toMatchObject({
      ok: false,
      error: {
        path: 'spec.tags',
        ruleIndex: 1,
        message: expect.stringMatching(/"owner", which no field takes/),
      },
    });
    for (const limits of [null, 'cpu=1', ['cpu']]) {
      const wrong = convert(docs, object('v1', { limits }), 'v1', 'v2');
      expect(wrong).toMatchObject({
        ok: false,
        error: { message: expect.stringMatching(/is not an object/) },
      });
    }
  });

  it('writes nothing from absent fields, and gathers null values', () => {
    expect(specOf(convert(docs, object('v2', {}), 'v2', 'v1'))).toEqual({});
    expect(specOf(convert(docs, object('v2', { cpuLimit: null }), 'v2', 'v1'))).toEqual({
      limits: { cpu: null },
    });
    expect(specOf(convert(docs, object('v1', { limits: { cpu: null } }), 'v1', 'v2'))).toEqual({
      cpuLimit: null,
    });
  });

  it('does not restore an empty map: the reference spreads {} into nothing yet counts it lossless', () => {
    expect(specOf(convert(docs, object('v1', { limits: {} }), 'v1', 'v2'))).toEqual({});
    expect(specOf(convert(docs, object('v2', { tags: {} }), 'v2', 'v1'))).toEqual({});
  });

  it('gathers into an object with a property per key, and fails on its other properties', () => {
    const router = compiled(
      { cpu: str(), memory: str() },
      { limits: obj({ cpu: str(), memory: str(), gpu: str() }) },
      [fieldsToMap({ hubPaths: ['spec.cpu', 'spec.memory'], spokeMapPath: 'spec.limits' })],
    );
    expect(specOf(convert(router, object('v2', { cpu: '1' }), 'v2', 'v1'))).toEqual({ limits: { cpu: '1' } });
    expect(convert(router, object('v1', { limits: { gpu: '1' } }), 'v1', 'v2').ok).toBe(false);
  });

  it('refuses unknown paths', () => {
    const diagnostics = refusal(hubV, spokeV, [
      fieldsToMap({ hubPaths: ['spec.cpu', 'spec.memoryLimit'], spokeMapPath: 'spec.limit' }),
    ]);
    expect(diagnostics.map((d) => [d.code, d.path])).toEqual([
      ['UnknownPath', 'spec.limit'],
      ['UnknownPath', 'spec.cpu'],
    ]);
  });

  it('refuses a map side that is not an object', () => {
    const diagnostics = refusal({ a: str() }, { limits: str() }, [
      fieldsToMap({ hubPaths: ['spec.a'], spokeMapPath: 'spec.limits' }),
    ]);
    expect(diagnostics[0]?.message).toMatch(/needs an object on the spoke/);
  });

  it('refuses a path listed twice or inside another, and two fields under one key', () => {
    const twice = refusal({ a: str() }, { m: openMap }, [
      fieldsToMap({ hubPaths: ['spec.a', 'spec.a'], spokeMapPath: 'spec.m' }),
    ]);
    expect(twice.map((d) => d.message)).toEqual(['hubPaths lists spec.a twice.']);
    const nested = refusal({ a: obj({ b: str() }) }, { m: openMap }, [
      fieldsToMap({ hubPaths: ['spec.a', 'spec.a.b'], spokeMapPath: 'spec.m' }),
    ]);
    expect(nested.map((d) => d.message)).toEqual([
      'hubPaths lists spec.a and spec.a.b, one inside the other.',
    ]);
    const shared = refusal({ a: obj({ x: str() }), b: obj({ x: str() }) }, { m: openMap }, [
      fieldsToMap({ hubPaths: ['spec.a.x', 'spec.b.x'], spokeMapPath: 'spec.m' }),
    ]);
    expect(shared[0]?.message).toMatch(/spec\.a\.x and spec\.b\.x both take the map key "x"/);
  });

  it('refuses an empty list of fields, in a rule that did not go through the API', () => {
    const unparsed = compile(
      {
        hubVersion: 'v2',
        spokes: [
          {
            version: 'v1',
            rules: [fieldsToMap({ hubPaths: [], spokeMapPath: 'spec.m' }) as unknown as Rule],
          },
        ],
      },
      versions({ v2: root({ a: str() }), v1: root({ m: openMap }) }),
    );
    expect(unparsed.ok ? [] : unparsed.diagnostics.map((d) => d.message)).toEqual([
      'hubPaths lists no field.',
    ]);
  });

  it('refuses keyNames for a path the list does not name', () => {
    const diagnostics = refusal({ tags: openMap }, { env: str() }, [
      mapToFields({ hubMapPath: 'spec.tags', spokePaths: ['spec.env'], keyNames: { env: 'environment' } }),
    ]);
    expect(diagnostics[0]?.message).toMatch(/keyNames names env, which spokePaths does not list/);
  });

  it('refuses a field and map values of different shapes, and a key the map does not declare', () => {
    const typed = refusal({ count: int() }, { m: mapOf(str()) }, [
      fieldsToMap({ hubPaths: ['spec.count'], spokeMapPath: 'spec.m' }),
    ]);
    expect(typed[0]?.message).toMatch(
      /hub spec\.count is integer, but the spoke entry spec\.m\.count is string/,
    );
    const enumerated = refusal({ m: mapOf(str()) }, { env: enumOf('dev', 'prod') }, [
      mapToFields({ hubMapPath: 'spec.m', spokePaths: ['spec.env'] }),
    ]);
    expect(enumerated.map((d) => d.code)).toEqual(['ShapeMismatch']);
    const undeclared = refusal({ a: str() }, { m: obj({ b: str() }) }, [
      fieldsToMap({ hubPaths: ['spec.a'], spokeMapPath: 'spec.m' }),
    ]);
    expect(undeclared[0]?.message).toMatch(/declares no key "a"/);
  });

  it('accepts any field into a map of any value, as the reference tests do', () => {
    const router = compiled({ count: int(), tags: obj({ x: str() }) }, { m: openMap }, [
      fieldsToMap({ hubPaths: ['spec.count', 'spec.tags'], spokeMapPath: 'spec.m' }),
    ]);
    const down = convert(router, object('v2', { count: 3, tags: { x: 'y' } }), 'v2', 'v1');
    expect(specOf(down)).toEqual({ m: { count: 3, tags: { x: 'y' } } });
  });
});

describe('FieldsToMap and MapToFields properties', () => {
  const value = fc.option(fc.string(), { nil: null });
  const nullable: TargetSchema = { type: 'string', nullable: true };
  const router = compiled(
    { cpuLimit: nullable, memoryLimit: nullable, tags: mapOf(nullable) },
    { limits: mapOf(nullable), envTag: nullable, teamTag: nullable },
    docsRules,
  );

  it('hub → spoke → hub restores every hub object whose map holds a known key (lossless)', () => {
    const tags = fc
      .record({ env: value, team: value }, { requiredKeys: [] })
      .filter((t) => Object.keys(t).length > 0);
    const hubSpec = fc.record({ cpuLimit: value, memoryLimit: value, tags }, { requiredKeys: [] });
    fc.assert(
      fc.property(hubSpec, (fields) => {
        const there = convert(router, object('v2', fields), 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v1', 'v2')).toEqual({ ok: true, object: object('v2', fields) });
      }),
    );
  });

  it('spoke → hub → spoke restores every spoke object whose map holds a known key (lossless)', () => {
    const limits = fc
      .record({ cpu: value, memory: value }, { requiredKeys: [] })
      .filter((l) => Object.keys(l).length > 0);
    const spokeSpec = fc.record({ limits, envTag: value, teamTag: value }, { requiredKeys: [] });
    fc.assert(
      fc.property(spokeSpec, (fields) => {
        const there = convert(router, object('v1', fields), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (!there.ok) return;
        expect(convert(router, there.object, 'v2', 'v1')).toEqual({ ok: true, object: object('v1', fields) });
      }),
    );
  });

  it('converts any JSON in either direction without throwing', () => {
    const anyValue = fc.oneof(fc.jsonValue(), fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 300 }));
    const anySpec = fc.dictionary(
      fc.constantFrom('cpuLimit', 'memoryLimit', 'tags', 'limits', 'envTag', 'teamTag'),
      anyValue,
    );
    fc.assert(
      fc.property(anySpec, fc.boolean(), (fields, down) => {
        const result = down
          ? convert(router, object('v2', fields), 'v2', 'v1')
          : convert(router, object('v1', fields), 'v1', 'v2');
        expect(typeof result.ok).toBe('boolean');
      }),
    );
  });
});
