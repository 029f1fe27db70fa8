import { describe, expect, it } from 'vitest';
import type { Condition } from '../api/conditions.ts';
import { decideConfigStatus, instanceServing, phaseOf } from './config-status.ts';
import type { ConfigValidation } from './config-validation.ts';

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
