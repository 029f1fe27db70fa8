import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import type { Router } from '../plan.ts';
import type { TargetSchema } from '../schema.ts';
import { int, object, root, spec, str, versions } from '../test-support.ts';

const num = (): TargetSchema => ({ type: 'number' });
const scale = (factor: number, acknowledgeLossy = true) => ({
  strategy: 'NumericScale',
  numericScale: { hubPath: 'spec.memoryMB', spokePath: 'spec.memoryGB', factor },
  acknowledgeLossy,
});

function compiled(hub: TargetSchema, spoke: TargetSchema, rule: unknown = scale(1024)): Router {
  const result = compile(
    spec('v2', { v1: [rule] }),
    versions({ v2: root({ memoryMB: hub }), v1: root({ memoryGB: spoke }) }),
  );
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

function refusal(hub: TargetSchema, spoke: TargetSchema, rule: unknown) {
  const result = compile(
    spec('v2', { v1: [rule] }),
    versions({ v2: root({ memoryMB: hub }), v1: root({ memoryGB: spoke }) }),
  );
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

function down(router: Router, memoryMB: unknown) {
  const result = convert(router, object('v2', { memoryMB }), 'v2', 'v1');
  return result.ok
    ? (result.object as { spec: { memoryGB?: unknown } }).spec.memoryGB
    : { failed: result.error.message };
}

function up(router: Router, memoryGB: unknown) {
  const result = convert(router, object('v1', { memoryGB }), 'v1', 'v2');
  return result.ok
    ? (result.object as { spec: { memoryMB?: unknown } }).spec.memoryMB
    : { failed: result.error.message };
}

describe('NumericScale', () => {
  it('divides by the factor towards the spoke and multiplies towards the hub', () => {
    const router = compiled(num(), num());
    expect(down(router, 2048)).toBe(2);
    expect(down(router, 100)).toBe(100 / 1024);
    expect(up(router, 1.5)).toBe(1536);
  });

  it('rounds halves away from zero into an integer field', () => {
    const router = compiled(int(), int(), scale(2));
    expect(down(router, 5)).toBe(3);
    expect(down(router, -5)).toBe(-3);
    expect(down(router, 3)).toBe(2);
    expect(up(router, 7)).toBe(14);
    const third = compiled(num(), int(), scale(3));
    expect(down(third, 1)).toBe(0);
    expect(down(third, 2)).toBe(1);
  });

  it('divides rather than multiplying by the reciprocal, as the reference does', () => {
    const router = compiled(num(), num(), scale(3));
    const value = 0.7142857142857143;
    expect(down(router, value)).toBe(0.2380952380952381);
    expect(value * (1 / 3)).toBe(0.23809523809523808);
  });

  it('fails on a value that is not a number, and on a result JSON cannot hold', () => {
    const router = compiled(num(), num(), scale(1e-300));
    for (const value of ['2048', null, true, { a: 1 }]) {
      expect(down(router, value)).toEqual({
        failed: 'rule 0 (NumericScale): numericScale: value at spec.memoryMB is not numeric',
      });
    }
    expect(down(router, 1e300)).toMatchObject({
      failed: expect.stringMatching(/\+Inf, which JSON cannot hold/),
    });
    expect(up(router, 1)).toBe(1e-300);
  });

  it('writes nothing for an absent field', () => {
    const router = compiled(num(), num());
    expect(down(router, undefined)).toBeUndefined();
  });

  it('is lossless exactly towards a number field', () => {
    expect(compiled(num(), num()).spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    expect(compiled(num(), int()).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: false,
      spokeToHub: true,
    });
    expect(compiled(int(), num()).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: true,
      spokeToHub: false,
    });
    const unacknowledged = refusal(num(), int(), scale(1024, false));
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/rounded into the integer field spec\.memoryGB/);
  });

  it('refuses a zero factor and fields that are not numbers', () => {
    expect(refusal(num(), num(), scale(0)).map((d) => d.code)).toEqual(['InvalidValue']);
    const notNumeric = refusal(str(), num(), scale(2));
    expect(notNumeric.map((d) => d.code)).toEqual(['ShapeMismatch']);
    expect(notNumeric[0]?.message).toMatch(/the hub declares spec\.memoryMB as/);
    const preserved = refusal(
      num(),
      { type: 'number', 'x-kubernetes-preserve-unknown-fields': true },
      scale(2),
    );
    expect(preserved.map((d) => d.code)).toEqual(['ShapeMismatch']);
    const unknown = refusal(num(), num(), {
      ...scale(2),
      numericScale: { hubPath: 'spec.nope', spokePath: 'spec.memoryGB', factor: 2 },
    });
    expect(unknown.map((d) => d.code)).toContain('UnknownPath');
  });
});

describe('NumericScale properties', () => {
  // A power of two scales exactly (short of overflow and subnormals), so the round trip is exact.
  const exact = compiled(num(), num(), scale(1024));
  const moderate = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e300, max: 1e300 });

  it('hub → spoke → hub and spoke → hub → spoke restore numbers between number fields', () => {
    fc.assert(
      fc.property(moderate, fc.boolean(), (value, fromHub) => {
        const [from, to, field] = fromHub ? ['v2', 'v1', 'memoryMB'] : ['v1', 'v2', 'memoryGB'];
        if (Math.abs(value) < 1e-290) return;
        const original = object(from, { [field]: value });
        const there = convert(exact, original, from, to);
        expect(there.ok).toBe(true);
        if (there.ok) expect(convert(exact, there.object, to, from)).toEqual({ ok: true, object: original });
      }),
    );
  });

  it('spoke → hub → spoke restores integers into an integer hub', () => {
    const router = compiled(int(), int(), scale(1000, true));
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), (memoryGB) => {
        const there = convert(router, object('v1', { memoryGB }), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (there.ok)
          expect(convert(router, there.object, 'v2', 'v1')).toEqual({
            ok: true,
            object: object('v1', { memoryGB }),
          });
      }),
    );
  });

  it('converts any value without throwing', () => {
    const routers = [exact, compiled(int(), int(), scale(-0.5)), compiled(num(), int(), scale(1e-300))];
    fc.assert(
      fc.property(
        fc.constantFrom(...routers),
        fc.oneof(fc.jsonValue(), fc.double()),
        fc.boolean(),
        (router, v, d) => {
          const result = d
            ? convert(router, object('v2', { memoryMB: v }), 'v2', 'v1')
            : convert(router, object('v1', { memoryGB: v }), 'v1', 'v2');
          expect(typeof result.ok).toBe('boolean');
        },
      ),
    );
  });
});
