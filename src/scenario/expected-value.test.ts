import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ExpectedValue } from './expected-value.ts';

function written(...values: string[]): ExpectedValue {
  const e = new ExpectedValue();
  for (const v of values) {
    e.writeSent(v);
    e.writeSucceeded(v);
  }
  return e;
}

describe('what a read may return', () => {
  it('is the last value written, once its write was answered before the read was sent', () => {
    const e = written('v1', 'v2');
    const window = e.readSent();
    expect(e.readReturned(window, 'v1')).toBe(false);
    expect(e.readReturned(window, 'v2')).toBe(true);
    expect(e.readReturned(window, undefined)).toBe(false);
  });

  it('is either value while a write overlaps the read, and that read settles nothing', () => {
    const e = written('v1');
    const window = e.readSent();
    e.writeSent('v2');
    e.writeSucceeded('v2');
    expect(e.readReturned(window, 'v1')).toBe(true);
    expect(e.readReturned(e.readSent(), 'v1')).toBe(false);
  });

  it('includes a write still in flight when the read was sent', () => {
    const e = written('v1');
    e.writeSent('v2');
    const window = e.readSent();
    expect(e.readReturned(window, 'v2')).toBe(true);
    expect(e.readReturned(window, 'v1')).toBe(true);
  });

  it('keeps a failed write possible until a quiet read settles it', () => {
    const e = written('v1');
    e.writeSent('v2');
    e.writeFailed('v2');
    expect(e.finalValues()).toEqual(['v1', 'v2']);
    expect(e.readReturned(e.readSent(), 'v1')).toBe(true);
    expect(e.readReturned(e.readSent(), 'v2')).toBe(false);
    expect(e.finalValues()).toEqual(['v1']);
  });

  /**
   * One writer writing one value at a time and readers overlapping it, against a register that
   * stores each write at an instant inside its request (or, for a failed one, maybe never) and
   * answers each read with its value at an instant inside the read: every answer must be possible.
   */
  it('accepts every answer a linearizable store can give, in any interleaving', () => {
    const step = fc.record({ actor: fc.nat(3), stores: fc.boolean(), fails: fc.boolean() });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 60 }), (steps) => {
        const e = new ExpectedValue();
        let stored: string | undefined;
        let n = 0;
        let write: { value: string; stored: boolean } | undefined;
        const readers: (
          | { window: ReturnType<ExpectedValue['readSent']>; got?: string | undefined }
          | undefined
        )[] = [undefined, undefined, undefined];
        for (const { actor, stores, fails } of steps) {
          if (actor === 3) {
            if (!write) {
              write = { value: `v${++n}`, stored: false };
              e.writeSent(write.value);
            } else if (!write.stored && stores) {
              stored = write.value;
              write.stored = true;
            } else {
              // An answered success was stored; a failure may have been, or not.
              if (!fails && !write.stored) stored = write.value;
              if (fails) e.writeFailed(write.value);
              else e.writeSucceeded(write.value);
              write = undefined;
            }
            continue;
          }
          const reader = readers[actor];
          if (!reader) readers[actor] = { window: e.readSent() };
          else if (!('got' in reader)) reader.got = stored;
          else {
            if (reader.got !== undefined) expect(e.readReturned(reader.window, reader.got)).toBe(true);
            readers[actor] = undefined;
          }
        }
      }),
      { numRuns: 2000 },
    );
  });
});
