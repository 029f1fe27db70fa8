import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RecordedObject } from '../bus/messages.ts';
import { parseRecorded } from './view-reads.ts';

const object = (name: string): RecordedObject => ({ metadata: { name, uid: 'u', resourceVersion: '1' } });

describe('parseRecorded', () => {
  it('parses each recorded object once per schema, and a new record afresh', () => {
    let parses = 0;
    const schema = z.object({ metadata: z.object({ name: z.string() }) }).transform((o) => {
      parses++;
      return o.metadata.name;
    });
    const first = object('a');
    expect(parseRecorded(schema, first)).toMatchObject({ success: true, data: 'a' });
    expect(parseRecorded(schema, first)).toBe(parseRecorded(schema, first));
    expect(parses).toBe(1);
    expect(parseRecorded(schema, object('b'))).toMatchObject({ data: 'b' });
    expect(parses, 'a new record of the object is a new object').toBe(2);
    const other = z.object({ metadata: z.object({ name: z.literal('x') }) });
    expect(parseRecorded(other, first).success, 'another schema is its own cache').toBe(false);
  });
});
