import { describe, expect, it } from 'vitest';
import { duplicateTargetViolation } from './config-admission.ts';

const crd = (name: string, target: string) => ({ kind: 'CRDConversionConfig', name, target });
const xrd = (name: string, target: string) => ({ kind: 'XRDConversionConfig', name, target });

describe('config admission: one config per target', () => {
  it('rejects a second config for a target, across kinds, naming the first', () => {
    const v = duplicateTargetViolation(xrd('x', 'widgets.example.com'), [crd('c', 'widgets.example.com')]);
    expect(v?.message).toMatch(/already converted by CRDConversionConfig "c"/);
  });

  it('rejects a second config of the same kind', () => {
    expect(duplicateTargetViolation(crd('b', 't.x.io'), [crd('a', 't.x.io')])?.rule).toBe('UniqueTarget');
  });

  it('accepts an update of the config itself, and a target nobody converts', () => {
    expect(duplicateTargetViolation(crd('a', 't.x.io'), [crd('a', 't.x.io')], 't.x.io')).toBeUndefined();
    expect(duplicateTargetViolation(crd('a', 'u.x.io'), [crd('b', 't.x.io')])).toBeUndefined();
  });

  it('accepts an edit of a config that already shared its target, so the conflict can be repaired', () => {
    expect(duplicateTargetViolation(crd('a', 't.x.io'), [xrd('b', 't.x.io')], 't.x.io')).toBeUndefined();
  });

  it('rejects retargeting onto a target another config converts', () => {
    expect(duplicateTargetViolation(crd('a', 't.x.io'), [xrd('b', 't.x.io')], 'old.x.io')).toBeDefined();
  });
});
