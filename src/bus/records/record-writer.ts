import type { JetStreamClient, JetStreamManager, StoredMsg } from '@nats-io/jetstream';
import { systemClock } from '../../runtime/clock.ts';
import { isDuplicateInProcess, isWrongLastSequence } from '../errors.ts';
import {
  decodeObjectEvent,
  encodeMessage,
  type ObjectEvent,
  objectEventId,
  objectEventSchema,
} from '../messages.ts';
import { STREAMS } from '../topology.ts';
import { type RecordSummary, sameRecord, supersedes } from './supersedes.ts';

/**
 * What the writer knows of the latest record of one object subject: its
 * sequence in K8S (0 when K8S holds none: never written, or aged out of the
 * history while K8S_LATEST still keeps it) and what it says.
 */
export interface StoredRecord {
  seq: number;
  summary: RecordSummary | undefined;
}

/** The expectation of a writer that knows a subject has no record (it loaded every record of the kind). */
export const NOTHING_STORED: StoredRecord = { seq: 0, summary: undefined };

export type WriteOutcome = 'stored' | 'duplicate' | 'stale';

export interface WriteResult {
  outcome: WriteOutcome;
  /** The latest record of the subject after the write: the caller's next expectation. */
  stored: StoredRecord;
  /** Set when the object was recorded without its content (it did not fit the bus). */
  omittedBytes?: number;
}

/** Room for the headers (message id, expectation, TTL) next to the payload. */
const HEADER_ALLOWANCE_BYTES = 1024;
/** Lost races in a row before giving up: each means another writer stored in between. */
const MAX_RACES = 8;
/** A pause before asking again while another writer's copy of the same record is being stored. */
const IN_PROCESS_PAUSE_MS = 50;

export function summarize(event: ObjectEvent): RecordSummary {
  return {
    op: event.op,
    uid: event.object.metadata.uid,
    resourceVersion: event.object.metadata.resourceVersion,
  };
}

/**
 * The object reduced to what identifies it, for a record whose content does not
 * fit the bus. A tombstone needs no content; an upsert says what was left out.
 */
function withoutContent(event: ObjectEvent, bytes: number): ObjectEvent {
  const { apiVersion, kind, metadata } = event.object;
  const { annotations: _a, ...identity } = metadata as typeof metadata & { annotations?: unknown };
  const object = { apiVersion, kind, metadata: identity };
  return event.op === 'delete'
    ? { ...event, object }
    : { ...event, object, omitted: { reason: 'too-large', bytes } };
}

/**
 * Writes object records to K8S so that a subject's latest record is never older
 * than one already stored, whatever the duplicate window (`supersedes.ts`).
 *
 * Each publish carries `Nats-Expected-Last-Subject-Sequence`: the server stores
 * it only if the subject's last record is the one the writer compared against.
 * A writer that lost a race (10071) reads the record that won and decides
 * again; so does one whose twin publish (the same message id, from another
 * watcher) is still being stored on a cluster (10158), after a pause. Tombstones carry a TTL, so K8S_LATEST drops them after the retention
 * period. An object whose record does not fit the server's max_payload even
 * compressed is recorded without its content (`omitted`), never dropped.
 */
export class RecordWriter {
  private readonly js: JetStreamClient;
  private readonly jsm: JetStreamManager;
  private readonly maxPayload: number;
  private readonly tombstoneTtl: string;

  constructor(opts: {
    js: JetStreamClient;
    jsm: JetStreamManager;
    maxPayload: number;
    tombstoneTtl: string;
  }) {
    this.js = opts.js;
    this.jsm = opts.jsm;
    this.maxPayload = opts.maxPayload;
    this.tombstoneTtl = opts.tombstoneTtl;
  }

  /**
   * Writes `event` on `subject` unless the stored record is as new or newer.
   * `known` is the caller's last knowledge of the subject (a guess: a wrong one
   * costs one extra read).
   */
  async write(subject: string, event: ObjectEvent, known?: StoredRecord): Promise<WriteResult> {
    const candidate = summarize(event);
    const { payload, omittedBytes } = this.encode(event);
    let current = known;
    for (let race = 0; race < MAX_RACES; race++) {
      current ??= await this.readStored(subject);
      if (current.summary && !supersedes(candidate, current.summary)) {
        return { outcome: sameRecord(candidate, current.summary) ? 'duplicate' : 'stale', stored: current };
      }
      try {
        const ack = await this.js.publish(subject, payload, {
          msgID: objectEventId(event),
          expect: { lastSubjectSequence: current.seq },
          ...(event.op === 'delete' ? { ttl: this.tombstoneTtl } : {}),
        });
        // A clustered leader can ack a duplicate without the sequence it was stored at (0): the
        // record is there, and reading it gives the caller its next expectation.
        if (ack.duplicate && ack.seq === 0) {
          current = undefined;
          continue;
        }
        const stored = { seq: ack.seq, summary: candidate };
        return {
          outcome: ack.duplicate ? 'duplicate' : 'stored',
          stored,
          ...(omittedBytes ? { omittedBytes } : {}),
        };
      } catch (err) {
        // On a cluster, another watcher's publish of this very record may still be in the
        // leader's proposal: once stored, reading it again finds this record already there.
        if (isDuplicateInProcess(err)) await systemClock.sleep(IN_PROCESS_PAUSE_MS * (race + 1));
        else if (!isWrongLastSequence(err)) throw err;
        current = undefined;
      }
    }
    throw new Error(`recording ${subject}: lost ${MAX_RACES} races in a row to other writers`);
  }

  /** The latest record of a subject: in K8S if the history still has it, else in K8S_LATEST (with seq 0). */
  async readStored(subject: string): Promise<StoredRecord> {
    // The stream's own get, not a direct get: K8S_LATEST mirrors K8S with allow_direct, so it
    // also answers direct gets addressed to K8S, and may answer with a record that K8S has aged
    // out (its sequence is then no expectation K8S accepts) or one behind K8S while it catches up.
    const inHistory = await this.jsm.streams.getMessage(STREAMS.records, { last_by_subj: subject });
    if (inHistory) return { seq: inHistory.seq, summary: summaryOf(inHistory) };
    const inLatest = await this.jsm.direct.getMessage(STREAMS.latest, { last_by_subj: subject });
    return { seq: 0, summary: inLatest ? summaryOf(inLatest) : undefined };
  }

  private encode(event: ObjectEvent): { payload: Uint8Array; omittedBytes?: number } {
    const payload = encodeMessage(objectEventSchema, event);
    if (payload.byteLength + HEADER_ALLOWANCE_BYTES <= this.maxPayload) return { payload };
    return {
      payload: encodeMessage(objectEventSchema, withoutContent(event, payload.byteLength)),
      omittedBytes: payload.byteLength,
    };
  }
}

/** A stored record that cannot be read is treated as absent: any valid record may replace it. */
function summaryOf(m: StoredMsg): RecordSummary | undefined {
  const decoded = decodeObjectEvent(m.data);
  return decoded.ok ? summarize(decoded.value) : undefined;
}
