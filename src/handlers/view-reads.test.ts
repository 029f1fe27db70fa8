import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { RecordedObject } from '../bus/messages.ts';
import { derivedFromView, parseRecorded } from './view-reads.ts';

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

describe('derivedFromView', () => {
  it('derives again only when an object of its kinds was recorded anew, added or removed', () => {
    const lists: Record<string, RecordedObject[]> = {
      crdconfig: [object('a'), object('b')],
      lease: [object('l')],
    };
    const view = { list: (kind: string) => [...(lists[kind] ?? [])] };
    const slot = {};
    let computed = 0;
    const names = () =>
      derivedFromView(view, ['crdconfig'], slot, ([configs]) => {
        computed++;
        return (configs ?? []).map((o) => o.metadata.name);
      });
    expect(names()).toEqual(['a', 'b']);
    expect(names()).toBe(names());
    expect(computed).toBe(1);
    lists.lease = [object('l')];
    names();
    expect(computed, 'a record of another kind changes nothing it reads').toBe(1);
    lists.crdconfig = [object('a'), object('b')];
    names();
    expect(computed, 'the same names in new records are new records').toBe(2);
    lists.crdconfig = [object('a')];
    expect(names()).toEqual(['a']);
    expect(computed).toBe(3);
  });
});
