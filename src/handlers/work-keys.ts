// How a handler's keys become subjects and message ids. A key of the assign concern is a
// cluster-scoped object (`crdconfig/<name>`, `xrdconfig/<name>`, `webhookserver/<name>`); a
// handover key is a target name. Names are escaped into one subject token each (subjects.ts),
// and the partition is computed by the publisher (runtime/partition.ts), so every publisher of
// a key lands on the same partition consumer and the key is handled by one replica at a time.
import { partitionedSubject } from '../bus/runtime/index.ts';
import { escapeToken } from '../bus/subjects.ts';

/** A cluster-scoped object a concern reconciles, by its recorded kind (a view kind of api/resources.ts). */
export interface ObjectWorkKey {
  kind: string;
  name: string;
}

export function formatWorkKey(key: ObjectWorkKey): string {
  return `${key.kind}/${key.name}`;
}

/** The key of a work item's payload; undefined when it is not `<kind>/<name>`. */
export function parseWorkKey(text: string): ObjectWorkKey | undefined {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) return undefined;
  return { kind: text.slice(0, slash), name: text.slice(slash + 1) };
}

/** The log field each recorded kind's name goes in: the one a person greps for across concerns. */
const LOG_FIELD_OF_KIND: Readonly<Record<string, string>> = {
  crdconfig: 'config',
  xrdconfig: 'config',
  webhookserver: 'instance',
};

/** `{ config: <name> }` for `crdconfig/<name>`, `{ instance: <name> }` for `webhookserver/<name>`. */
export function objectKeyLogFields(text: string): Record<string, string> {
  const key = parseWorkKey(text);
  if (!key) return {};
  return { [LOG_FIELD_OF_KIND[key.kind] ?? key.kind]: key.name };
}

/** The object a work key names; throws on a key that names none (a key the concern never publishes). */
export function objectKeyOf(text: string): ObjectWorkKey {
  const key = parseWorkKey(text);
  if (!key) throw new Error(`not an object work key (<kind>/<name>): ${text}`);
  return key;
}

function tokensOf(key: ObjectWorkKey): string[] {
  return [key.kind, escapeToken(key.name)];
}

/** `work.<concern>.<partition>.<kind>.<name>`. */
export function objectWorkSubject(concern: string, key: ObjectWorkKey, partitions: number): string {
  return partitionedSubject(`work.${concern}`, tokensOf(key), partitions);
}

/** `fanout.<concern>.<kind>.<name>`: where the item waits for the pacer. */
export function objectFanoutSubject(concern: string, key: ObjectWorkKey): string {
  return `fanout.${concern}.${tokensOf(key).join('.')}`;
}

/**
 * The message id of work caused by one record: a redelivered record (or a second attempt
 * after a crash) publishes the same id, which the duplicate window stores once. A later
 * record of the same object is new work.
 */
export function workMsgId(concern: string, causeSeq: number, key: string): string {
  return `${concern}:${causeSeq}:${key}`;
}
