// How each stream's replicas stand, read as `switchyard bus stats` reads them (src/bus/stats.ts):
// what the cluster cases print during a fault and require after it.
import type { JetStreamManager } from '@nats-io/jetstream';
import { busStats, replicaState, type StreamStats } from '../../../src/bus/stats.ts';

export const replicationOf = (jsm: JetStreamManager): Promise<StreamStats[]> => busStats(jsm);

/** A leader, and every configured replica in sync with it. */
export function fullyReplicated(s: StreamStats): boolean {
  return s.replication.leader !== undefined && s.replication.inSync === s.replication.replicas;
}

/** One line: each stream's replicas in sync, its leader, and every copy that is not current with its lag. */
export function describeReplication(streams: readonly StreamStats[]): string {
  if (streams.length === 0) return 'streams unreadable';
  return streams
    .map(({ name, replication: r }) => {
      const behind = r.members
        .filter((m) => !m.leader && (!m.current || m.offline))
        .map((m) => `${m.name} ${replicaState(m)}, lag ${m.lag}`);
      const lagging = behind.length > 0 ? ` (${behind.join('; ')})` : '';
      return `${name} ${r.inSync}/${r.replicas} ${r.leader ?? 'no leader'}${lagging}`;
    })
    .join(' | ');
}
