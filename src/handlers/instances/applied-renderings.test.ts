import { describe, expect, it } from 'vitest';
import { AppliedRenderings, renderingFingerprint } from './applied-renderings.ts';

describe('what an instances handler process last applied', () => {
  it('is fresh for the same rendering within the period, and not for another one, another instance or after it', () => {
    const applied = new AppliedRenderings(1_000);
    const a = renderingFingerprint([{ kind: 'Service', spec: { port: 443 } }]);
    const b = renderingFingerprint([{ kind: 'Service', spec: { port: 8443 } }]);
    expect(a).not.toBe(b);
    expect(applied.isFresh('x', a, 0), 'nothing applied yet').toBe(false);
    applied.remember('x', a, 100);
    expect(applied.isFresh('x', a, 1_099)).toBe(true);
    expect(applied.isFresh('x', b, 500), 'the rendering changed').toBe(false);
    expect(applied.isFresh('y', a, 500), 'another instance').toBe(false);
    expect(applied.isFresh('x', a, 1_100), 'the period is over: apply again').toBe(false);
    applied.remember('x', a, 1_100);
    applied.forget('x');
    expect(applied.isFresh('x', a, 1_200)).toBe(false);
  });
});
