import { describe, expect, it } from 'vitest';
import {
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
});
