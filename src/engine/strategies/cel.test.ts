import { describe, expect, it } from 'vitest';
import { compile } from '../compile.ts';
import { convert } from '../convert.ts';
import { int, object, root, spec, versions } from '../test-support.ts';

const hub = root({ packed: int() });
const spoke = root({ bitHigh: int(), bitLow: int() });
const celRule = (hubToSpoke: string, spokeToHub: string, extra: object = {}) => ({
  strategy: 'CEL',
  cel: { hubPaths: ['spec.packed'], spokePaths: ['spec.bitHigh', 'spec.bitLow'], hubToSpoke, spokeToHub },
  acknowledgeLossy: true,
  ...extra,
});
const PACK = '{"spec.packed": int(object.spec.bitHigh) * 256 + int(object.spec.bitLow)}';
const UNPACK =
  '{"spec.bitHigh": int(object.spec.packed) / 256, "spec.bitLow": int(object.spec.packed) % 256}';

function compiled(rule: object) {
  return compile(spec('v2', { v1: [rule] }), versions({ v2: hub, v1: spoke }));
}

describe('CEL', () => {
  it('evaluates the expression of each direction and writes the declared destinations', () => {
    const result = compiled(celRule(UNPACK, PACK));
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    expect(convert(result.router, object('v2', { packed: 1025 }), 'v2', 'v1')).toMatchObject({
      ok: true,
      object: { spec: { bitHigh: 4, bitLow: 1 } },
    });
    expect(convert(result.router, object('v1', { bitHigh: 4, bitLow: 1 }), 'v1', 'v2')).toMatchObject({
      ok: true,
      object: { spec: { packed: 1025 } },
    });
  });

  it('is lossy both ways: without acknowledgeLossy the config is refused', () => {
    const result = compiled(celRule(UNPACK, PACK, { acknowledgeLossy: false }));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.diagnostics.map((d) => d.code)).toEqual(['UnacknowledgedLossy']);
  });

  it('refuses at compile time an expression that does not parse or type-check, naming the direction', () => {
    const result = compiled(celRule('{"spec.bitHigh": object.spec.packed +', PACK));
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.diagnostics[0]).toMatchObject({ code: 'InvalidExpression', ruleIndex: 0 });
      expect(result.diagnostics[0]?.message).toMatch(/^cel\.hubToSpoke: /);
    }
    const unknown = compiled(celRule(UNPACK, '{"spec.packed": other.x}'));
    expect(!unknown.ok && unknown.diagnostics[0]?.message).toMatch(/spokeToHub/);
  });

  it('refuses a path neither schema declares', () => {
    const result = compiled({
      ...celRule(UNPACK, PACK),
      cel: { ...celRule(UNPACK, PACK).cel, hubPaths: ['spec.nope'] },
    });
    expect(!result.ok && result.diagnostics.map((d) => d.code)).toContain('UnknownPath');
  });

  it('fails the conversion, not the process, when the expression fails or exceeds its cost', () => {
    const failing = compiled(celRule('{"spec.bitHigh": int(object.spec.packed) / 0}', PACK));
    if (!failing.ok) throw new Error(JSON.stringify(failing.diagnostics));
    const divided = convert(failing.router, object('v2', { packed: 1 }), 'v2', 'v1');
    expect(divided).toMatchObject({ ok: false, error: { ruleIndex: 0 } });
    const hostile = compiled(
      celRule(
        '{"spec.bitHigh": [1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, [1,2,3,4,5,6,7,8,9,10].map(f, a+b+c+d+e+f)))))).size()}',
        PACK,
      ),
    );
    if (!hostile.ok) throw new Error(JSON.stringify(hostile.diagnostics));
    const stopped = convert(hostile.router, object('v2', { packed: 1 }), 'v2', 'v1');
    expect(stopped.ok).toBe(false);
    if (!stopped.ok) expect(stopped.error.message).toMatch(/cost|deadline|limit/i);
  });

  it('writes nothing for a destination the result lacks, and ignores extra keys', () => {
    const result = compiled(celRule('{"spec.bitHigh": 1, "spec.other": 2}', PACK));
    if (!result.ok) throw new Error(JSON.stringify(result.diagnostics));
    expect(convert(result.router, object('v2', { packed: 3 }), 'v2', 'v1')).toMatchObject({
      ok: true,
      object: { spec: { bitHigh: 1 } },
    });
  });
});
