/**
 * Which of two recorded states of one object is newer: the rule that keeps a
 * lagging watcher replica from storing an old state over a newer one (or from
 * resurrecting a deleted object) long after the duplicate window has passed.
 *
 * Kubernetes calls resourceVersion opaque, but every apiserver backed by etcd
 * hands out the etcd revision, a number that grows across all objects; the
 * comparison relies on that, as client-go's watch cache does. A version that is
 * not a decimal number cannot be ordered, and is then accepted as newer (the
 * duplicate window still catches an exact repeat).
 */

export interface RecordSummary {
  op: 'upsert' | 'delete';
  uid: string;
  resourceVersion: string;
}

const DECIMAL = /^\d+$/;

/** -1, 0 or 1 as `a` is older, the same, or newer than `b`; undefined when they cannot be ordered. */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (!DECIMAL.test(a) || !DECIMAL.test(b)) return a === b ? 0 : undefined;
  const [x, y] = [BigInt(a), BigInt(b)];
  return x === y ? 0 : x > y ? 1 : -1;
}

export function sameRecord(a: RecordSummary, b: RecordSummary): boolean {
  return a.op === b.op && a.uid === b.uid && a.resourceVersion === b.resourceVersion;
}

/** Whether `candidate` may be stored over `stored` (the latest record of the same object subject). */
export function supersedes(candidate: RecordSummary, stored: RecordSummary | undefined): boolean {
  if (!stored) return true;
  if (candidate.uid === stored.uid) {
    // A deletion is final for a uid: nothing of that uid comes after it.
    if (stored.op === 'delete') return false;
    if (candidate.op === 'delete') return true;
  }
  const order = compareResourceVersions(candidate.resourceVersion, stored.resourceVersion);
  return order === undefined ? !sameRecord(candidate, stored) : order > 0;
}
