// How each stream's replicas stand, as the servers report them (StreamInfo.cluster): what the
// cluster cases print during a fault and require after it.
import type { JetStreamManager, StreamInfo } from '@nats-io/jetstream';

export interface StreamReplication {
  stream: string;
  /** The leader and its followers. */
  replicas: number;
  leader: string | undefined;
  /** A leader, and every follower current and online. */
  allCurrent: boolean;
  /** Followers behind or offline, with how many operations behind. */
  behind: { name: string; lag: number; offline: boolean }[];
}

export function replicationOfInfo(info: StreamInfo): StreamReplication {
  const followers = info.cluster?.replicas ?? [];
  const behind = followers
    .filter((r) => !r.current || r.offline)
    .map((r) => ({ name: r.name, lag: r.lag ?? 0, offline: r.offline === true }));
  const leader = info.cluster?.leader || undefined;
  return {
    stream: info.config.name,
    replicas: info.config.num_replicas,
    leader,
    allCurrent:
      leader !== undefined && followers.length === info.config.num_replicas - 1 && behind.length === 0,
    behind,
  };
}

export async function replicationOf(jsm: JetStreamManager): Promise<StreamReplication[]> {
  const out: StreamReplication[] = [];
  for await (const info of jsm.streams.list()) out.push(replicationOfInfo(info));
  return out.sort((a, b) => a.stream.localeCompare(b.stream));
}

export function describeReplication(streams: readonly StreamReplication[]): string {
  if (streams.length === 0) return 'streams unreadable';
  return streams
    .map((s) => {
      const lagging = s.behind.map((b) => `${b.name} ${b.offline ? 'offline' : `lag ${b.lag}`}`).join(', ');
      return `${s.stream} R${s.replicas} ${s.leader ?? 'no leader'}${lagging ? ` (${lagging})` : ''}`;
    })
    .join('; ');
}
