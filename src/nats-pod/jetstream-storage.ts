// How full the NATS server's JetStream stores are, as its monitoring's `/jsz` (server level, no
// account details) says: bytes used and the server's limit for the file store (`storage`,
// `config.max_storage`) and the memory store (`memory`, `config.max_memory`). The limit is the
// server's own (nats.conf `max_file_store`, `max_memory_store`, or what the server derived from
// the disk); an account's JetStream limits are not in it, and the bus's account has none.
// Pure: the gate's /metrics (monitor-gate.ts) serves what this returns.
import { z } from 'zod';

const jszStorageSchema = z.object({
  memory: z.number().nonnegative(),
  storage: z.number().nonnegative(),
  config: z.object({
    max_memory: z.number(),
    max_storage: z.number(),
  }),
});

export type JetStreamStore = 'file' | 'memory';

export interface StoreUsage {
  store: JetStreamStore;
  usedBytes: number;
  /** Absent when the server states no positive limit. */
  limitBytes?: number;
}

export type StorageReading = { ok: true; stores: StoreUsage[] } | { ok: false; reason: string };

function usage(store: JetStreamStore, usedBytes: number, limit: number): StoreUsage {
  return limit > 0 ? { store, usedBytes, limitBytes: limit } : { store, usedBytes };
}

/** What `/jsz` says of the two stores; a server without JetStream, or an answer of another shape, says why not. */
export function jetstreamStorageOf(jsz: unknown): StorageReading {
  if (typeof jsz === 'object' && jsz !== null && (jsz as { disabled?: unknown }).disabled === true)
    return { ok: false, reason: 'JetStream is not enabled on this server' };
  const parsed = jszStorageSchema.safeParse(jsz);
  if (!parsed.success)
    return { ok: false, reason: `/jsz has no storage figures: ${z.prettifyError(parsed.error)}` };
  const { memory, storage, config } = parsed.data;
  return {
    ok: true,
    stores: [usage('file', storage, config.max_storage), usage('memory', memory, config.max_memory)],
  };
}
