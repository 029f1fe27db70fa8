import { describe, expect, it } from 'vitest';
import { MAX_INSTANCE_NAME_LENGTH, webhookServiceName } from './constants.ts';
import { switchyardCrds } from './crds.ts';
import { DNS_1035_LABEL_PATTERN, instanceNameProblem } from './names.ts';
import { webhookServerSchema, webhookServerSpecSchema } from './webhook-server.ts';

describe('ConversionWebhookServer spec', () => {
  it('defaults weight to 1 inside a present sharding block, and leaves sharding absent otherwise', () => {
    expect(webhookServerSpecSchema.parse({ sharding: { enabled: true } }).sharding).toEqual({
      enabled: true,
      weight: 1,
    });
    expect(webhookServerSpecSchema.parse({}).sharding).toBeUndefined();
  });

  it.each([0, -1, 1.5])('rejects weight %s', (weight) => {
    expect(webhookServerSpecSchema.safeParse({ sharding: { enabled: true, weight } }).success).toBe(false);
  });
});

describe('ConversionWebhookServer name', () => {
  const object = (name: string) => ({
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'ConversionWebhookServer',
    metadata: { name },
    spec: {},
  });

  it.each([
    'a.b',
    '1x',
    'A',
    '-a',
    'a-',
  ])('rejects %s, which cannot prefix a Service name, and says why', (name) => {
    const result = webhookServerSchema.safeParse(object(name));
    expect(result.success).toBe(false);
    expect(result.error?.issues[0]?.message).toMatch(
      new RegExp(
        `"${name}" is not a DNS-1035 label: it names the instance's Service "${name}-webhook-server"`,
      ),
    );
  });

  it('rejects a name whose Service name would exceed 63 characters', () => {
    const name = 'a'.repeat(MAX_INSTANCE_NAME_LENGTH + 1);
    expect(instanceNameProblem(name)).toMatch(/would exceed the 63 characters/);
    expect(webhookServerSchema.safeParse(object(name)).success).toBe(false);
  });

  it.each(['a', 'shard-a', 'a1', 'a'.repeat(MAX_INSTANCE_NAME_LENGTH)])('accepts %s', (name) => {
    expect(webhookServerSchema.safeParse(object(name)).success).toBe(true);
    expect(webhookServiceName(name).length).toBeLessThanOrEqual(63);
  });

  it('is checked the same way by the CRD (pattern and length)', () => {
    const cws = switchyardCrds().find((c) => c.spec.names.kind === 'ConversionWebhookServer');
    const rules = cws?.spec.versions[0]?.schema.openAPIV3Schema['x-kubernetes-validations']?.map(
      (v) => v.rule,
    );
    expect(rules).toContain(`self.metadata.name.matches('${DNS_1035_LABEL_PATTERN}')`);
    expect(rules).toContain(`self.metadata.name.size() <= ${MAX_INSTANCE_NAME_LENGTH}`);
  });
});
