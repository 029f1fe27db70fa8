import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import { formatNumber } from '../go-values.ts';
import type { Router } from '../plan.ts';
import type { TargetSchema } from '../schema.ts';
import { bool, int, obj, object, root, spec, str, versions } from '../test-support.ts';

const num = (): TargetSchema => ({ type: 'number' });
const coerce = (onFractionalInteger?: string, acknowledgeLossy = true) => ({
  strategy: 'TypeCoerce',
  typeCoerce: { path: 'spec.size', ...(onFractionalInteger ? { onFractionalInteger } : {}) },
  acknowledgeLossy,
});

function compiled(hub: TargetSchema, spoke: TargetSchema, rule = coerce()): Router {
  const result = compile(
    spec('v2', { v1: [rule] }),
    versions({ v2: root({ size: hub }), v1: root({ size: spoke }) }),
  );
  if (!result.ok) throw new Error(JSON.stringify(result.diagnostics, null, 2));
  return result.router;
}

function refusal(hub: TargetSchema, spoke: TargetSchema, rule: unknown = coerce()) {
  const result = compile(
    spec('v2', { v1: [rule] }),
    versions({ v2: root({ size: hub }), v1: root({ size: spoke }) }),
  );
  expect(result.ok).toBe(false);
  return result.ok ? [] : result.diagnostics.filter((d) => d.severity === 'error');
}

/** The converted spec.size, `absent` when the output has none, or the failure message. */
function converted(router: Router, size: unknown, down = true): unknown {
  const fields = size === undefined ? {} : { size };
  const result = down
    ? convert(router, object('v2', fields), 'v2', 'v1')
    : convert(router, object('v1', fields), 'v1', 'v2');
  if (!result.ok) return { failed: result.error.message };
  const out = (result.object as { spec: Record<string, unknown> }).spec;
  return Object.hasOwn(out, 'size') ? out.size : 'absent';
}

describe('TypeCoerce', () => {
  const stringToInteger = compiled(str(), int());

  it('parses strings as strconv.ParseFloat does, and formats numbers as the reference', () => {
    expect(converted(stringToInteger, '42')).toBe(42);
    expect(converted(stringToInteger, ' 7\n')).toBe(7);
    expect(converted(stringToInteger, '1e3')).toBe(1000);
    expect(converted(stringToInteger, '0x10p0')).toBe(16);
    expect(converted(stringToInteger, '1_000')).toBe(1000);
    expect(converted(stringToInteger, 42, false)).toBe('42');
    expect(converted(stringToInteger, 1e21, false)).toBe('1000000000000000000000');
    expect(converted(stringToInteger, 0.1, false)).toBe('0.1');
    expect(converted(stringToInteger, true, false)).toBe('true');
  });

  it('refuses what Go refuses: no number, not finite, a fraction into an integer, null, objects', () => {
    for (const size of ['abc', '', 'inf', 'NaN', '1e400', '0x10', '2.5', null, { a: 1 }, [1]]) {
      expect(converted(stringToInteger, size), JSON.stringify(size)).toMatchObject({
        failed: expect.stringMatching(/typeCoerce: spec\.size: cannot coerce/),
      });
    }
    expect(converted(stringToInteger, null, false)).toEqual({
      failed: 'rule 0 (TypeCoerce): typeCoerce: spec.size: cannot coerce <nil> to string',
    });
  });

  it('truncates or rounds (halves away from zero) a fraction into an integer when told to', () => {
    const truncating = compiled(str(), int(), coerce('Truncate'));
    const rounding = compiled(str(), int(), coerce('Round'));
    expect(converted(truncating, '-2.7')).toBe(-2);
    expect(converted(rounding, '-2.5')).toBe(-3);
    expect(converted(rounding, '2.5')).toBe(3);
    expect(converted(rounding, '0.49999999999999994')).toBe(0);
    expect(converted(rounding, true)).toBe(1);
  });

  it('converts booleans with strconv.ParseBool, and numbers never into booleans', () => {
    const router = compiled(str(), bool());
    expect(converted(router, 'T')).toBe(true);
    expect(converted(router, ' 0 ')).toBe(false);
    expect(converted(router, 'yes')).toMatchObject({ failed: expect.stringMatching(/to boolean/) });
    expect(converted(router, false, false)).toBe('false');
    const withInteger = compiled(bool(), int());
    expect(converted(withInteger, true)).toBe(1);
    expect(converted(withInteger, 1, false)).toMatchObject({
      failed: expect.stringMatching(/float64 to boolean/),
    });
  });

  it('writes nothing for an absent field', () => {
    expect(converted(stringToInteger, undefined)).toBe('absent');
    expect(converted(stringToInteger, undefined, false)).toBe('absent');
  });

  it('is lossless unless a fraction is truncated or rounded into an integer field', () => {
    expect(stringToInteger.spokes.get('v1')?.lossless).toEqual({ hubToSpoke: true, spokeToHub: true });
    expect(compiled(num(), int(), coerce('Round')).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: false,
      spokeToHub: true,
    });
    expect(compiled(int(), int(), coerce('Truncate')).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: false,
      spokeToHub: false,
    });
    expect(compiled(str(), num(), coerce('Round')).spokes.get('v1')?.lossless).toEqual({
      hubToSpoke: true,
      spokeToHub: true,
    });
    const unacknowledged = refusal(num(), int(), coerce('Round', false));
    expect(unacknowledged.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
    expect(unacknowledged[0]?.message).toMatch(/is rounded into an integer/);
  });

  it('refuses fields that are not string, integer, number or boolean', () => {
    const refusals: [TargetSchema, TargetSchema][] = [
      [obj({ a: str() }), str()],
      [str(), { type: 'string', 'x-kubernetes-preserve-unknown-fields': true }],
      [{ 'x-kubernetes-int-or-string': true }, int()],
      [str(), { type: 'array', items: str() }],
    ];
    for (const [hub, spoke] of refusals) {
      const diagnostics = refusal(hub, spoke);
      expect(diagnostics.map((d) => d.code)).toEqual(['ShapeMismatch']);
      expect(diagnostics[0]?.message).toMatch(
        /TypeCoerce converts between string, integer, number and boolean/,
      );
    }
    const unknown = refusal(str(), int(), { ...coerce(), typeCoerce: { path: 'spec.nope' } });
    expect(unknown.map((d) => d.code)).toContain('UnknownPath');
  });
});

describe('TypeCoerce properties', () => {
  const stringToNumber = compiled(str(), num());
  const finite = fc.double({ noNaN: true, noDefaultInfinity: true }).filter((x) => !Object.is(x, -0));

  it('number → string → number restores every finite number', () => {
    fc.assert(
      fc.property(finite, (size) => {
        const there = convert(stringToNumber, object('v1', { size }), 'v1', 'v2');
        expect(there.ok).toBe(true);
        if (there.ok)
          expect(convert(stringToNumber, there.object, 'v2', 'v1')).toEqual({
            ok: true,
            object: object('v1', { size }),
          });
      }),
    );
  });

  it('string → number → string restores every string in the form a number is written', () => {
    fc.assert(
      fc.property(finite, (value) => {
        const size = formatNumber(value);
        const there = convert(stringToNumber, object('v2', { size }), 'v2', 'v1');
        expect(there.ok).toBe(true);
        if (there.ok)
          expect(convert(stringToNumber, there.object, 'v1', 'v2')).toEqual({
            ok: true,
            object: object('v2', { size }),
          });
      }),
    );
  });

  it('converts any value between any two scalar kinds without throwing', () => {
    const kinds = [str(), int(), num(), bool()];
    const routers = kinds.flatMap((hub) =>
      kinds.flatMap((spoke) => ['Error', 'Truncate', 'Round'].map((p) => compiled(hub, spoke, coerce(p)))),
    );
    const value = fc.oneof(
      fc.jsonValue(),
      fc.string(),
      fc.double(),
      fc.stringMatching(/^\s*[-+]?[0-9_.xXpPeE]*\s*$/),
    );
    fc.assert(
      fc.property(fc.constantFrom(...routers), value, fc.boolean(), (router, size, down) => {
        expect(
          typeof convert(router, object(down ? 'v2' : 'v1', { size }), down ? 'v2' : 'v1', down ? 'v1' : 'v2')
            .ok,
        ).toBe('boolean');
      }),
    );
  });
});
