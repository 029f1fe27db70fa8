/**
 * Key → partition, the same way the NATS server's `{{partition(n, tokens…)}}`
 * subject mapping does it (nats-server 2.9.10 `accounts.go` getHashPartition):
 * FNV-1a-32 over the UTF-8 bytes of the concatenated key tokens, modulo n.
 * Computing it in the publisher keeps the partitioning in code (no server
 * config), and an operator who later moves it into a server mapping gets the
 * same partitions. The test vectors in `partition.test.ts` were recorded from
 * real 2.9.10 and 2.15.2 servers with such a mapping (the same on both).
 */

const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const encoder = new TextEncoder();

export function fnv1a32(input: string): number {
  let hash = FNV_OFFSET_BASIS;
  for (const byte of encoder.encode(input)) {
    hash ^= byte;
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return hash >>> 0;
}

/** The partition of a key: tokens are concatenated without a separator, as the server does. */
export function partitionOf(keyTokens: string | readonly string[], partitions: number): number {
  if (!Number.isInteger(partitions) || partitions < 1) {
    throw new Error(`partition count must be a positive integer, got ${partitions}`);
  }
  const key = typeof keyTokens === 'string' ? keyTokens : keyTokens.join('');
  return fnv1a32(key) % partitions;
}

/**
 * `<prefix>.<partition>.<key tokens…>`. Tokens must already be valid subject
 * tokens (escaped by the caller: Kubernetes names contain `.`).
 */
export function partitionedSubject(prefix: string, keyTokens: readonly string[], partitions: number): string {
  if (keyTokens.length === 0) throw new Error('a partitioned subject needs at least one key token');
  for (const t of keyTokens) {
    if (t === '' || /[\s.*>]/.test(t)) throw new Error(`'${t}' is not a valid subject token`);
  }
  return `${prefix}.${partitionOf(keyTokens, partitions)}.${keyTokens.join('.')}`;
}

/** The filter subject of partition `p`'s consumer. */
export function partitionFilter(prefix: string, partition: number): string {
  return `${prefix}.${partition}.>`;
}

/** The durable name of partition `p`'s consumer: `<durable>-p<p>`. */
export function partitionConsumerName(durable: string, partition: number): string {
  return `${durable}-p${partition}`;
}

/**
 * The key of a message on a partitioned subject: the tokens after
 * `<prefix>.<partition>.`, joined with `.` (undefined when the subject does not
 * have that shape).
 */
export function keyOfPartitionedSubject(prefix: string, subject: string): string | undefined {
  if (!subject.startsWith(`${prefix}.`)) return undefined;
  const rest = subject.slice(prefix.length + 1).split('.');
  if (rest.length < 2 || !/^\d+$/.test(rest[0] ?? '')) return undefined;
  return rest.slice(1).join('.');
}
