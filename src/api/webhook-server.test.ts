import { describe, expect, it } from 'vitest';
import { webhookServerSpecSchema } from './webhook-server.ts';

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
