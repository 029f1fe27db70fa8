import { describe, expect, it } from 'vitest';
import type { Condition } from '../api/conditions.ts';
import { int, root, spec } from '../engine/test-support.ts';
import { type ConfigStatusInput, decideConfigStatus, instanceServing, phaseOf } from './config-status.ts';
import { type ConfigValidation, validateConfig } from './config-validation.ts';

const compiled: ConfigValidation = { verdict: 'Compiled', warnings: [] };
const invalid: ConfigValidation = {
  verdict: 'Invalid',
  errors: ['spec.size differs and no rule claims it'],
  warnings: [],
};
const missing: ConfigValidation = {
  verdict: 'TargetMissing',
  targetKind: 'CustomResourceDefinition',
  targetName: 't',
};
const T0 = '2026-11-30T10:00:00Z';
const T1 = '2026-11-30T11:00:00Z';

describe('phaseOf', () => {
  it.each([
    ['rules that do not compile', invalid, 'a', 'Invalid'],
    ['no target yet', missing, undefined, 'Pending'],
    [
      'compiles, served by one of our instances (assigned, or a source while a move waits)',
      compiled,
      'a',
      'Applied',
    ],
    ['compiles, target names none of our instances (first apply waits)', compiled, undefined, 'Validated'],
  ] as const)('%s', (_name, validation, servingInstance, phase) => {
    expect(phaseOf({ validation, servingInstance })).toBe(phase);
  });

  it('knows a Service as ours only when its instance exists', () => {
    expect(instanceServing('a-webhook-server', ['a', 'b'])).toBe('a');
    expect(instanceServing('gone-webhook-server', ['a', 'b'])).toBeUndefined();
    expect(instanceServing('legacy-converter', ['a'])).toBeUndefined();
    expect(instanceServing(undefined, ['a'])).toBeUndefined();
  });
});

describe('decideConfigStatus', () => {
  const first = decideConfigStatus({
    current: undefined,
    generation: 3,
    validation: compiled,
    driftPolicy: 'KeepServingStale',
    servingInstance: 'a',
    nowIso: T0,
  });

  it('writes the phase and the Validated condition of a config seen for the first time', () => {
    expect(first).toMatchObject({
      phase: 'Applied',
      conditions: [
        {
          type: 'Validated',
          status: 'True',
          reason: 'Compiled',
          observedGeneration: 3,
          lastTransitionTime: T0,
        },
      ],
    });
  });

  it('writes nothing when the status already says it (a re-run later, other managers’ conditions beside)', () => {
    const assigned: Condition = {
      type: 'Assigned',
      status: 'True',
      reason: 'Pool',
      message: '',
      lastTransitionTime: T0,
    };
    const again = decideConfigStatus({
      current: { phase: 'Applied', conditions: [assigned, ...(first?.conditions ?? [])] },
      generation: 3,
      validation: compiled,
      driftPolicy: 'KeepServingStale',
      servingInstance: 'a',
      nowIso: T1,
    });
    expect(again).toBeUndefined();
  });

  it('rewrites on a new generation, keeping the transition time while the status holds', () => {
    const next = decideConfigStatus({
      current: { phase: 'Applied', conditions: first?.conditions },
      generation: 4,
      validation: compiled,
      driftPolicy: 'KeepServingStale',
      servingInstance: 'a',
      nowIso: T1,
    });
    expect(next?.conditions[0]).toMatchObject({ observedGeneration: 4, lastTransitionTime: T0 });
  });

  it('turns Invalid with the diagnostics verbatim and a new transition time', () => {
    const broken = decideConfigStatus({
      current: { phase: 'Applied', conditions: first?.conditions },
      generation: 5,
      validation: invalid,
      driftPolicy: 'KeepServingStale',
      servingInstance: 'a',
      nowIso: T1,
    });
    expect(broken).toMatchObject({
      phase: 'Invalid',
      conditions: [
        {
          status: 'False',
          reason: 'CompileFailed',
          message: 'spec.size differs and no rule claims it',
          lastTransitionTime: T1,
        },
      ],
    });
  });
});

describe('decideConfigStatus: the verdicts and drift', () => {
  /** The target: v2 stored with spec.size, v1 with `v1Field`. */
  const live = (v1Field: string) => ({
    spec: {
      versions: [
        { name: 'v2', served: true, storage: true, schema: { openAPIV3Schema: root({ size: int() }) } },
        { name: 'v1', served: true, storage: false, schema: { openAPIV3Schema: root({ [v1Field]: int() }) } },
      ],
    },
  });
  const rename = {
    strategy: 'FieldRename',
    fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
  };
  const validate = (v1Field: string) =>
    validateConfig(
      spec('v2', { v1: [rename] }),
      { kind: 'CustomResourceDefinition', name: 't', live: live(v1Field) },
      { verdicts: true },
    );
  const input = (over: Partial<ConfigStatusInput>): ConfigStatusInput => ({
    current: undefined,
    generation: 3,
    validation: validate('replicas'),
    driftPolicy: 'KeepServingStale',
    servingInstance: 'a',
    nowIso: T0,
    ...over,
  });
  /** What a handler's view keeps of a written status (views/projection.ts). */
  const asViewed = (write: ReturnType<typeof decideConfigStatus>) =>
    write && {
      ...write,
      spokeStatuses: write.spokeStatuses?.map(({ version, lossless }) => ({ version, lossless })),
    };

  const applied = decideConfigStatus(input({}));

  it('writes the verdicts of the same compile with the phase and the condition', () => {
    expect(applied).toMatchObject({
      phase: 'Applied',
      overallLossless: true,
      schemaHash: expect.stringMatching(/^sha256:[A-Za-z0-9_-]{43}$/),
      spokeStatuses: [
        {
          version: 'v1',
          lossless: { hubToSpoke: true, spokeToHub: true },
          ruleResults: [
            {
              index: 0,
              strategy: 'FieldRename',
              hubPaths: ['spec.size'],
              spokePaths: ['spec.replicas'],
              lossless: { hubToSpoke: true, spokeToHub: true },
            },
          ],
        },
      ],
    });
  });

  it('writes nothing again from what its view keeps of the status it wrote', () => {
    expect(decideConfigStatus(input({ current: asViewed(applied), nowIso: T1 }))).toBeUndefined();
  });

  it('writes again when the verdicts change with the condition unchanged (another schema that compiles as well)', () => {
    const current = asViewed(applied);
    const other = decideConfigStatus(
      input({ current: current && { ...current, schemaHash: 'sha256:before' }, nowIso: T1 }),
    );
    expect(other?.schemaHash).toBe(applied?.schemaHash);
  });

  it('removes the verdicts while the target does not exist: nothing was compiled', () => {
    const gone = decideConfigStatus(input({ current: asViewed(applied), validation: missing }));
    expect(gone).toEqual({
      phase: 'Pending',
      conditions: [expect.objectContaining({ reason: 'TargetNotFound' })],
    });
  });

  it('calls a config that compiled at this generation and fails after a schema change SchemaDrifted; FailClosed says its conversions are refused', () => {
    const drifted = decideConfigStatus(
      input({
        current: asViewed(applied),
        validation: validate('count'),
        driftPolicy: 'FailClosed',
        nowIso: T1,
      }),
    );
    expect(drifted).toMatchObject({
      phase: 'Invalid',
      overallLossless: false,
      conditions: [
        { status: 'False', reason: 'SchemaDrifted', observedGeneration: 3, lastTransitionTime: T1 },
      ],
      spokeStatuses: [
        {
          version: 'v1',
          lossless: { hubToSpoke: false, spokeToHub: false },
          ruleResults: [{ index: 0, errors: [expect.stringContaining('UnknownPath spec.replicas')] }],
        },
      ],
    });
    const message = drifted?.conditions[0]?.message ?? '';
    expect(message.split('\n')[0]).toMatch(
      /schema changed .* driftPolicy FailClosed: .*refuse this target's conversions/,
    );
    expect(message).toContain('spec.replicas');
    expect(drifted?.schemaHash).not.toBe(applied?.schemaHash);
    // It stays SchemaDrifted while it lasts: the next run finds it written.
    expect(
      decideConfigStatus(
        input({
          current: asViewed(drifted),
          validation: validate('count'),
          driftPolicy: 'FailClosed',
          nowIso: T1,
        }),
      ),
    ).toBeUndefined();
  });

  it('says under KeepServingStale that a replica holding the last good plan keeps serving it', () => {
    const drifted = decideConfigStatus(input({ current: asViewed(applied), validation: validate('count') }));
    expect(drifted?.conditions[0]).toMatchObject({ reason: 'SchemaDrifted' });
    expect(drifted?.conditions[0]?.message.split('\n')[0]).toMatch(
      /driftPolicy KeepServingStale: .*keeps serving it/,
    );
  });

  it('calls a config whose own spec changed and does not compile CompileFailed, refused all the same under FailClosed', () => {
    const edited = decideConfigStatus(
      input({
        current: asViewed(applied),
        generation: 4,
        validation: validate('count'),
        driftPolicy: 'FailClosed',
      }),
    );
    expect(edited?.conditions[0]).toMatchObject({ reason: 'CompileFailed', observedGeneration: 4 });
    expect(edited?.conditions[0]?.message.split('\n')[0]).toMatch(/^driftPolicy FailClosed: /);
    const stale = decideConfigStatus(
      input({ current: asViewed(applied), generation: 4, validation: validate('count') }),
    );
    expect(stale?.conditions[0]?.message.split('\n')[0]).toMatch(/^error UnknownPath/);
  });

  it('never calls a config that never compiled SchemaDrifted', () => {
    const never = decideConfigStatus(
      input({ current: { phase: 'Pending' }, validation: validate('count'), driftPolicy: 'FailClosed' }),
    );
    expect(never?.conditions[0]).toMatchObject({ reason: 'CompileFailed' });
  });
});
