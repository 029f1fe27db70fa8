import { deflateSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  controlFrame,
  dataFrame,
  decodeHeaderBlock,
  encodeHeaderBlock,
  HEADER_DICTIONARY,
  readFrame,
} from './spdy.ts';

describe('SPDY/3.1 framing', () => {
  it('uses the SPDY/3 draft dictionary, byte for byte (its zlib dictionary id)', () => {
    // Go's spdystream (the apiserver's side) uses the same 1,423 bytes; a byte off and every
    // header block fails to inflate there.
    expect(HEADER_DICTIONARY.length).toBe(1423);
    // A zlib stream with a preset dictionary names it by its Adler-32 after the two header bytes.
    expect(deflateSync(Buffer.alloc(0), { dictionary: HEADER_DICTIONARY }).readUInt32BE(2)).toBe(0xe3c6a7c2);
  });

  it('reads a frame only once all of it has arrived', () => {
    const frame = dataFrame(5, true, Buffer.from('hello'));
    expect(readFrame(frame.subarray(0, 7))).toBeUndefined();
    expect(readFrame(frame.subarray(0, 12))).toBeUndefined();
    const read = readFrame(Buffer.concat([frame, Buffer.from('next')]));
    expect(read?.size).toBe(13);
    expect(read?.frame).toEqual({ kind: 'data', streamId: 5, fin: true, data: Buffer.from('hello') });
  });

  it('reads control frames with their type and flags', () => {
    const read = readFrame(controlFrame(6, 0, Buffer.from([0, 0, 0, 1])));
    expect(read?.frame).toEqual({ kind: 'control', type: 6, flags: 0, payload: Buffer.from([0, 0, 0, 1]) });
  });

  it('refuses another SPDY version', () => {
    const v2 = controlFrame(6, 0, Buffer.alloc(4));
    v2.writeUInt16BE(0x8002, 0);
    expect(() => readFrame(v2)).toThrow(/version 2/);
  });

  it('round-trips header blocks, several values joined by NUL', () => {
    const name = fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/);
    const value = fc.string({ maxLength: 20 }).filter((s) => !s.includes('\0'));
    fc.assert(
      fc.property(fc.dictionary(name, fc.array(value, { minLength: 1, maxLength: 3 })), (headers) => {
        expect(decodeHeaderBlock(encodeHeaderBlock(headers))).toEqual(headers);
      }),
    );
  });

  it('says where a header block is cut short', () => {
    const block = encodeHeaderBlock({ streamtype: ['data'] });
    expect(() => decodeHeaderBlock(block.subarray(0, 2))).toThrow(/no count/);
    expect(() => decodeHeaderBlock(block.subarray(0, 6))).toThrow(/inside a length/);
    expect(() => decodeHeaderBlock(block.subarray(0, block.length - 1))).toThrow(/inside a name or value/);
  });
});
