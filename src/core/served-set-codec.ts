// The served-set codec: what one webhook-server replica can serve, in one Lease annotation.
//
// Why not just the names: the reference design (sorted, newline-joined, gzip, base64) spends
// ~6.4 bytes a name and truncates at 30–50k targets; a better compressor buys 1.6× at 25× the
// CPU. But the reader already knows almost all of the answer: every component computes, from
// the same kind of view, the set a replica *should* hold (its instance's assigned targets).
// So the replica publishes a digest of the set it expects plus the exceptions — expected but
// not servable ("missing"), servable but not expected ("extra", e.g. a target still draining
// to it) — and the reader reconstructs the set from its own expected set.
//
// Views are not always identical (an informer is a moment behind), so the expected set is
// split into buckets by a hash of the name, each with its own 128-bit digest. A bucket whose
// digest matches the reader's is known exactly; a bucket that does not is reported as
// *unsettled* for the targets the reader expected in it: "cannot tell yet", never "served".
// Small sets are published as plain names (self-contained, immune to view skew), and names are
// also the fallback when the exceptions make the digest form larger than the names.
//
// The format is versioned in the value (`v2.<form>.<body>`); a reader refuses any other
// version, v1 included (it had no checksum, so a reader could not tell a corrupted v1 value
// from a good one). Over budget, the value is an explicit truncation marker, never a partial
// list. A replica whose view of the bus is not current publishes a "view behind" marker instead
// of a set: it holds plans, but whether they are the ones the present state calls for (the
// config's latest rules, a target moved onto it meanwhile) it cannot tell, so neither can a
// reader (bus/view-lag.ts).
//
// Integrity: a body starts with a 128-bit checksum (SHA-256 prefix) over the form and the whole
// uncompressed payload; a mismatch, or any byte after the deflate stream, is undecodable. A
// flipped bit in an exceptions list would otherwise turn a missing target into a served one.
//
// Hostile values: anyone who may write Leases in an instance's namespace can publish any value.
// Decoding is bounded whatever it is given: the inflated payload is capped (inflate stops at
// the cap), and the name lists at a name count, a per-name length and a total size (see
// name-list.ts). The encoder checks the same limits and publishes the truncation marker rather
// than a value a reader would refuse.
//
// Soundness: a target is reported served only if the writer listed it as an extra, or it is in
// a bucket whose contents the reader and writer agree on (equal SHA-256 prefixes) and the
// writer did not list it as missing. Decoding never throws.
import { createHash } from 'node:crypto';
import { deflateRawSync, inflateRawSync, type ZlibOptions } from 'node:zlib';
import {
  ByteReader,
  ByteWriter,
  isListableName,
  MAX_UTF8_BYTES_PER_UNIT,
  type NameListLimits,
  readNameList,
  utf8Length,
  writeNameList,
} from './name-list.ts';
import { drawFrom, prefixState } from './rendezvous-hash.ts';

/**
 * The default budget for the encoded value. The apiserver caps the sum of all annotation keys
 * and values of an object at 256 KiB; 64 KiB stay free for whatever else annotates the Lease.
 */
export const DEFAULT_BUDGET_BYTES = 192 * 1024;

const FORMAT_VERSION = 'v2';
const FORM_NAMES = 'n';
const FORM_EXPECTED = 'e';
const FORM_TRUNCATED = 't';
const FORM_VIEW_BEHIND = 'b';

// Form choice: a small set is published as names (self-contained: cheap, and a fresh instance's
// first targets are exactly when views differ); otherwise the digest form, which is smaller
// unless the exceptions are many; names again if only they fit; else the truncation marker.
const NAMES_FORM_MAX_NAMES = 1024;
const NAMES_FORM_PREFERRED_BYTES = 4096;

// ~1,000 expected names a bucket: at 1M targets 1,024 buckets × 16 bytes = 16 KiB of digests,
// and a view that differs in one target leaves ~1,000 targets unsettled, not all of them.
const NAMES_PER_BUCKET = 1024;
const MAX_BUCKETS = 65536;
const DIGEST_BYTES = 16;

const CHECKSUM_BYTES = 16;

// Decoding limits for hostile values, far above anything that fits the budget: realistic names
// front-code and deflate to ~6 bytes each, so a 192 KiB value holds ~32,000 of them, ~1 MiB
// inflated. Worst case within the limits: 16 MiB of names, decoded in well under a second.
const MAX_VALUE_LENGTH = 256 * 1024;
const MAX_INFLATED_BYTES = 8 * 1024 * 1024;
const LIST_LIMITS: NameListLimits = { maxNames: 250_000, maxTotalBytes: 16 * 1024 * 1024 };

const BUCKET_HASH = prefixState('switchyard/served-set-bucket');

/**
 * The set of targets a replica is expected to hold, prepared for the codec. Writer and readers
 * each build it from their own view (the targets the resolver assigns to the instance); all
 * replicas of one instance share the readers' copy.
 */
export interface ExpectedSet {
  readonly names: ReadonlySet<string>;
  /** Per bucket count: each expected name's bucket, and each bucket's digest. */
  bucketing(bucketCount: number): Bucketing;
}

export interface Bucketing {
  /** Bucket of each name, in the iteration order of `names`. */
  bucketOfName: Uint32Array;
  /** bucketCount × 16 bytes. */
  digests: Uint8Array;
}

export function expectedSetOf(names: Iterable<string>): ExpectedSet {
  const set = new Set([...names].filter(isListableName));
  const memo = new Map<number, Bucketing>();
  return {
    names: set,
    bucketing(bucketCount) {
      let found = memo.get(bucketCount);
      if (found === undefined) {
        found = bucketize(set, bucketCount);
        memo.set(bucketCount, found);
      }
      return found;
    },
  };
}

export type DecodedServedSet =
  /** `served`: certainly servable. `unsettled`: expected by the reader, but its bucket's digest differs. */
  | { kind: 'set'; served: ReadonlySet<string>; unsettled: ReadonlySet<string> }
  | { kind: 'truncated'; servedCount: number }
  /** The replica's view of the bus was not current: it cannot tell whether its plans are the present ones. */
  | { kind: 'viewBehind'; servedCount: number }
  | { kind: 'undecodable'; reason: string };

export interface EncodeOptions {
  budgetBytes?: number;
}

/** Encodes the servable set against the writer's expected set. Always within the budget. */
export function encodeServedSet(
  served: Iterable<string>,
  expected: ExpectedSet,
  options: EncodeOptions = {},
): string {
  const budget = options.budgetBytes ?? DEFAULT_BUDGET_BYTES;
  const names = servableNames(served);
  const fits = (value: string | undefined): value is string => value !== undefined && value.length <= budget;
  if (names.size <= NAMES_FORM_MAX_NAMES) {
    const small = namesForm(names);
    if (fits(small) && small.length <= NAMES_FORM_PREFERRED_BYTES) return small;
  }
  const digested = expectedForm(names, expected);
  if (fits(digested)) return digested;
  const plain = namesForm(names);
  return fits(plain) ? plain : truncatedMarker(names.size);
}

/** Decodes a published value against the reader's expected set. Never throws. */
export function decodeServedSet(value: string, expected: ExpectedSet): DecodedServedSet {
  if (value.length > MAX_VALUE_LENGTH) return undecodable('value longer than any annotation can be');
  const [version, form, body, ...rest] = value.split('.');
  if (version !== FORMAT_VERSION) return undecodable(`unsupported format version "${version?.slice(0, 16)}"`);
  if (body === undefined || rest.length > 0) return undecodable('not <version>.<form>.<body>');
  switch (form) {
    case FORM_NAMES:
      return decodeNamesForm(body);
    case FORM_EXPECTED:
      return decodeExpectedForm(body, expected);
    case FORM_TRUNCATED:
      return decodeTruncated(body);
    case FORM_VIEW_BEHIND:
      return decodeViewBehind(body);
    default:
      return undecodable(`unknown form "${form?.slice(0, 16)}"`);
  }
}

const decodedByExpected = new WeakMap<ExpectedSet, Map<string, DecodedServedSet>>();
/** Values kept per expected set: a few per replica of every instance, most recent first. */
const DECODED_KEPT = 256;

/**
 * `decodeServedSet`, remembered per expected set and value: a gate and an aggregate decode every
 * report of an instance on every decision, and a report changes far less often than decisions
 * are made (a 1,000-name report costs ~1 ms to decode). The expected set is a new object when
 * the expectation changes, so nothing stale is ever returned.
 */
export function decodeServedSetOnce(value: string, expected: ExpectedSet): DecodedServedSet {
  let byValue = decodedByExpected.get(expected);
  if (!byValue) {
    byValue = new Map();
    decodedByExpected.set(expected, byValue);
  }
  let decoded = byValue.get(value);
  if (decoded === undefined) {
    decoded = decodeServedSet(value, expected);
    if (byValue.size >= DECODED_KEPT) byValue.delete(byValue.keys().next().value as string);
  } else byValue.delete(value);
  byValue.set(value, decoded);
  return decoded;
}

function undecodable(reason: string): DecodedServedSet {
  return { kind: 'undecodable', reason };
}

// Names that cannot be targets (empty, not well-formed UTF-16, over 253 bytes) are left out:
// leaving a name out can only understate what the replica serves.
function servableNames(served: Iterable<string>): Set<string> {
  const out = new Set<string>();
  for (const name of served) if (isListableName(name)) out.add(name);
  return out;
}

// Array.prototype.sort's default order is code-unit order, the order compareNames defines.
function sorted(names: Iterable<string>): string[] {
  return [...names].sort();
}

// Undefined when the lists exceed what a reader accepts: the caller falls back as if over budget.
function namesForm(names: ReadonlySet<string>): string | undefined {
  const list = sorted(names);
  if (!withinListLimits(list)) return undefined;
  const payload = new ByteWriter();
  writeNameList(payload, list);
  return sealed(FORM_NAMES, new Uint8Array(), payload.finish());
}

function expectedForm(served: ReadonlySet<string>, expected: ExpectedSet): string | undefined {
  const missing = sorted([...expected.names].filter((n) => !served.has(n)));
  const extras = sorted([...served].filter((n) => !expected.names.has(n)));
  if (!withinListLimits([...missing, ...extras])) return undefined;
  const bucketCount = bucketCountFor(expected.names.size);
  const exceptions = new ByteWriter();
  writeNameList(exceptions, missing);
  writeNameList(exceptions, extras);
  const header = new ByteWriter();
  header.varint(bucketCount);
  header.bytes(expected.bucketing(bucketCount).digests);
  return sealed(FORM_EXPECTED, header.finish(), exceptions.finish());
}

// Counting UTF-8 bytes costs more than the rest of encoding a name; the code-unit count bounds
// it within a factor of three, so the exact count is taken only near the limit.
function withinListLimits(names: readonly string[]): boolean {
  if (names.length > LIST_LIMITS.maxNames) return false;
  let units = 0;
  for (const name of names) units += name.length;
  if (units * MAX_UTF8_BYTES_PER_UNIT <= LIST_LIMITS.maxTotalBytes) return true;
  let total = 0;
  for (const name of names) total += utf8Length(name);
  return total <= LIST_LIMITS.maxTotalBytes;
}

// body = checksum ‖ header ‖ deflate(payload); the checksum covers form, header and payload.
function sealed(form: string, header: Uint8Array, payload: Uint8Array): string | undefined {
  if (payload.length > MAX_INFLATED_BYTES) return undefined;
  const out = new ByteWriter();
  out.bytes(checksum(form, header, payload));
  out.bytes(header);
  out.bytes(deflateRawSync(payload, { level: 9 }));
  return `${FORMAT_VERSION}.${form}.${base64(out.finish())}`;
}

function checksum(form: string, header: Uint8Array, payload: Uint8Array): Uint8Array {
  return createHash('sha256')
    .update(form)
    .update(header)
    .update(payload)
    .digest()
    .subarray(0, CHECKSUM_BYTES);
}

/** Whether an encoded value is in the names form: self-contained, read alike whatever the reader's expected set. */
export function isNamesForm(value: string): boolean {
  return value.startsWith(`${FORMAT_VERSION}.${FORM_NAMES}.`);
}

/** Whether an encoded value is the truncation marker (the replica's set did not fit). */
export function isTruncationMarker(value: string): boolean {
  return value.startsWith(`${FORMAT_VERSION}.${FORM_TRUNCATED}.`);
}

function truncatedMarker(servedCount: number): string {
  return `${FORMAT_VERSION}.${FORM_TRUNCATED}.${servedCount}`;
}

/** What a replica publishes while its view is not current: how many plans it holds, and nothing it could be held to. */
export function viewBehindMarker(servedCount: number): string {
  return `${FORMAT_VERSION}.${FORM_VIEW_BEHIND}.${servedCount}`;
}

/** A body's parts once its checksum holds: the header, read on by the caller, and the payload. */
interface Opened {
  header: ByteReader;
  payload: Uint8Array;
}

// Splits checksum ‖ header ‖ deflate stream (the header is `headerLength(bytes)` long), inflates
// the stream within the cap, and verifies the checksum: anything else is a reason to refuse.
function open(
  form: string,
  body: string,
  headerLength: (afterChecksum: ByteReader) => number | undefined,
): Opened | string {
  const bytes = fromBase64(body);
  if (bytes === undefined) return 'not base64';
  const input = new ByteReader(bytes);
  const sum = input.bytes(CHECKSUM_BYTES);
  const afterChecksum = input.rest();
  const length = headerLength(new ByteReader(afterChecksum));
  if (sum === undefined || length === undefined || length > afterChecksum.length)
    return 'truncated or bad header';
  const header = afterChecksum.subarray(0, length);
  const payload = inflateExactly(afterChecksum.subarray(length));
  if (payload === undefined)
    return `not one deflate stream of at most ${MAX_INFLATED_BYTES} bytes with nothing after it`;
  if (Buffer.compare(sum, checksum(form, header, payload)) !== 0) return 'checksum mismatch';
  return { header: new ByteReader(header), payload };
}

function decodeNamesForm(body: string): DecodedServedSet {
  const opened = open(FORM_NAMES, body, () => 0);
  if (typeof opened === 'string') return undecodable(`names: ${opened}`);
  const input = new ByteReader(opened.payload);
  const list = readNameList(input, LIST_LIMITS);
  if (!list.ok) return undecodable(`names: ${list.reason}`);
  if (!input.done) return undecodable('names: trailing bytes');
  return { kind: 'set', served: new Set(list.names), unsettled: new Set() };
}

// The header is varint(bucket count) ‖ bucket count × 16 digest bytes.
function expectedHeaderLength(header: ByteReader): number | undefined {
  const bucketCount = header.varint();
  if (bucketCount === undefined || !isValidBucketCount(bucketCount)) return undefined;
  return header.position + bucketCount * DIGEST_BYTES;
}

function decodeExpectedForm(body: string, expected: ExpectedSet): DecodedServedSet {
  const opened = open(FORM_EXPECTED, body, expectedHeaderLength);
  if (typeof opened === 'string') return undecodable(`expected: ${opened}`);
  const bucketCount = opened.header.varint() as number;
  const digests = opened.header.rest();
  const exceptions = new ByteReader(opened.payload);
  const missing = readNameList(exceptions, LIST_LIMITS);
  if (!missing.ok) return undecodable(`expected: missing list: ${missing.reason}`);
  const extras = readNameList(exceptions, {
    maxNames: LIST_LIMITS.maxNames - missing.names.length,
    maxTotalBytes: LIST_LIMITS.maxTotalBytes - missing.totalBytes,
  });
  if (!extras.ok) return undecodable(`expected: extras list: ${extras.reason}`);
  if (!exceptions.done) return undecodable('expected: trailing bytes');
  return reconstruct(expected, bucketCount, digests, new Set(missing.names), extras.names);
}

function reconstruct(
  expected: ExpectedSet,
  bucketCount: number,
  writerDigests: Uint8Array,
  missing: ReadonlySet<string>,
  extras: readonly string[],
): DecodedServedSet {
  const ours = expected.bucketing(bucketCount);
  const agreed = agreedBuckets(ours.digests, writerDigests, bucketCount);
  const extraSet = new Set(extras);
  const served = new Set<string>();
  const unsettled = new Set<string>();
  let i = 0;
  for (const name of expected.names) {
    const bucket = ours.bucketOfName[i++] as number;
    if (missing.has(name)) continue;
    if (agreed[bucket] === 1) served.add(name);
    else if (!extraSet.has(name)) unsettled.add(name);
  }
  for (const name of extras) served.add(name);
  return { kind: 'set', served, unsettled };
}

function agreedBuckets(ours: Uint8Array, theirs: Uint8Array, bucketCount: number): Uint8Array {
  const agreed = new Uint8Array(bucketCount);
  for (let b = 0; b < bucketCount; b++) {
    const at = b * DIGEST_BYTES;
    agreed[b] =
      Buffer.compare(ours.subarray(at, at + DIGEST_BYTES), theirs.subarray(at, at + DIGEST_BYTES)) === 0
        ? 1
        : 0;
  }
  return agreed;
}

function decodeTruncated(body: string): DecodedServedSet {
  if (!isCount(body)) return undecodable('truncated: bad count');
  return { kind: 'truncated', servedCount: Number(body) };
}

function decodeViewBehind(body: string): DecodedServedSet {
  if (!isCount(body)) return undecodable('view behind: bad count');
  return { kind: 'viewBehind', servedCount: Number(body) };
}

function isCount(body: string): boolean {
  return /^(0|[1-9][0-9]{0,9})$/.test(body);
}

function bucketCountFor(expectedSize: number): number {
  let count = 1;
  while (count * NAMES_PER_BUCKET < expectedSize && count < MAX_BUCKETS) count *= 2;
  return count;
}

function isValidBucketCount(count: number): boolean {
  return count >= 1 && count <= MAX_BUCKETS && (count & (count - 1)) === 0;
}

function bucketize(names: ReadonlySet<string>, bucketCount: number): Bucketing {
  const bucketOfName = new Uint32Array(names.size);
  const members: string[][] = Array.from({ length: bucketCount }, () => []);
  let i = 0;
  for (const name of names) {
    const bucket = Math.min(bucketCount - 1, Math.floor(drawFrom(BUCKET_HASH, name) * bucketCount));
    bucketOfName[i++] = bucket;
    members[bucket]?.push(name);
  }
  const digests = new Uint8Array(bucketCount * DIGEST_BYTES);
  members.forEach((bucket, b) => {
    digests.set(bucketDigest(sorted(bucket)), b * DIGEST_BYTES);
  });
  return { bucketOfName, digests };
}

// JSON of the sorted names: canonical and unambiguous for any strings.
function bucketDigest(sortedNames: readonly string[]): Uint8Array {
  return createHash('sha256').update(JSON.stringify(sortedNames)).digest().subarray(0, DIGEST_BYTES);
}

// One complete raw deflate stream that inflates to at most the cap, and not a byte after it:
// zlib stops at the end of the stream and would otherwise ignore what follows. `info` exposes
// the engine, whose bytesWritten is the input it consumed.
function inflateExactly(bytes: Uint8Array): Uint8Array | undefined {
  try {
    const { buffer, engine } = inflateRawSync(bytes, {
      maxOutputLength: MAX_INFLATED_BYTES,
      info: true,
    } as ZlibOptions) as unknown as { buffer: Buffer; engine: { bytesWritten: number } };
    return engine.bytesWritten === bytes.length ? buffer : undefined;
  } catch {
    return undefined;
  }
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

// Buffer.from(…, 'base64') skips characters it does not know and ignores the unused low bits
// of the last character; a strict reader refuses both, so one value has one meaning.
function fromBase64(text: string): Uint8Array | undefined {
  if (text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) return undefined;
  const bytes = Buffer.from(text, 'base64');
  return bytes.toString('base64') === text ? bytes : undefined;
}
