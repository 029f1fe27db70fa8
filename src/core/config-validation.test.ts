import { describe, expect, it } from 'vitest';
import { int, root, spec, str } from '../engine/test-support.ts';
import {
  mayTouchTarget,
  phaseBeforeHandover,
  VALIDATED,
  validateConfig,
  validatedCondition,
} from './config-validation.ts';

/** A live CRD as the apiserver returns it: v2 stored, v1 served. */
function crd(v1Spec: Record<string, ReturnType<typeof str>>, v2Spec: Record<string, ReturnType<typeof str>>) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.org' },
    spec: {
      versions: [
        { name: 'v2', served: true, storage: true, schema: { openAPIV3Schema: root(v2Spec) } },
        { name: 'v1', served: true, storage: false, schema: { openAPIV3Schema: root(v1Spec) } },
      ],
    },
  };
}

const renamed = crd({ replicas: int() }, { size: int() });
const renameRule = {
  strategy: 'FieldRename',
  fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
};
const target = (live: unknown) => ({ kind: 'CustomResourceDefinition', name: 'widgets.example.org', live });

describe('validateConfig', () => {
  it('compiles a config whose rules claim every difference: Validated, and the target may be touched', () => {
    const v = validateConfig(spec('v2', { v1: [renameRule] }), target(renamed));
    expect(v).toEqual({ verdict: 'Compiled', warnings: [] });
    expect(mayTouchTarget(v)).toBe(true);
    expect(validatedCondition(v)).toMatchObject({ type: VALIDATED, status: 'True', reason: 'Compiled' });
    expect(phaseBeforeHandover(v)).toBe('Validated');
  });

  it('fails closed on an unclaimed difference, with the engine’s diagnostic verbatim', () => {
    const v = validateConfig(spec('v2', { v1: [] }), target(renamed));
    expect(v.verdict).toBe('Invalid');
    expect(mayTouchTarget(v)).toBe(false);
    const condition = validatedCondition(v);
    expect(condition).toMatchObject({ status: 'False', reason: 'CompileFailed' });
    expect(condition.message).toMatch(/spec\.(size|replicas)/);
    expect(phaseBeforeHandover(v)).toBe('Invalid');
  });

  it('says Pending, Unknown and touches nothing while the target does not exist', () => {
    const v = validateConfig(spec('v2', { v1: [renameRule] }), target(undefined));
    expect(v.verdict).toBe('TargetMissing');
    expect(mayTouchTarget(v)).toBe(false);
    expect(validatedCondition(v)).toMatchObject({ status: 'Unknown', reason: 'TargetNotFound' });
    expect(validatedCondition(v).message).toContain('widgets.example.org');
    expect(phaseBeforeHandover(v)).toBe('Pending');
  });

  it('keeps a condition message within the 32 KiB a condition allows, saying how many lines were left out', () => {
    const many = crd(
      Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`spoke${i}`, str()])),
      Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`hub${i}`, str()])),
    );
    const condition = validatedCondition(validateConfig(spec('v2', { v1: [] }), target(many)));
    expect(Buffer.byteLength(condition.message)).toBeLessThanOrEqual(32 * 1024);
    expect(condition.message).toMatch(/… and \d+ more$/);
  });
});
