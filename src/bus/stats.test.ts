import { describe, expect, it } from 'vitest';
import { NATS_IDENTITIES, natsPermissions } from '../access/nats-permissions.ts';
import { handlerConcernPlans, parseStatsArgs } from '../cli/bus.ts';
import { defaultConfig } from '../config/schema.ts';
import type { HandlerConsumerSpec } from './runtime/consumers.ts';
import {
  ago,
  busReport,
  type ConcernPlan,
  type ConsumerStats,
  formatBusStats,
  groupByConcern,
  humanBytes,
  type StreamReplication,
  type StreamStats,
  streamPurpose,
  streamReplication,
} from './stats.ts';
import { STREAMS } from './topology.ts';

const partitioned = (durable: string, partitions: number): HandlerConsumerSpec => ({
  mode: 'partitioned',
  stream: STREAMS.work,
  durable,
  prefix: `work.${durable}`,
  partitions,
  ackWaitMs: 30_000,
  maxDeliver: 10,
});

const PLANS: ConcernPlan[] = [
  {
    concern: 'router',
    consumers: {
      mode: 'shared',
      stream: STREAMS.records,
      durable: 'router',
      filterSubject: 'k8s.>',
      ackWaitMs: 30_000,
      maxDeliver: 10,
    },
  },
  { concern: 'assign', consumers: partitioned('assign', 4) },
  {
    concern: 'assign-fanout',
    consumers: {
      mode: 'shared',
      stream: STREAMS.fanout,
      durable: 'assign-pacer',
      filterSubject: 'fanout.assign.>',
      ackWaitMs: 30_000,
      maxDeliver: 10,
    },
  },
  { concern: 'handover', consumers: partitioned('handover', 2) },
];

function consumer(name: string, over: Partial<ConsumerStats> = {}): ConsumerStats {
  return {
    name,
    filter: '',
    pending: 0,
    ackPending: 0,
    maxAckPending: 1,
    redelivered: 0,
    waiting: 0,
    lastActive: undefined,
    durable: true,
    ...over,
  };
}

/** One replica on one server, as the local stack's single nats-server reports every stream. */
const SINGLE: StreamReplication = {
  replicas: 1,
  leader: 'nats',
  inSync: 1,
  members: [
    { name: 'nats', leader: true, current: true, offline: false, lag: 0, lastActiveMsAgo: undefined },
  ],
};

function stream(name: string, over: Partial<StreamStats> = {}): StreamStats {
  return {
    name,
    purpose: streamPurpose(name),
    messages: 0,
    bytes: 0,
    firstSeq: 0,
    lastSeq: 0,
    firstTime: undefined,
    lastTime: undefined,
    subjects: 0,
    subjectCounts: {},
    replication: SINGLE,
    consumers: [],
    ...over,
  };
}

const STREAMS_SEEN: StreamStats[] = [
  stream(STREAMS.records, {
    messages: 120,
    bytes: 48_300,
    firstSeq: 1,
    lastSeq: 120,
    firstTime: '2026-03-01T10:00:00.123456789Z',
    consumers: [
      consumer('router', {
        pending: 5,
        ackPending: 3,
        maxAckPending: 1000,
        lastActive: '2026-03-01T10:59:50Z',
      }),
    ],
  }),
  stream(STREAMS.latest, {
    consumers: [
      consumer('view1', { durable: false, pending: 2, maxAckPending: -1 }),
      consumer('view2', { durable: false, maxAckPending: -1 }),
    ],
  }),
  stream(STREAMS.heartbeats, { consumers: [consumer('view1-hb', { durable: false, maxAckPending: -1 })] }),
  stream(STREAMS.work, {
    messages: 9,
    subjectCounts: { 'recheck.assign.1.x': 1, 'recheck.assign.2.y': 1, 'recheck.other.0.z': 1 },
    consumers: [
      consumer('assign-p0', {
        pending: 2,
        ackPending: 1,
        redelivered: 1,
        lastActive: '2026-03-01T10:58:00Z',
      }),
      consumer('assign-p1', { pending: 1, lastActive: '2026-03-01T10:59:00Z' }),
      consumer('assign-p2'),
      // A partition beyond the plan: the count was lowered; still assign's.
      consumer('assign-p7', { pending: 1 }),
      consumer('handover-p0', { ackPending: 1, redelivered: 2 }),
      consumer('handover-p1'),
      // No plan names it: a concern removed, or a test's.
      consumer('old-p0', { pending: 4 }),
      consumer('old-p1'),
    ],
  }),
  stream(STREAMS.fanout, { consumers: [consumer('assign-pacer', { pending: 7, maxAckPending: 1000 })] }),
  stream(STREAMS.deadLetters, {
    messages: 7,
    subjectCounts: { 'dlq.assign': 2, 'dlq.assign-fanout': 1, 'dlq.pacer': 4 },
  }),
  stream(STREAMS.decisions, { messages: 3 }),
];

describe('groupByConcern', () => {
  const concerns = groupByConcern(STREAMS_SEEN, PLANS);
  const of = (name: string) => concerns.find((c) => c.concern === name);

  it('puts each consumer under the concern whose plan names it, planned concerns first, in order', () => {
    expect(concerns.map((c) => [c.concern, c.kind, c.stream])).toEqual([
      ['router', 'handler', 'K8S'],
      ['assign', 'handler', 'WORK'],
      ['assign-fanout', 'handler', 'FANOUT'],
      ['handover', 'handler', 'WORK'],
      ['old', 'unplanned', 'WORK'],
      ['pacer', 'unplanned', undefined],
      ['readers', 'readers', 'K8S_LATEST'],
      ['readers', 'readers', 'HEARTBEATS'],
    ]);
    expect(of('assign')?.members.map((m) => m.name)).toEqual([
      'assign-p0',
      'assign-p1',
      'assign-p2',
      'assign-p7',
    ]);
    expect(of('assign-fanout')?.members.map((m) => m.name)).toEqual(['assign-pacer']);
  });

  it('sums backlog, in flight against its cap, retries; counts consumers against the plan', () => {
    expect(of('assign')).toMatchObject({
      consumers: 4,
      planned: 4,
      missing: ['assign-p3'],
      pending: 4,
      ackPending: 1,
      maxAckPending: 4,
      redelivered: 1,
      lastAck: '2026-03-01T10:59:00Z',
    });
    expect(of('handover')).toMatchObject({
      consumers: 2,
      planned: 2,
      missing: [],
      ackPending: 1,
      redelivered: 2,
    });
    expect(of('router')).toMatchObject({ pending: 5, ackPending: 3, maxAckPending: 1000 });
    expect(of('old')).toMatchObject({ consumers: 2, planned: 0, pending: 4 });
    expect(of('readers')).toMatchObject({ consumers: 2, pending: 2, maxAckPending: null });
  });

  it('takes dead letters from dlq.<concern> and re-checks from recheck.<concern>.… counts', () => {
    expect(concerns.map((c) => [c.concern, c.deadLetters, c.rechecks])).toEqual([
      ['router', 0, 0],
      ['assign', 2, 2],
      ['assign-fanout', 1, 0],
      ['handover', 0, 0],
      ['old', 0, 0],
      ['pacer', 4, 0],
      ['readers', 0, 0],
      ['readers', 0, 0],
    ]);
  });

  it('shows a planned concern with no consumer yet as all missing', () => {
    const [handover] = groupByConcern([stream(STREAMS.work)], [PLANS[3] as ConcernPlan]);
    expect(handover).toMatchObject({ consumers: 0, planned: 2, missing: ['handover-p0', 'handover-p1'] });
  });
});

describe('formatBusStats', () => {
  const now = Date.parse('2026-03-01T11:00:00Z');
  const report = busReport(
    STREAMS_SEEN.filter((s) => s.name !== STREAMS.heartbeats),
    PLANS,
  );
  const text = formatBusStats(report, now);
  const lines = text.split('\n');
  const row = (first: string) => lines.find((l) => l.startsWith(`${first} `))?.split(/\s{2,}/);

  it('gives each stream its purpose, size in words and sequence range', () => {
    expect(lines[0]?.split(/\s{2,}/)).toEqual([
      'STREAM',
      'PURPOSE',
      'MESSAGES',
      'BYTES',
      'FIRST SEQ',
      'LAST SEQ',
      'FIRST MESSAGE',
      'REPLICAS',
      'IN SYNC',
      'LEADER',
    ]);
    expect(row('K8S')).toEqual([
      'K8S',
      'records',
      '120',
      '47 KiB',
      '1',
      '120',
      '2026-03-01T10:00:00Z',
      '1',
      '1',
      'nats',
    ]);
    expect(row('DLQ')).toEqual(['DLQ', 'dead letters', '7', '0 B', '0', '0', '-', '1', '1', 'nats']);
    expect(row('K8S_LATEST')?.[1]).toBe('latest state');
  });

  it('gives each concern its backlog, in flight of max, retries, dead letters, re-checks and last ack', () => {
    expect(row('assign')).toEqual(['assign', 'WORK', '4', '4', '1/4', '1', '2', '2', '60s ago']);
    expect(row('router')).toEqual(['router', 'K8S', '1', '5', '3/1000', '0', '0', '0', '10s ago']);
    expect(row('handover')).toEqual(['handover', 'WORK', '2', '0', '1/2', '2', '0', '0', 'never']);
    expect(row('pacer')).toEqual(['pacer (unplanned)', '-', '0', '0', '0/0', '0', '4', '0', '-']);
    expect(row('readers')).toEqual(['readers', 'K8S_LATEST', '2', '2', '-', '0', '0', '0', '-']);
  });

  it('lists no replica of a single server and notes nothing about them', () => {
    expect(lines.filter((l) => l.startsWith('STREAM '))).toHaveLength(1);
    expect(text).not.toMatch(/in sync|no leader/);
  });

  it('names a missing stream and a concern’s missing consumers', () => {
    expect(report.missingStreams).toEqual(['HEARTBEATS']);
    expect(text).toContain('stream HEARTBEATS is missing');
    expect(text).toContain('assign: consumers missing: assign-p3');
  });

  it('shows consumers present of planned when some are missing', () => {
    const partial = groupByConcern(
      [stream(STREAMS.work, { consumers: [consumer('handover-p1')] })],
      [PLANS[3] as ConcernPlan],
    );
    const out = formatBusStats({ streams: [], concerns: partial, missingStreams: [] }, now);
    expect(
      out
        .split('\n')
        .find((l) => l.startsWith('handover'))
        ?.split(/\s{2,}/)[2],
    ).toBe('1/2');
  });
});

describe('replicas', () => {
  const now = Date.parse('2026-03-01T11:00:00Z');
  const info = (cluster: Parameters<typeof streamReplication>[0]['cluster'], replicas = 3) =>
    streamReplication({ config: { num_replicas: replicas } as never, cluster });

  it('takes the leader and each follower’s state, lag and last contact from the stream’s cluster info', () => {
    const r = info({
      name: 'switchyard-local',
      leader: 'nats-1',
      replicas: [
        { name: 'nats-2', current: false, offline: true, active: 45_000_000_000, lag: 120 },
        { name: 'nats-0', current: true, offline: false, active: 250_000_000, lag: 0 },
      ],
    });
    expect(r).toEqual({
      replicas: 3,
      leader: 'nats-1',
      inSync: 2,
      members: [
        { name: 'nats-1', leader: true, current: true, offline: false, lag: 0, lastActiveMsAgo: undefined },
        { name: 'nats-0', leader: false, current: true, offline: false, lag: 0, lastActiveMsAgo: 250 },
        { name: 'nats-2', leader: false, current: false, offline: true, lag: 120, lastActiveMsAgo: 45_000 },
      ],
    });
  });

  it('counts a follower the server left out (omitted fields: not current, no lag) and none in sync without a leader', () => {
    const catching = info({ leader: 'nats-0', replicas: [{ name: 'nats-1', active: 1e9 } as never] });
    expect(catching.inSync).toBe(1);
    expect(catching.members[1]).toMatchObject({ current: false, offline: false, lag: 0 });
    expect(
      info({ replicas: [{ name: 'nats-1', current: true, active: 0, lag: 0, offline: false }] }),
    ).toMatchObject({ leader: undefined, inSync: 0 });
    expect(info(undefined, 1)).toEqual({ replicas: 1, leader: undefined, inSync: 0, members: [] });
  });

  it('prints each copy of a replicated stream, and notes a stream short of in-sync replicas or without a leader', () => {
    const degraded = info({
      leader: 'nats-1',
      replicas: [
        { name: 'nats-0', current: true, offline: false, active: 250_000_000, lag: 0 },
        { name: 'nats-2', current: false, offline: true, active: 45_000_000_000, lag: 120 },
      ],
    });
    const leaderless = info({
      replicas: [{ name: 'nats-0', current: false, offline: false, active: 3e9, lag: 7 }],
    });
    const text = formatBusStats(
      busReport(
        [
          stream(STREAMS.records, { replication: degraded }),
          stream(STREAMS.work, { replication: leaderless }),
        ],
        [],
      ),
      now,
    );
    const lines = text.split('\n');
    const cells = (l: string) => l.split(/\s{2,}/);
    expect(cells(lines.find((l) => l.startsWith('K8S ')) ?? '').slice(7)).toEqual(['3', '2', 'nats-1']);
    expect(cells(lines.find((l) => l.startsWith('WORK ')) ?? '').slice(7)).toEqual(['3', '0', 'none']);
    const section = lines.slice(lines.findIndex((l) => l.includes('REPLICA ')));
    expect(section.slice(0, 5).map(cells)).toEqual([
      ['STREAM', 'REPLICA', 'STATE', 'LAG', 'LAST ACTIVE'],
      ['K8S', 'nats-1', 'leader', '-', '-'],
      ['K8S', 'nats-0', 'current', '0', '0s ago'],
      ['K8S', 'nats-2', 'offline', '120', '45s ago'],
      ['WORK', 'nats-0', 'catching up', '7', '3s ago'],
    ]);
    expect(text).toContain('stream K8S: 2 of 3 replicas in sync');
    expect(text).toContain('stream WORK: no leader (it takes no writes until its replicas elect one)');
  });

  it('gives -o json each stream’s replicas', () => {
    const json = JSON.parse(JSON.stringify(busReport([stream(STREAMS.records)], [])));
    expect(json.streams[0].replication).toEqual({
      replicas: 1,
      leader: 'nats',
      inSync: 1,
      members: [{ name: 'nats', leader: true, current: true, offline: false, lag: 0 }],
    });
  });
});

describe('units', () => {
  it('bytes in binary units', () => {
    expect([0, 1023, 1024, 1536, 48_300, 5 * 1024 ** 2, 3.2 * 1024 ** 3].map(humanBytes)).toEqual([
      '0 B',
      '1023 B',
      '1.0 KiB',
      '1.5 KiB',
      '47 KiB',
      '5.0 MiB',
      '3.2 GiB',
    ]);
  });

  it('ages coarsely', () => {
    const now = Date.parse('2026-03-01T11:00:00Z');
    expect(ago(undefined, now)).toBe('never');
    expect(ago('2026-03-01T10:59:55Z', now)).toBe('5s ago');
    expect(ago('2026-03-01T10:30:00Z', now)).toBe('30m ago');
    expect(ago('2026-03-01T05:00:00Z', now)).toBe('6h ago');
    expect(ago('2026-02-25T11:00:00Z', now)).toBe('4d ago');
  });

  it('every stream of the topology has a purpose', () => {
    expect(Object.values(STREAMS).map(streamPurpose)).toEqual([
      'records',
      'latest state',
      'heartbeats',
      'work',
      'fanout',
      'dead letters',
      'decisions',
    ]);
    expect(streamPurpose('KV_pacer-assign')).toBe('key-value bucket');
  });
});

describe('the concerns bus stats reads by', () => {
  it('are the ones the handlers run: each dead-letters on the dlq.<concern> its NATS user may publish', async () => {
    const config = defaultConfig();
    const plans = await handlerConcernPlans(config);
    expect(plans.map((p) => p.concern)).toEqual([
      'router',
      'assign',
      'assign-fanout',
      'lease-aggregate',
      'handover',
      'config-status',
      'instances',
      'assign-resync',
      'lease-aggregate-resync',
      'handover-resync',
      'config-status-resync',
      'instances-resync',
    ]);
    const granted = NATS_IDENTITIES.flatMap((id) => natsPermissions(id, config).publish).filter((s) =>
      s.startsWith('dlq.'),
    );
    expect(new Set(plans.map((p) => `dlq.${p.concern}`))).toEqual(new Set(granted));
    const handover = plans.find((p) => p.concern === 'handover');
    expect(handover?.consumers).toMatchObject({
      mode: 'partitioned',
      partitions: config.bus.partitions.handover,
    });
  });
});

describe('parseStatsArgs', () => {
  it("takes -o table|json|yaml in kubectl's spellings and --json; refuses the rest", () => {
    expect(parseStatsArgs([])).toEqual({ output: 'table' });
    expect(parseStatsArgs(['-o', 'json'])).toEqual({ output: 'json' });
    expect(parseStatsArgs(['-o=json'])).toEqual({ output: 'json' });
    expect(parseStatsArgs(['--output=yaml'])).toEqual({ output: 'yaml' });
    expect(parseStatsArgs(['--json'])).toEqual({ output: 'json' });
    expect(parseStatsArgs(['--json', '-o', 'table'])).toEqual({ output: 'table' });
    expect(() => parseStatsArgs(['-o', 'wide'])).toThrow(/-o takes table, json, yaml, got "wide"/);
    expect(() => parseStatsArgs(['--watch'])).toThrow(/unknown argument --watch/);
    expect(() => parseStatsArgs(['-o'])).toThrow(/-o takes table, json, yaml, got nothing/);
  });
});
