import type { JetStreamManager } from '@nats-io/jetstream';

/**
 * The numbers an operator reads off the bus, per stream and per consumer.
 * Backlog is a consumer's `pending` (undelivered messages matching its
 * filter), never `last_seq - delivered` (wrong for filtered consumers); a
 * consumer is saturated when `ackPending` reaches its `max_ack_pending`, and
 * stuck when `pending` > 0 while `lastActive` grows old.
 */
export interface ConsumerStats {
  name: string;
  filter: string;
  pending: number;
  ackPending: number;
  maxAckPending: number;
  redelivered: number;
  waiting: number;
  lastActive: string | undefined;
}

export interface StreamStats {
  name: string;
  messages: number;
  bytes: number;
  firstSeq: number;
  lastSeq: number;
  subjects: number;
  consumers: ConsumerStats[];
}

export async function busStats(jsm: JetStreamManager): Promise<StreamStats[]> {
  const out: StreamStats[] = [];
  for await (const s of jsm.streams.list()) {
    const consumers: ConsumerStats[] = [];
    for await (const c of jsm.consumers.list(s.config.name)) {
      consumers.push({
        name: c.name,
        filter: c.config.filter_subject ?? '',
        pending: c.num_pending,
        ackPending: c.num_ack_pending,
        maxAckPending: c.config.max_ack_pending ?? -1,
        redelivered: c.num_redelivered,
        waiting: c.num_waiting,
        lastActive: c.ack_floor.last_active ? String(c.ack_floor.last_active) : undefined,
      });
    }
    out.push({
      name: s.config.name,
      messages: s.state.messages,
      bytes: s.state.bytes,
      firstSeq: s.state.first_seq,
      lastSeq: s.state.last_seq,
      subjects: s.state.num_subjects ?? 0,
      consumers: consumers.sort((a, b) => a.name.localeCompare(b.name)),
    });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** A plain-text table of `busStats`, as `switchyard bus stats` prints it. */
export function formatBusStats(stats: readonly StreamStats[]): string {
  const lines = ['STREAM/CONSUMER                 MESSAGES  PENDING  ACK-PENDING  REDELIVERED  LAST-SEQ'];
  for (const s of stats) {
    lines.push(
      `${s.name.padEnd(30)} ${String(s.messages).padStart(9)} ${''.padStart(8)} ${''.padStart(12)} ${''.padStart(12)}  ${s.lastSeq}`,
    );
    for (const c of s.consumers) {
      const ack = `${c.ackPending}/${c.maxAckPending < 0 ? '∞' : c.maxAckPending}`;
      lines.push(
        `  ${c.name.padEnd(28)} ${''.padStart(9)} ${String(c.pending).padStart(8)} ${ack.padStart(12)} ${String(c.redelivered).padStart(12)}`,
      );
    }
  }
  return lines.join('\n');
}
