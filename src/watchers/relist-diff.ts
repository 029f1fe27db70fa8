/**
 * What a relist must record: the listed objects the bus does not have at that
 * version, and a tombstone for every object the bus holds that the list no
 * longer has (deleted while no watch was running), including an object that
 * was deleted and recreated under the same name (a new uid). Pure.
 */

export interface Identity {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
}

export interface RelistDiff<T> {
  /** Recorded objects to tombstone first (gone, or replaced by a new uid). */
  gone: Identity[];
  /** Listed objects to record. */
  changed: T[];
}

export function keyOfIdentity(o: { name: string; namespace?: string | undefined }): string {
  return `${o.namespace ?? ''}/${o.name}`;
}

export function relistDiff<
  T extends { metadata: { name: string; namespace?: string; uid: string; resourceVersion: string } },
>(known: ReadonlyMap<string, Identity>, listed: readonly T[]): RelistDiff<T> {
  const gone: Identity[] = [];
  const changed: T[] = [];
  const seen = new Set<string>();
  for (const item of listed) {
    const key = keyOfIdentity(item.metadata);
    seen.add(key);
    const recorded = known.get(key);
    if (recorded?.uid === item.metadata.uid && recorded.resourceVersion === item.metadata.resourceVersion)
      continue;
    if (recorded && recorded.uid !== item.metadata.uid) gone.push(recorded);
    changed.push(item);
  }
  for (const [key, recorded] of known) if (!seen.has(key)) gone.push(recorded);
  return { gone, changed };
}
