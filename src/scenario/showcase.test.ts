import { describe, expect, it } from 'vitest';
import { ruleSchema } from '../api/rules.ts';
import { compile } from '../engine/compile.ts';
import { convert } from '../engine/convert.ts';
import { targetVersions } from '../engine/target-versions.ts';
import { SHOWCASE_HUB_SPEC, SHOWCASE_RULES, SHOWCASE_SPOKE_SPEC, showcaseCrd } from './showcase.ts';

describe('the showcase target', () => {
  const crd = showcaseCrd('showcases.demo.example.org');
  const compiled = compile(
    { hubVersion: 'v1', spokes: [{ version: 'v2', rules: SHOWCASE_RULES.map((r) => ruleSchema.parse(r)) }] },
    targetVersions(crd),
  );

  it('compiles: six strategies, only the one that reorders acknowledged', () => {
    expect(compiled.ok && compiled.warnings).toEqual([]);
    expect(new Set(SHOWCASE_RULES.map((r) => r.strategy)).size).toBe(6);
  });

  it('converts the spoke object into the hub one and back', () => {
    if (!compiled.ok) throw new Error('does not compile');
    const spoke = {
      apiVersion: 'demo.example.org/v2',
      kind: 'Showcase',
      metadata: { name: 's' },
      spec: SHOWCASE_SPOKE_SPEC,
    };
    const hub = convert(compiled.router, spoke, 'v2', 'v1');
    expect(hub).toMatchObject({ ok: true, object: { spec: SHOWCASE_HUB_SPEC } });
    if (!hub.ok) return;
    expect(convert(compiled.router, hub.object, 'v1', 'v2')).toEqual({ ok: true, object: spoke });
  });
});
