import { describe, expect, it } from 'vitest';
import { toStructural } from './openapi.ts';
import { PARAMS_KEY, ruleSchema, STRATEGIES } from './rules.ts';

describe('rule schema', () => {
  it('requires the params block named after the strategy', () => {
    const missing = ruleSchema.safeParse({
      strategy: 'FieldRename',
      delete: { path: 'spec.a', existsOn: 'Hub' },
    });
    expect(missing.success).toBe(false);
  });

  it('defaults acknowledgeLossy to false, so a lossy rule must opt in', () => {
    const rule = ruleSchema.parse({ strategy: 'Delete', delete: { path: 'spec.a', existsOn: 'Spoke' } });
    expect(rule.acknowledgeLossy).toBe(false);
  });

  it('keeps JSON values as given', () => {
    const rule = ruleSchema.parse({
      strategy: 'DefaultValue',
      defaultValue: { path: 'spec.size', existsOn: 'Hub', default: { gb: [1, 'x', null] } },
      when: { path: 'spec.kind', equals: 'big' },
    });
    expect(rule).toMatchObject({
      defaultValue: { default: { gb: [1, 'x', null] } },
      when: { equals: 'big' },
    });
  });

  it('is stated in the CRD as one object whose CEL rules tie each params block to its strategy', () => {
    const schema = toStructural(ruleSchema);
    expect(schema.properties?.strategy?.enum).toEqual([...STRATEGIES]);
    const rules = schema['x-kubernetes-validations']?.map((v) => v.rule) ?? [];
    for (const strategy of STRATEGIES) {
      expect(rules).toContain(`has(self.${PARAMS_KEY[strategy]}) == (self.strategy == '${strategy}')`);
    }
  });
});
