import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  COMPRESS_ABOVE_BYTES,
  decodeMessage,
  encodeMessage,
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
