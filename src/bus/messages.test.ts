import { isDeepStrictEqual } from 'node:util';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COMPRESS_ABOVE_BYTES,
  decisionRecordSchema,
  decodeMessage,
  decodeObjectEvent,
  encodeMessage,
  isDecisionRecord,
  isObjectEvent,
  type ObjectEvent,
  objectEventId,
  objectEventSchema,
} from './messages.ts';

const object = {
  apiVersion: 'v1',
  kind: 'X',
  metadata: { name: 'a', uid: 'u1', resourceVersion: '7' },
  spec: { n: 1 },
};
const event: ObjectEvent = {
  op: 'upsert',
  object,
  observedBy: 'watch',
  observedAt: new Date(0).toISOString(),
};

describe('object events', () => {
  it('round-trip through the wire format, keeping unknown fields of the object', () => {
    const decoded = decodeMessage(objectEventSchema, encodeMessage(objectEventSchema, event));
    expect(decoded).toEqual({ ok: true, value: event });
  });

  it('reject corrupt and invalid payloads with a reason, without throwing', () => {
    const corrupt = decodeMessage(objectEventSchema, new Uint8Array([0xff, 0xfe, 0x00]));
    expect(corrupt.ok).toBe(false);
    const invalid = decodeMessage(objectEventSchema, new TextEncoder().encode('{"op":"upsert","object":{}}'));
    expect(invalid).toMatchObject({ ok: false });
    expect(invalid.ok ? '' : invalid.reason).toMatch(/metadata/);
  });

  it('identify an upsert by uid and resourceVersion, a deletion by uid alone', () => {
    expect(objectEventId(event)).toBe('u1:7');
    const seenByWatch: ObjectEvent = { ...event, op: 'delete', observedBy: 'watch' };
    const seenAfterGap: ObjectEvent = {
      op: 'delete',
      object: { ...object, metadata: { ...object.metadata, resourceVersion: '5' } },
      observedBy: 'relist-gap',
      observedAt: event.observedAt,
    };
    expect(objectEventId(seenByWatch)).toBe(objectEventId(seenAfterGap));
  });

  it('compress a large object below NATS’ 1 MiB max_payload and read it back unchanged', () => {
    // A 3 MiB CRD-like object: many properties with distinct names, as an OpenAPI schema has.
    const properties = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [
        `field${i}`,
        { type: 'string', description: `field number ${i}` },
      ]),
    );
    const large: ObjectEvent = { ...event, object: { ...object, spec: { schema: { properties } } } };
    const raw = JSON.stringify(large).length;
    expect(raw).toBeGreaterThan(1_000_000);
    const wire = encodeMessage(objectEventSchema, large);
    expect(wire.byteLength).toBeLessThan(1024 * 1024);
    expect(decodeMessage(objectEventSchema, wire)).toEqual({ ok: true, value: large });
  });

  it('leave small payloads as plain JSON', () => {
    const wire = encodeMessage(objectEventSchema, event);
    expect(wire.byteLength).toBeLessThan(COMPRESS_ABOVE_BYTES);
    expect(new TextDecoder().decode(wire).startsWith('{')).toBe(true);
  });

  it('refuse a compressed payload that inflates past the cap, in bounded memory', () => {
    const bomb = gzipSync(Buffer.alloc(100 * 1024 * 1024, 0x20));
    const before = process.memoryUsage().rss;
    const decoded = decodeMessage(objectEventSchema, bomb);
    expect(decoded.ok).toBe(false);
    expect(decoded.ok ? '' : decoded.reason).toMatch(/inflat|buffer|length/i);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });
});

/** Anything a field might hold instead of what it should: a sample of JSON's types and near misses. */
const wrongValue = fc.oneof(
  fc.constantFrom(null, '', 0, -1, 1.5, true, [], {}, 'watch', 'relist-gap', 'too-large'),
  fc.jsonValue({ maxDepth: 2 }),
);

const timestamp = fc.oneof(
  fc
    .date({ min: new Date(0), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true })
    .map((d) => d.toISOString()),
  fc.constantFrom(
    '2026-12-01T10:00:00Z',
    '2026-12-01T10:00:00.5Z',
    '2026-12-01T10:00:00+00:00',
    '2026-12-01T10:00Z',
    '2026-02-29T10:00:00Z',
    '2024-02-29T10:00:00Z',
    '2026-12-01 10:00:00Z',
    '2026-12-01T24:00:00Z',
  ),
);

/** Mostly what the field should hold, sometimes anything else. */
const mostly = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: valid }, { weight: 1, arbitrary: wrongValue });

/** Each optional field present half the time; each required one missing once in 20. */
const fields = <T extends Record<string, unknown>>(
  model: { [K in keyof T]: fc.Arbitrary<T[K]> },
  optional: (keyof T)[],
) =>
  fc
    .tuple(fc.record(model, { requiredKeys: [] }), fc.record(model), fc.nat(19))
    .map(([sparse, full, drop]) => {
      const value: Record<string, unknown> = { ...full };
      for (const key of optional) if (!(key in sparse)) delete value[key as string];
      const required = Object.keys(full).filter((k) => !optional.includes(k));
      if (drop < required.length) delete value[required[drop] as string];
      return value;
    });

const recordedObject = fields(
  {
    apiVersion: mostly(fc.constantFrom('v1', 'example.org/v1')),
    kind: mostly(fc.constantFrom('ConfigMap', 'Lease')),
    metadata: mostly(
      fields(
        {
          name: mostly(fc.constantFrom('a', 'widgets.example.org')),
          namespace: mostly(fc.constantFrom('', 'default')),
          uid: mostly(fc.constantFrom('u1', 'a-b-c')),
          resourceVersion: mostly(fc.constantFrom('1', '7')),
          labels: fc.dictionary(fc.string(), fc.string()),
        },
        ['namespace', 'labels'],
      ),
    ),
    spec: fc.jsonValue({ maxDepth: 2 }),
  },
  ['apiVersion', 'kind', 'spec'],
);

const nearlyValidEvent = fields(
  {
    op: mostly(fc.constantFrom('upsert', 'delete')),
    object: mostly(recordedObject),
    observedBy: mostly(fc.constantFrom('watch', 'list', 'relist-gap')),
    observedAt: mostly(timestamp),
    omitted: mostly(
      fields(
        {
          reason: mostly(fc.constant('too-large')),
          bytes: mostly(fc.oneof(fc.integer({ min: -2, max: 2 ** 40 }), fc.double())),
          extra: fc.string(),
        },
        ['extra'],
      ),
    ),
  },
  ['omitted'],
);

const withExtraField = fc
  .tuple(nearlyValidEvent, fc.jsonValue({ maxDepth: 1 }))
  .map(([value, extra]) => ({ ...value, extra }));

const isoTime = fc
  .date({ min: new Date(0), max: new Date('2999-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

const validObject = fc.record(
  {
    apiVersion: fc.string(),
    kind: fc.string(),
    metadata: fc.record(
      {
        name: fc.string({ minLength: 1 }),
        namespace: fc.string(),
        uid: fc.string({ minLength: 1 }),
        resourceVersion: fc.string({ minLength: 1 }),
        labels: fc.dictionary(fc.string(), fc.string()),
      },
      { requiredKeys: ['name', 'uid', 'resourceVersion'] },
    ),
    spec: fc.jsonValue({ maxDepth: 2 }),
  },
  { requiredKeys: ['metadata'] },
);

const validRecord = fc.oneof(
  fc.record(
    {
      op: fc.constant('upsert'),
      object: validObject,
      observedBy: fc.constantFrom('watch', 'list'),
      observedAt: isoTime,
      omitted: fc.record({ reason: fc.constant('too-large'), bytes: fc.integer({ min: 1, max: 2 ** 40 }) }),
    },
    { requiredKeys: ['op', 'object', 'observedBy', 'observedAt'] },
  ),
  fc.record({
    op: fc.constant('delete'),
    object: validObject,
    observedBy: fc.constantFrom('watch', 'relist-gap'),
    observedAt: isoTime,
  }),
);

/** A record reaches a view as JSON: plain objects, no undefined, no -0. */
const viaJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? 'null');

describe('the hand-written record check', () => {
  it('accepts every valid record', () => {
    fc.assert(
      fc.property(validRecord.map(viaJson), (value) => {
        expect(isDeepStrictEqual(objectEventSchema.parse(value), value)).toBe(true);
        expect(isObjectEvent(value)).toBe(true);
      }),
      { numRuns: 2_000 },
    );
  });

  it('accepts exactly what objectEventSchema accepts and returns unchanged', () => {
    const anything = fc
      .oneof({ weight: 8, arbitrary: nearlyValidEvent }, validRecord, withExtraField, fc.jsonValue())
      .map(viaJson);
    fc.assert(
      fc.property(anything, (value) => {
        const zod = objectEventSchema.safeParse(value);
        expect(isObjectEvent(value)).toBe(zod.success && isDeepStrictEqual(zod.data, value));
      }),
      { numRuns: 4_000 },
    );
  });

  it('decodes the records zod would change or refuse through zod: unknown fields stripped, reasons kept', () => {
    const withExtra = { ...event, extra: 1 };
    expect(isObjectEvent(withExtra)).toBe(false);
    expect(decodeObjectEvent(new TextEncoder().encode(JSON.stringify(withExtra)))).toEqual({
      ok: true,
      value: event,
    });
    const invalid = decodeObjectEvent(new TextEncoder().encode(JSON.stringify({ ...event, op: 'patch' })));
    expect(invalid.ok ? '' : invalid.reason).toMatch(/op/);
  });
});

const nearlyValidDecision = fields(
  {
    concern: mostly(fc.constantFrom('assign', 'handover')),
    key: mostly(fc.constantFrom('crdconfig/a', 'xrdconfig/b')),
    viewSeq: mostly(fc.oneof(fc.nat(), fc.integer({ min: -3, max: 0 }), fc.double())),
    decidedAt: mostly(timestamp),
    decision: mostly(fc.jsonValue({ maxDepth: 2 })),
  },
  [],
);

describe('the hand-written decision record check', () => {
  it('accepts exactly what decisionRecordSchema accepts and returns unchanged', () => {
    const anything = fc
      .oneof(
        { weight: 6, arbitrary: nearlyValidDecision },
        nearlyValidDecision.map((d) => ({ ...d, extra: 1 })),
        fc.jsonValue(),
      )
      .map(viaJson);
    fc.assert(
      fc.property(anything, (value) => {
        const zod = decisionRecordSchema.safeParse(value);
        expect(isDecisionRecord(value)).toBe(zod.success && isDeepStrictEqual(zod.data, value));
      }),
      { numRuns: 3_000 },
    );
  });

  it('accepts a record as assign writes it', () => {
    const record = {
      concern: 'assign',
      key: 'crdconfig/a',
      viewSeq: 7,
      decidedAt: new Date(0).toISOString(),
      decision: { move: { to: 'b' } },
    };
    expect(isDecisionRecord(viaJson(record))).toBe(true);
    expect(isDecisionRecord(viaJson({ ...record, decision: null }))).toBe(true);
  });
});
