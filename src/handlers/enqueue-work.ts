// The one way work is published, by the router, a resync round or a handler waking another
// concern: the key's work subject, the work item, and a message id made of the concern, what
// caused it and the key. The id is the same whoever publishes the same work for the same record
// (the router and assign both wake the handover for a move), so the duplicate window stores it
// once; a record redelivered after a crash publishes nothing twice.
import type { JetStreamClient } from '@nats-io/jetstream';
import { encodeMessage } from '../bus/messages.ts';
import { publishPaced } from '../bus/pacer/index.ts';
import type { ConcernWork } from './concern.ts';
import { workMsgId } from './work-keys.ts';

export interface Enqueued {
  key: string;
  /** K8S sequence of the causing record (0: nothing recorded caused it). */
  causeSeq: number;
  /** What woke it besides the record itself, in the message id (`echo`, `trust`). */
  cause?: string;
  /** Through the concern's paced fan-out. */
  paced?: boolean;
  /** What the work item carries besides key and seq (a move's handover: config, from, to). */
  fields?: Record<string, unknown>;
}

/** How a message id of the concern's work begins: the concern, and what woke it besides a record (`assign-echo`). */
export function workIdPrefix(work: Pick<ConcernWork, 'concern'>, cause?: string): string {
  return cause === undefined ? work.concern : `${work.concern}-${cause}`;
}

/** Publishes one key's work; resolves once the stream stored it (or the pacer's fan-out did). */
export async function enqueueWork(
  js: Pick<JetStreamClient, 'publish'>,
  work: ConcernWork,
  partitions: number,
  item: Enqueued,
): Promise<void> {
  const payload = work.schema.parse({ ...item.fields, key: item.key, seq: item.causeSeq });
  const subject = work.workSubject(item.key, partitions);
  const msgId = workMsgId(workIdPrefix(work, item.cause), item.causeSeq, item.key);
  if (!item.paced) {
    await js.publish(subject, encodeMessage(work.schema, payload), { msgID: msgId });
    return;
  }
  if (!work.fanoutSubject) throw new Error(`${work.concern} has no paced fan-out, yet ${item.key} was paced`);
  await publishPaced(
    js,
    work.fanoutSubject(item.key),
    { subject, payload, msgId },
    { msgID: `fanout:${msgId}` },
  );
}
