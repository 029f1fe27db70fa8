import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { conversionConfigSchema } from './conversion-config.ts';
import { isJsonValue, jsonValueSchema } from './json-value.ts';
import { webhookServerSchema } from './webhook-server.ts';

const zodJson = z.json();

/** Values close to JSON but not JSON, nested where a shallow check would miss them. */
const almostJson = fc.oneof(
  fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, undefined, 1n, Symbol('s'), () => 1),
  fc.date(),
  fc.constant(new Map([['a', 1]])),
  fc.constant(new Uint8Array([1])),
);
const nested = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.jsonValue({ maxDepth: 2 }),
    almostJson,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 3 }),
    fc.dictionary(fc.string({ maxLength: 4 }), tie('value'), { maxKeys: 3, noNullPrototype: false }),
  ),
})).value;

describe('isJsonValue', () => {
  it('accepts exactly what z.json() accepts', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), nested, fc.anything({ withNullPrototype: true })), (value) => {
        expect(isJsonValue(value)).toBe(zodJson.safeParse(value).success);
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses a non-JSON value deep inside with a message that says what a JSON value is', () => {
    const parsed = z.object({ value: jsonValueSchema() }).safeParse({ value: { a: [1, { b: Number.NaN }] } });
    expect(parsed.success).toBe(false);
    expect(z.prettifyError(parsed.error as z.ZodError)).toMatch(/expected a JSON value.*\n.*at value/);
  });
});

describe('the resource schemas', () => {
  // A recursive schema inside one of them makes z.compile fall back to the runtime parser
  // without a word; strict compilation says so instead.
  it.each([
    ['CRDConversionConfig / XRDConversionConfig', conversionConfigSchema],
    ['ConversionWebhookServer', webhookServerSchema],
  ])('%s compiles ahead of time', (_, schema) => {
    expect(() => z.compile(schema, { strict: true })).not.toThrow();
  });
});
