// A sorted list of names as bytes: front coding (each name stores how much it shares with the
// previous one, then the rest in UTF-8), which turns the long common suffixes and prefixes of
// `<plural>.<group>` names into something a general-purpose compressor does much better on.
//
// The reader never throws: it reports malformed input as an error value, and accepts only the
// canonical form (strictly ascending, non-empty, well-formed names), so one set has exactly one
// encoding and a hostile value cannot smuggle duplicates or unsorted tails past it.
//
// Front coding makes a tiny input expand quadratically: `a`, `aa`, `aaa`, … costs ~5 bytes an
// entry and i bytes of name, so 100,000 entries (a few hundred KiB) would build 5 GB of
// strings. The reader therefore checks its limits (name length, name count, total name bytes)
// on every entry, before it builds the name: time and memory are bounded by the limits, not by
// what the input claims.

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Code-unit order: what Array.prototype.sort does, and what the reader checks. */
export function compareNames(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** An append-only byte buffer that grows by doubling. */
export class ByteWriter {
  private buffer = new Uint8Array(1024);
  private used = 0;

  varint(value: number): void {
    this.reserve(8);
    let v = value;
    while (v >= 0x80) {
      this.buffer[this.used++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buffer[this.used++] = v;
  }

  bytes(data: Uint8Array): void {
    this.reserve(data.length);
    this.buffer.set(data, this.used);
    this.used += data.length;
  }

  /** Writes varint(UTF-8 length) then the UTF-8 bytes of text. */
  utf8(text: string): void {
    this.reserve(text.length * 3 + 8);
    // Encode past a gap wide enough for any length prefix, then close the gap.
    const { written } = utf8.encodeInto(text, this.buffer.subarray(this.used + 8));
    const lengthStart = this.used;
    this.varint(written);
    this.buffer.copyWithin(this.used, lengthStart + 8, lengthStart + 8 + written);
    this.used += written;
  }

  finish(): Uint8Array {
    return this.buffer.subarray(0, this.used);
  }

  private reserve(extra: number): void {
    if (this.used + extra <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < this.used + extra) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.buffer.subarray(0, this.used));
    this.buffer = grown;
  }
}

export class ByteReader {
  private offset = 0;
  private readonly data: Uint8Array;

  constructor(data: Uint8Array) {
    this.data = data;
  }

  get done(): boolean {
    return this.offset === this.data.length;
  }

  /** How many bytes have been read. */
  get position(): number {
    return this.offset;
  }

  /** A varint below 2^48, or undefined when the input ends or the value is too large. */
  varint(): number | undefined {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 7; i++) {
      const b = this.data[this.offset++];
      if (b === undefined) return undefined;
      value += (b & 0x7f) * scale;
      if (b < 0x80) return value;
      scale *= 0x80;
    }
    return undefined;
  }

  /** Everything not yet read. */
  rest(): Uint8Array {
    const out = this.data.subarray(this.offset);
    this.offset = this.data.length;
    return out;
  }

  bytes(length: number): Uint8Array | undefined {
    if (this.offset + length > this.data.length) return undefined;
    const out = this.data.subarray(this.offset, this.offset + length);
    this.offset += length;
    return out;
  }
}

/** Writes names (sorted ascending, distinct, well-formed) as count + front-coded entries. */
export function writeNameList(out: ByteWriter, sortedNames: readonly string[]): void {
  out.varint(sortedNames.length);
  let previous = '';
  for (const name of sortedNames) {
    const shared = sharedPrefixLength(previous, name);
    out.varint(shared);
    out.utf8(name.slice(shared));
    previous = name;
  }
}

/** The largest name a list may hold: a target name is a DNS subdomain, at most 253 bytes. */
export const MAX_NAME_BYTES = 253;

export interface NameListLimits {
  maxNames: number;
  /** Sum of the UTF-8 lengths of all names. */
  maxTotalBytes: number;
}

export type NameListResult =
  | { ok: true; names: string[]; totalBytes: number }
  | { ok: false; reason: string };

/** Whether a name can be written to a list (and will be accepted when read back). */
export function isListableName(name: string): boolean {
  if (name.length === 0 || name.length > MAX_NAME_BYTES || !name.isWellFormed()) return false;
  return name.length * MAX_UTF8_BYTES_PER_UNIT <= MAX_NAME_BYTES || utf8Length(name) <= MAX_NAME_BYTES;
}

/** UTF-8 spends at most 3 bytes a UTF-16 code unit (a surrogate pair is 4 bytes for 2 units). */
export const MAX_UTF8_BYTES_PER_UNIT = 3;

export function readNameList(input: ByteReader, limits: NameListLimits): NameListResult {
  const count = input.varint();
  if (count === undefined) return { ok: false, reason: 'bad name count' };
  if (count > limits.maxNames) return { ok: false, reason: `more than ${limits.maxNames} names` };
  const names: string[] = [];
  let previous = '';
  let totalBytes = 0;
  for (let i = 0; i < count; i++) {
    const shared = input.varint();
    const length = input.varint();
    if (shared === undefined || length === undefined || shared > previous.length) {
      return { ok: false, reason: `bad entry ${i}` };
    }
    // Every code unit of the shared prefix is at least one UTF-8 byte, so shared + length is a
    // lower bound of the name's size, checked before the name is built.
    if (shared + length > MAX_NAME_BYTES) {
      return { ok: false, reason: `entry ${i} longer than ${MAX_NAME_BYTES} bytes` };
    }
    const suffix = input.bytes(length);
    const text = suffix === undefined ? undefined : decodeUtf8(suffix);
    if (text === undefined) return { ok: false, reason: `bad entry ${i}` };
    const name = previous.slice(0, shared) + text;
    if (!isListableName(name))
      return { ok: false, reason: `entry ${i}: empty, ill-formed or longer than ${MAX_NAME_BYTES} bytes` };
    totalBytes += utf8Length(name);
    if (totalBytes > limits.maxTotalBytes)
      return { ok: false, reason: `names exceed ${limits.maxTotalBytes} bytes in total` };
    if (i > 0 && compareNames(previous, name) >= 0)
      return { ok: false, reason: 'names not strictly ascending' };
    names.push(name);
    previous = name;
  }
  return { ok: true, names, totalBytes };
}

/** The UTF-8 length of a well-formed string. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

// The shared prefix never ends between the two halves of a surrogate pair, so every suffix is
// well-formed and its UTF-8 round-trips.
function sharedPrefixLength(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  let n = 0;
  while (n < max && a.charCodeAt(n) === b.charCodeAt(n)) n++;
  if (n > 0 && isHighSurrogate(a.charCodeAt(n - 1))) n--;
  return n;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
