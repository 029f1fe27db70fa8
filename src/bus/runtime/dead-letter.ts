/**
 * The dead-letter record. A message that cannot be processed is republished,
 * payload untouched, to a dead-letter subject (e.g. `dlq.<concern>`) with
 * headers that say why and where it came from, and only then acked on its
 * own consumer — so it never blocks the messages behind it, and the original
 * payload can be re-driven into the work subject once the cause is fixed.
 *
 * The record's `Nats-Msg-Id` is derived from the original stream and sequence:
 * two replicas that both dead-letter the same message (a crash between the
 * dead-letter publish and the ack) store one record within the dead-letter
 * stream's duplicate window.
 */
import type { JsMsg } from '@nats-io/jetstream';
import { type MsgHdrs, headers as natsHeaders } from '@nats-io/transport-node';
import { z } from 'zod';

export const DEAD_LETTER_HEADERS = {
  /** Why: `invalid` (failed validation), `permanent` (handler said so), `max-deliver` (retries exhausted). */
  kind: 'Switchyard-Dead-Letter-Kind',
  /** Human-readable reason: the validation issues or the last handler error. */
  reason: 'Switchyard-Dead-Letter-Reason',
  originalSubject: 'Switchyard-Original-Subject',
  originalStream: 'Switchyard-Original-Stream',
  originalSeq: 'Switchyard-Original-Seq',
  consumer: 'Switchyard-Original-Consumer',
  deliveryCount: 'Switchyard-Delivery-Count',
  /** ISO timestamp at which the message was dead-lettered. */
  at: 'Switchyard-Dead-Lettered-At',
} as const;

export const deadLetterKindSchema = z.enum(['invalid', 'permanent', 'max-deliver']);
export type DeadLetterKind = z.infer<typeof deadLetterKindSchema>;

export const deadLetterRecordSchema = z.object({
  kind: deadLetterKindSchema,
  reason: z.string(),
  originalSubject: z.string().min(1),
  originalStream: z.string().min(1),
  originalSeq: z.number().int().positive(),
  consumer: z.string().min(1),
  deliveryCount: z.number().int().positive(),
  at: z.string(),
});
export type DeadLetterRecord = z.infer<typeof deadLetterRecordSchema>;

/** Header values are one line; long validation reports are cut so the record stays small. */
const MAX_REASON_CHARS = 1_000;

export function deadLetterMsgId(stream: string, seq: number): string {
  return `dlq:${stream}:${seq}`;
}

export function deadLetterHeaders(record: DeadLetterRecord): MsgHdrs {
  const h = natsHeaders();
  const reason = record.reason.replace(/[\r\n]+/g, ' ').slice(0, MAX_REASON_CHARS);
  h.set(DEAD_LETTER_HEADERS.kind, record.kind);
  h.set(DEAD_LETTER_HEADERS.reason, reason);
  h.set(DEAD_LETTER_HEADERS.originalSubject, record.originalSubject);
  h.set(DEAD_LETTER_HEADERS.originalStream, record.originalStream);
  h.set(DEAD_LETTER_HEADERS.originalSeq, String(record.originalSeq));
  h.set(DEAD_LETTER_HEADERS.consumer, record.consumer);
  h.set(DEAD_LETTER_HEADERS.deliveryCount, String(record.deliveryCount));
  h.set(DEAD_LETTER_HEADERS.at, record.at);
  return h;
}

/** Reads a dead-letter record back from a message's headers (throws when it is not one). */
export function readDeadLetter(msg: { headers?: MsgHdrs | undefined }): DeadLetterRecord {
  const h = msg.headers;
  if (!h) throw new Error('not a dead-letter record: no headers');
  return deadLetterRecordSchema.parse({
    kind: h.get(DEAD_LETTER_HEADERS.kind),
    reason: h.get(DEAD_LETTER_HEADERS.reason),
    originalSubject: h.get(DEAD_LETTER_HEADERS.originalSubject),
    originalStream: h.get(DEAD_LETTER_HEADERS.originalStream),
    originalSeq: Number(h.get(DEAD_LETTER_HEADERS.originalSeq)),
    consumer: h.get(DEAD_LETTER_HEADERS.consumer),
    deliveryCount: Number(h.get(DEAD_LETTER_HEADERS.deliveryCount)),
    at: h.get(DEAD_LETTER_HEADERS.at),
  });
}

export function deadLetterRecordFor(
  m: JsMsg,
  kind: DeadLetterKind,
  reason: string,
  now: Date,
): DeadLetterRecord {
  return {
    kind,
    reason,
    originalSubject: m.subject,
    originalStream: m.info.stream,
    originalSeq: m.info.streamSequence,
    consumer: m.info.consumer,
    deliveryCount: m.info.deliveryCount,
    at: now.toISOString(),
  };
}
