// Served-set codec benchmark, side by side with the reference encoding (sorted names,
// newline-joined, gzip, base64) in the same run.
//   node bench/codec.ts
// Capacity: the largest number of realistic target names (bench/target-names.ts, fixed seed)
// whose served set fits the 192 KiB budget, found by bisection over prefixes of one corpus.
// Time: encode + decode at 50,000 names, median of several runs after a warm-up.
// Heartbeat: the whole Lease as JSON, which is what every renewal rewrites.
import { gunzipSync, gzipSync } from 'node:zlib';
import {
  DEFAULT_BUDGET_BYTES,
  decodeServedSet,
  encodeServedSet,
  expectedSetOf,
  isTruncationMarker,
} from '../src/core/served-set-codec.ts';
import { targetNames } from './target-names.ts';

const CORPUS = 1_000_000;
const AT = 50_000;
const RUNS = 7;

function baselineEncode(names: readonly string[]): string {
  return gzipSync([...names].sort().join('\n')).toString('base64');
}

function baselineDecode(value: string): Set<string> {
  return new Set(gunzipSync(Buffer.from(value, 'base64')).toString('utf8').split('\n'));
}

/** Largest n ≤ hi (to `step`) with fits(n); fits must be monotone. */
function bisect(fits: (n: number) => boolean, hi: number, step: number): number {
  if (fits(hi)) return hi;
  let lo = 0;
  let top = hi;
  while (top - lo > step) {
    const mid = Math.floor((lo + top) / 2);
    if (fits(mid)) lo = mid;
    else top = mid;
  }
  return lo;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function medianMs(fn: () => unknown): number {
  fn();
  const samples: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

/** The Lease a replica renews, with its served set in the annotation. */
function leaseBytes(annotation: string): number {
  const lease = {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: 'switchyard-served-shard-a-webhook-server-7d9f8c6b5d-x2x7q',
      namespace: 'switchyard-system',
      uid: '4f1d2c3b-5a6e-4f70-8a9b-0c1d2e3f4a5b',
      resourceVersion: '123456789',
      labels: { 'switchyard.dev/webhook-server': 'shard-a', 'app.kubernetes.io/managed-by': 'switchyard' },
      annotations: { 'switchyard.dev/served-set': annotation },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Pod',
          name: 'shard-a-webhook-server-7d9f8c6b5d-x2x7q',
          uid: '9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d',
        },
      ],
    },
    spec: {
      holderIdentity: 'shard-a-webhook-server-7d9f8c6b5d-x2x7q',
      leaseDurationSeconds: 90,
      acquireTime: '2026-01-01T00:00:00.000000Z',
      renewTime: '2026-01-01T00:00:30.000000Z',
    },
  };
  return Buffer.byteLength(JSON.stringify(lease));
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(1)} KiB`;
}

const corpus = targetNames(CORPUS);
const averageLength = corpus.reduce((s, n) => s + n.length, 0) / corpus.length;
const fitsBudget = (value: string) => value.length <= DEFAULT_BUDGET_BYTES;

// A replica that serves its whole expected set except `missingShare` of it (plans that failed
// to compile, or are still compiling).
function codecFits(n: number, missingShare: number): boolean {
  const expected = corpus.slice(0, n);
  const served = expected.slice(0, Math.floor(n * (1 - missingShare)));
  const value = encodeServedSet(served, expectedSetOf(expected));
  return !isTruncationMarker(value);
}

// Reader and writer share no expected set at all: every served name is an exception, so this
// is the capacity of the self-contained fallback.
function codecFitsWithoutSharedView(n: number): boolean {
  return !isTruncationMarker(encodeServedSet(corpus.slice(0, n), expectedSetOf([])));
}

console.log(
  `corpus: ${CORPUS.toLocaleString('en')} target names, ${averageLength.toFixed(1)} bytes on average; budget ${kib(DEFAULT_BUDGET_BYTES)}`,
);

const baselineCapacity = bisect((n) => fitsBudget(baselineEncode(corpus.slice(0, n))), 200_000, 500);
const capacities: Array<[string, number]> = [
  ['reference: sorted, newline-joined, gzip, base64', baselineCapacity],
  ['codec, all expected targets served', bisect((n) => codecFits(n, 0), CORPUS, 5_000)],
  ['codec, 1% of expected targets not servable', bisect((n) => codecFits(n, 0.01), CORPUS, 5_000)],
  ['codec, 10% of expected targets not servable', bisect((n) => codecFits(n, 0.1), CORPUS, 2_000)],
  ['codec, no shared view (every name an exception)', bisect(codecFitsWithoutSharedView, 200_000, 500)],
];
console.log('\n| encoding | targets reported without truncation | vs reference |');
console.log('|---|---|---|');
for (const [label, n] of capacities) {
  const bound = n === CORPUS ? '≥ ' : '';
  console.log(
    `| ${label} | ${bound}${n.toLocaleString('en')} | ${bound}${(n / baselineCapacity).toFixed(1)}× |`,
  );
}
const million = encodeServedSet(corpus, expectedSetOf(corpus));
console.log(`\nat ${CORPUS.toLocaleString('en')} targets, all served: value ${kib(million.length)}`);

const names = corpus.slice(0, AT);
const missingOne = names.slice(0, AT - AT / 100);
const writerView = expectedSetOf(names);
const readerView = expectedSetOf(names);
const ours = encodeServedSet(missingOne, writerView);
const baseline = baselineEncode(missingOne);
const rows: Array<[string, number, number]> = [
  ['reference', medianMs(() => baselineEncode(missingOne)), medianMs(() => baselineDecode(baseline))],
  [
    'codec, expected set prepared in the timing',
    medianMs(() => encodeServedSet(missingOne, expectedSetOf(names))),
    medianMs(() => decodeServedSet(ours, expectedSetOf(names))),
  ],
  [
    'codec, expected set cached per view',
    medianMs(() => encodeServedSet(missingOne, writerView)),
    medianMs(() => decodeServedSet(ours, readerView)),
  ],
];
const reference = rows[0] as [string, number, number];
console.log(`\n${AT.toLocaleString('en')} targets, 1% of them not servable:`);
console.log(
  '| encoding | encode | decode | encode + decode | vs reference | value | whole Lease (heartbeat write) |',
);
console.log('|---|---|---|---|---|---|---|');
for (const [label, enc, dec] of rows) {
  const value = label === 'reference' ? baseline : ours;
  const over = value.length > DEFAULT_BUDGET_BYTES ? ' (over budget: truncated)' : '';
  console.log(
    `| ${label} | ${enc.toFixed(1)} ms | ${dec.toFixed(1)} ms | ${(enc + dec).toFixed(1)} ms | ${((enc + dec) / (reference[1] + reference[2])).toFixed(2)}× | ${kib(value.length)}${over} | ${kib(leaseBytes(value))} |`,
  );
}
