// Target lists in a ConversionWebhookServer's status, bounded. At tens of thousands of targets
// a full list would exceed the apiserver's object size and make every status write huge, so
// up to STATUS_LIST_MAX names the list is published in full; above it only the count and a
// digest, which still tell an operator (and a test) whether two lists are the same. The full
// answer for one target is `explain`'s job.
import { createHash } from 'node:crypto';
import { STATUS_LIST_MAX } from '../api/webhook-server.ts';
import { compareNames } from './name-list.ts';

export interface TargetListStatus {
  /** Sorted names; undefined above STATUS_LIST_MAX. */
  targets: string[] | undefined;
  count: number;
  /** `sha256:<hex>` of the sorted names, each followed by "\n": `LC_ALL=C sort | sha256sum`. */
  digest: string;
}

export function targetListStatus(names: Iterable<string>): TargetListStatus {
  const sorted = [...new Set(names)].sort(compareNames);
  const hash = createHash('sha256');
  for (const name of sorted) hash.update(`${name}\n`);
  return {
    targets: sorted.length <= STATUS_LIST_MAX ? sorted : undefined,
    count: sorted.length,
    digest: `sha256:${hash.digest('hex')}`,
  };
}
