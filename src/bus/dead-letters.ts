/**
 * Reading the dead letters back, and deciding whether one may be re-driven: the pure half of
 * `switchyard dlq` (src/cli/dlq.ts does the I/O).
 *
 * A dead letter is a message of stream DLQ on `dlq.<concern>`: the original payload, untouched,
 * with the record of `runtime/dead-letter.ts` in its headers (kind, reason, original subject,
 * stream and sequence, consumer, delivery count, time). Re-driving publishes the payload to its
 * original subject again, and only there, and only when that subject is one a handler consumes
 * now: a work subject (`work.<concern>.<partition>.<key…>`) of a concern whose partition count
 * still puts the key in that partition. Anything else (a record the router could not route, a
 * fan-out item, a message whose headers are not a record) is refused with the reason, never
 * guessed at. The re-driven copy carries a message id derived from the dead letter's own
 * sequence, so running the same retry again within WORK's duplicate window stores it once.
 */
import { gunzipSync } from 'node:zlib';
import type { MsgHdrs } from '@nats-io/transport-node';
import { prettifyError, ZodError, type ZodType } from 'zod';
import { decodeMessage, MAX_INFLATED_BYTES } from './messages.ts';
import type { HandlerConsumerSpec } from './runtime/consumers.ts';
import { type DeadLetterRecord, readDeadLetter } from './runtime/dead-letter.ts';
import { errorMessage } from './runtime/errors.ts';
import { partitionOf } from './runtime/partition.ts';
import { subjectMatches } from './subjects.ts';
import { STREAMS } from './topology.ts';

/** The subject prefix of the dead letters: `dlq.<concern>` (stream DLQ). */
export const DEAD_LETTER_PREFIX = 'dlq';

/** Header on a re-driven work item: the dead letter it came from (`DLQ:<seq>`). */
export const REDRIVEN_FROM_HEADER = 'Switchyard-Redriven-From';

export function deadLetterSubjectOf(concern: string): string {
  return `${DEAD_LETTER_PREFIX}.${concern}`;
}

/** The concern of a dead-letter subject (`dlq.handover` → `handover`), undefined for any other subject. */
export function concernOfDeadLetterSubject(subject: string): string | undefined {
  const parts = subject.split('.');
  return parts.length === 2 && parts[0] === DEAD_LETTER_PREFIX && parts[1] ? parts[1] : undefined;
}

/**
 * The message id of a re-driven dead letter: one per dead letter, so a retry that is run again
 * (it crashed between the publish and the delete, or two operators ran it) stores the work once
 * within WORK's duplicate window.
 */
export function redriveMsgId(dlqSeq: number): string {
  return `dlq-retry:${STREAMS.deadLetters}:${dlqSeq}`;
}

/** A message of the DLQ stream as read (a stored message). */
export interface StoredDeadLetter {
  seq: number;
  subject: string;
  time: Date;
  headers: MsgHdrs | undefined;
  data: Uint8Array;
}

/** One dead letter: where it is in DLQ, and its record (or why its headers are not one). */
export interface DeadLetterEntry {
  /** Its sequence in DLQ: what `dlq show` and `dlq retry` name. */
  seq: number;
  subject: string;
  /** The concern of its subject (`dlq.<concern>`); `?` when the subject has another shape. */
  concern: string;
  /** When DLQ stored it (ISO). */
  storedAt: string;
  payloadBytes: number;
  record: DeadLetterRecord | undefined;
  /** Why the headers are not a dead-letter record (a message published to DLQ by hand). */
  malformed?: string;
}

export function parseDeadLetter(m: StoredDeadLetter): DeadLetterEntry {
  const base = {
    seq: m.seq,
    subject: m.subject,
    concern: concernOfDeadLetterSubject(m.subject) ?? '?',
    storedAt: m.time.toISOString(),
    payloadBytes: m.data.byteLength,
  };
  try {
    return { ...base, record: readDeadLetter({ headers: m.headers }) };
  } catch (err) {
    const why = err instanceof ZodError ? prettifyError(err) : errorMessage(err);
    return { ...base, record: undefined, malformed: oneLine(why.replace(/^not a dead-letter record: /, '')) };
  }
}

/** A concern whose work a handler consumes: its consumers (as the handler runs them) and its payload schema. */
export interface WorkConcern {
  concern: string;
  consumers: HandlerConsumerSpec;
  schema: ZodType<unknown>;
}

export type RedriveVerdict = { ok: true; concern: string; subject: string } | { ok: false; reason: string };

const UNSAFE_TOKEN = /[\s*>]/;

/** The work concern whose consumers take `subject`, with the partition check, or why none does. */
function consumingConcern(
  subject: string,
  concerns: readonly WorkConcern[],
): { ok: true; concern: WorkConcern } | { ok: false; reason: string } {
  const tokens = subject.split('.');
  if (tokens.some((t) => t === '' || UNSAFE_TOKEN.test(t)))
    return { ok: false, reason: `${subject} is not a valid subject to publish to` };
  for (const c of concerns) {
    const spec = c.consumers;
    if (spec.stream !== STREAMS.work) continue;
    if (spec.mode === 'shared') {
      if (subjectMatches(spec.filterSubject, subject)) return { ok: true, concern: c };
      continue;
    }
    if (!subject.startsWith(`${spec.prefix}.`)) continue;
    const [partitionToken, ...keyTokens] = subject.slice(spec.prefix.length + 1).split('.');
    if (!/^\d+$/.test(partitionToken ?? '') || keyTokens.length === 0)
      return {
        ok: false,
        reason: `${subject} is not ${spec.prefix}.<partition>.<key>: no ${c.concern} consumer takes it`,
      };
    const partition = Number(partitionToken);
    const now = partitionOf(keyTokens, spec.partitions);
    if (partition !== now)
      return {
        ok: false,
        reason:
          `its key belongs to ${spec.prefix}.${now}.${keyTokens.join('.')} with ${spec.partitions} ${c.concern} ` +
          `partitions (the count changed since it was dead-lettered?); re-driving it to partition ${partition} ` +
          `would break per-key order`,
      };
    return { ok: true, concern: c };
  }
  const known = concerns.map((c) => c.concern).join(', ');
  return { ok: false, reason: `no handler consumes ${subject} (work concerns: ${known})` };
}

/** What else a dead letter from another stream is, and what brings its work back instead. */
function notWorkReason(record: DeadLetterRecord): string {
  const from = `it came from ${record.originalStream} (${record.originalSubject})`;
  if (record.originalStream === STREAMS.records)
    return (
      `${from}: a record the router could not route, not a work item; only work subjects are re-driven. ` +
      `The object's next change is routed again (restarting the watchers records every object again)`
    );
  if (record.originalStream === STREAMS.fanout)
    return (
      `${from}: a fan-out item waiting for the pacer, not a work item; only work subjects are re-driven. ` +
      `The next change of the pool fans out again`
    );
  return `${from}: only work items (stream ${STREAMS.work}, work.<concern>.…) are re-driven`;
}

/**
 * Whether a dead letter may be re-driven now, and where to: only to its original subject, only
 * when that is a work subject a handler consumes with the partition counts of `concerns`, only
 * when it was dead-lettered by that concern, and only when its payload decodes against that
 * concern's schema now (otherwise the runtime would dead-letter it again at once).
 */
export function redriveVerdict(
  entry: DeadLetterEntry,
  data: Uint8Array,
  concerns: readonly WorkConcern[],
): RedriveVerdict {
  const record = entry.record;
  if (!record)
    return {
      ok: false,
      reason: `not a dead-letter record (${entry.malformed ?? 'no headers'}): nothing says where it came from`,
    };
  const subject = record.originalSubject;
  if (record.originalStream !== STREAMS.work || !subject.startsWith('work.'))
    return { ok: false, reason: notWorkReason(record) };
  const consuming = consumingConcern(subject, concerns);
  if (!consuming.ok) return { ok: false, reason: consuming.reason };
  const concern = consuming.concern;
  if (entry.concern !== concern.concern)
    return {
      ok: false,
      reason: `it is a dead letter of ${entry.concern} (${entry.subject}) but ${subject} is ${concern.concern}'s work`,
    };
  const decoded = decodeMessage(concern.schema, data);
  if (!decoded.ok)
    return {
      ok: false,
      reason: `its payload does not decode against ${concern.concern}'s schema now, so the handler would dead-letter it again: ${oneLine(decoded.reason)}`,
    };
  return { ok: true, concern: concern.concern, subject };
}

/** A concern's payload schema: a work concern's, or one whose dead letters are only inspected (the router's records). */
export type ConcernSchema = Pick<WorkConcern, 'concern' | 'schema'>;

/** Whether the payload decodes against its concern's schema now; undefined when no schema is known. */
export function decodesNow(
  entry: DeadLetterEntry,
  data: Uint8Array,
  schemas: readonly ConcernSchema[],
): { ok: true } | { ok: false; reason: string } | undefined {
  const concern = schemas.find((c) => c.concern === entry.concern);
  if (!concern) return undefined;
  const decoded = decodeMessage(concern.schema, data);
  return decoded.ok ? { ok: true } : { ok: false, reason: decoded.reason };
}

export interface PayloadView {
  /** `json` (pretty-printed), `gzip+json`, `text` (not JSON), `binary` (not UTF-8: shown as base64). */
  encoding: 'json' | 'gzip+json' | 'gzip' | 'text' | 'binary';
  text: string;
}

/** The payload as a person reads it: JSON pretty-printed (inflated first when gzip-compressed). */
export function payloadView(data: Uint8Array): PayloadView {
  let bytes = data;
  let gzip = false;
  if (data[0] === 0x1f && data[1] === 0x8b) {
    try {
      bytes = new Uint8Array(gunzipSync(data, { maxOutputLength: MAX_INFLATED_BYTES }));
      gzip = true;
    } catch {
      return { encoding: 'binary', text: Buffer.from(data).toString('base64') };
    }
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { encoding: 'binary', text: Buffer.from(data).toString('base64') };
  }
  try {
    return { encoding: gzip ? 'gzip+json' : 'json', text: JSON.stringify(JSON.parse(text), null, 2) };
  } catch {
    return { encoding: gzip ? 'gzip' : 'text', text };
  }
}

/** An entry as `-o json` prints it: the record's fields beside where the dead letter is. */
export function deadLetterJson(entry: DeadLetterEntry): Record<string, unknown> {
  return {
    seq: entry.seq,
    subject: entry.subject,
    concern: entry.concern,
    storedAt: entry.storedAt,
    payloadBytes: entry.payloadBytes,
    ...(entry.record ?? { malformed: entry.malformed }),
  };
}

function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, ' ').trim();
}

function ellipsis(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** `3m`, `5h`, `2d`: how long ago, coarse. */
export function age(fromIso: string, nowMs: number): string {
  const s = Math.max(0, Math.floor((nowMs - Date.parse(fromIso)) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

const REASON_COLUMN_CHARS = 80;

/** `dlq list`: one line per dead letter, oldest first. */
export function formatDeadLetterList(
  entries: readonly DeadLetterEntry[],
  opts: { nowMs: number; concern?: string | undefined },
): string {
  const scope = opts.concern ? ` of ${opts.concern}` : '';
  if (entries.length === 0) return `no dead letters${scope}\n`;
  const rows = [['SEQ', 'CONCERN', 'KIND', 'TRIES', 'AGE', 'ORIGINAL SUBJECT', 'REASON']];
  for (const e of entries) {
    const r = e.record;
    rows.push([
      String(e.seq),
      e.concern,
      r?.kind ?? '?',
      r ? String(r.deliveryCount) : '-',
      age(r?.at ?? e.storedAt, opts.nowMs),
      r?.originalSubject ?? '-',
      ellipsis(r ? oneLine(r.reason) : `not a dead-letter record: ${e.malformed}`, REASON_COLUMN_CHARS),
    ]);
  }
  const kinds = new Map<string, number>();
  for (const e of entries) kinds.set(e.record?.kind ?? '?', (kinds.get(e.record?.kind ?? '?') ?? 0) + 1);
  // A fixed order, so the same dead letters always read the same whatever order they arrived in.
  const summary = [...kinds]
    .sort(([a], [b]) => (a === '?' ? 1 : b === '?' ? -1 : a.localeCompare(b)))
    .map(([k, n]) => `${n} ${k}`)
    .join(', ');
  return `${table(rows).join('\n')}\n${entries.length} dead letter${entries.length === 1 ? '' : 's'}${scope} (${summary}); \`switchyard dlq show <seq>\` for one\n`;
}

const KIND_MEANING: Record<DeadLetterRecord['kind'], string> = {
  invalid: 'the payload failed its schema (or is not JSON): never retried',
  permanent: 'the handler said the failure is permanent: not retried',
  'max-deliver': 'every attempt failed: retries exhausted',
};

export interface ShownDeadLetter {
  entry: DeadLetterEntry;
  headers: [string, string][];
  payload: PayloadView;
  decodes: ReturnType<typeof decodesNow>;
  verdict: RedriveVerdict;
  /** When DLQ drops it (its retention), ISO; undefined without an age limit. */
  keptUntil: string | undefined;
}

/** `dlq show <seq>`. */
export function formatDeadLetter(shown: ShownDeadLetter): string {
  const { entry, payload, decodes, verdict } = shown;
  const r = entry.record;
  const rows: [string, string][] = [
    ['subject', entry.subject],
    ['stored', `${entry.storedAt}${shown.keptUntil ? ` (kept until ${shown.keptUntil})` : ''}`],
  ];
  if (r) {
    rows.push(
      ['kind', `${r.kind}: ${KIND_MEANING[r.kind]}`],
      ['reason', oneLine(r.reason)],
      ['original', `${r.originalSubject} (stream ${r.originalStream}, seq ${r.originalSeq})`],
      ['consumer', r.consumer],
      ['deliveries', String(r.deliveryCount)],
      ['dead-lettered', r.at],
    );
  } else rows.push(['record', `none: ${entry.malformed}`]);
  rows.push([
    'decodes now',
    decodes === undefined
      ? `unknown: no schema for ${entry.concern}`
      : decodes.ok
        ? `yes, against ${entry.concern}'s schema`
        : `no: ${oneLine(decodes.reason)}`,
  ]);
  rows.push([
    're-drive',
    verdict.ok
      ? `to ${verdict.subject}: \`switchyard dlq retry ${entry.seq}\``
      : `refused: ${verdict.reason}`,
  ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const lines = [`dead letter ${entry.seq}`, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)];
  lines.push('  headers');
  for (const [k, v] of shown.headers) lines.push(`    ${k}: ${v}`);
  lines.push(`  payload (${entry.payloadBytes} bytes, ${payload.encoding})`);
  for (const line of payload.text.split('\n')) lines.push(`    ${line}`);
  return `${lines.join('\n')}\n`;
}

export function showJson(shown: ShownDeadLetter): Record<string, unknown> {
  return {
    ...deadLetterJson(shown.entry),
    keptUntil: shown.keptUntil,
    headers: Object.fromEntries(shown.headers),
    payload:
      shown.payload.encoding === 'json' || shown.payload.encoding === 'gzip+json'
        ? JSON.parse(shown.payload.text)
        : shown.payload.text,
    payloadEncoding: shown.payload.encoding,
    decodesNow: shown.decodes ?? null,
    redrive: shown.verdict,
  };
}

/** What happened to one dead letter in `dlq retry`. */
export type RetryResult =
  | { seq: number; outcome: 'redriven'; subject: string; workSeq: number; duplicate: boolean }
  | { seq: number; outcome: 'would-redrive'; subject: string }
  | { seq: number; outcome: 'refused'; reason: string }
  | { seq: number; outcome: 'failed'; error: string }
  | { seq: number; outcome: 'missing' };

export function formatRetryResult(r: RetryResult): string {
  switch (r.outcome) {
    case 'redriven':
      return `re-drove ${r.seq} → ${r.subject} (WORK seq ${r.workSeq}${r.duplicate ? ', already stored by an earlier run: not stored again' : ''}); removed from DLQ`;
    case 'would-redrive':
      return `would re-drive ${r.seq} → ${r.subject}`;
    case 'refused':
      return `refused ${r.seq}: ${r.reason}`;
    case 'failed':
      return `failed ${r.seq}: ${r.error}`;
    case 'missing':
      return `no dead letter ${r.seq} (already re-driven, deleted, aged out, or never there)`;
  }
}

export interface RetryTally {
  redriven: number;
  wouldRedrive: number;
  refused: number;
  failed: number;
  missing: number;
}

export function tallyRetries(results: readonly RetryResult[]): RetryTally {
  const t: RetryTally = { redriven: 0, wouldRedrive: 0, refused: 0, failed: 0, missing: 0 };
  for (const r of results) {
    if (r.outcome === 'redriven') t.redriven++;
    else if (r.outcome === 'would-redrive') t.wouldRedrive++;
    else if (r.outcome === 'refused') t.refused++;
    else if (r.outcome === 'failed') t.failed++;
    else t.missing++;
  }
  return t;
}

/** 0 when every dead letter asked for was re-driven (or would be), 1 otherwise, and when none was. */
export function retryExitCode(results: readonly RetryResult[]): 0 | 1 {
  if (results.length === 0) return 1;
  const t = tallyRetries(results);
  return t.refused + t.failed + t.missing === 0 ? 0 : 1;
}

export function formatRetrySummary(results: readonly RetryResult[], dryRun: boolean): string {
  if (results.length === 0) return 'nothing to retry: no dead letter matched\n';
  const t = tallyRetries(results);
  const parts = [
    dryRun ? `${t.wouldRedrive} would be re-driven` : `${t.redriven} re-driven`,
    ...(t.refused ? [`${t.refused} refused`] : []),
    ...(t.failed ? [`${t.failed} failed`] : []),
    ...(t.missing ? [`${t.missing} not found`] : []),
  ];
  return `${parts.join(', ')}${dryRun ? ' (dry run: nothing published or removed)' : ''}\n`;
}

/** Below this many dead letters `retry --all` prints every one; at and above it, progress lines. */
export const PROGRESS_ABOVE = 25;

/** Whether to print a progress line after `done` of `total`: about ten lines per run, and the last. */
export function isProgressPoint(done: number, total: number): boolean {
  if (total < PROGRESS_ABOVE) return false;
  const step = Math.max(10, Math.ceil(total / 10));
  return done === total || done % step === 0;
}

export function formatProgress(
  done: number,
  total: number,
  results: readonly RetryResult[],
  dryRun: boolean,
): string {
  const t = tallyRetries(results);
  const pct = total === 0 ? 100 : Math.floor((Math.min(done, total) / total) * 100);
  const ok = dryRun ? `${t.wouldRedrive} would be re-driven` : `${t.redriven} re-driven`;
  return `… ${done}/${total} (${pct}%): ${ok}, ${t.refused} refused, ${t.failed} failed, ${t.missing} gone\n`;
}
