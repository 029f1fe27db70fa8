import type { ConsumerInfo, JetStreamManager, StreamInfo } from '@nats-io/jetstream';
import { type HandlerConsumerSpec, planHandlerConsumers } from './runtime/consumers.ts';
import { recheckSubject } from './subjects.ts';
import { STREAMS } from './topology.ts';

/**
 * `switchyard bus stats`: the bus in the project's terms. Two reads (JetStream's stream list and,
 * per stream, its consumer list; the dead letters and the re-checks by the stream's per-subject
 * counts, never a scan), then pure functions: the consumers grouped by the handler concern whose
 * plan (`runtime/consumers.ts`) names them, and a table.
 *
 * Per consumer, the numbers are the server's own, as its monitoring endpoint (`/jsz`) gives them:
 * backlog is `num_pending` (undelivered messages matching its filter), never
 * `last_seq - delivered` (wrong for a filtered consumer); in flight is `num_ack_pending`, and a
 * consumer is saturated when it reaches `max_ack_pending`; stuck when `pending` > 0 while the
 * last ack grows old.
 *
 * Per stream, its replicas as its leader reports them (`StreamInfo.cluster`): which server leads,
 * and for each follower whether it is current, how many operations it is behind, when the leader
 * last heard from it and whether it counts it offline. A stream whose replicas are not all in sync
 * loses data if it loses one more server (`bus.streamReplicas`, docs/bus.md).
 */
export interface ConsumerStats {
  name: string;
  filter: string;
  pending: number;
  ackPending: number;
  /** -1: no limit (an ephemeral reader that does not ack). */
  maxAckPending: number;
  redelivered: number;
  /** Pull requests waiting at the server: replicas idle on this consumer. */
  waiting: number;
  /** When the server last saw an ack on it (`ack_floor.last_active`). */
  lastActive: string | undefined;
  /** A durable (a handler's); false: an ephemeral reader (a view, a record lookup, a tool). */
  durable: boolean;
}

export type StreamRole = keyof typeof STREAMS;

/** What each stream of the topology (`topology.ts`) holds, in the words `bus stats` prints. */
export const STREAM_PURPOSES: Record<StreamRole, string> = {
  records: 'records',
  latest: 'latest state',
  heartbeats: 'heartbeats',
  work: 'work',
  fanout: 'fanout',
  deadLetters: 'dead letters',
  decisions: 'decisions',
};

const ROLE_OF_STREAM = new Map<string, StreamRole>(
  Object.entries(STREAMS).map(([role, name]) => [name, role as StreamRole]),
);

/** The purpose of a stream by its name; a pacer's slot bucket and anything else are said as such. */
export function streamPurpose(name: string): string {
  const role = ROLE_OF_STREAM.get(name);
  if (role) return STREAM_PURPOSES[role];
  return name.startsWith('KV_') ? 'key-value bucket' : 'not in the topology';
}

/** One copy of a stream: its leader or a follower, as the leader sees it. */
export interface ReplicaStats {
  /** The server holding it. */
  name: string;
  leader: boolean;
  /** Up to date with the leader (the leader always is). */
  current: boolean;
  /** The group counts it offline. */
  offline: boolean;
  /** Operations it is behind the leader. */
  lag: number;
  /** How long ago the leader last heard from it, in ms; undefined for the leader. */
  lastActiveMsAgo: number | undefined;
}

export interface StreamReplication {
  /** The replicas the stream is configured with (`num_replicas`). */
  replicas: number;
  /** The server leading it; undefined when it has no leader (it takes no writes). */
  leader: string | undefined;
  /** Replicas in sync: the leader and every current, online follower. */
  inSync: number;
  /** The leader first, then the followers by name. */
  members: ReplicaStats[];
}

/** A stream's replicas from its info: the leader, then each follower with its state. */
export function streamReplication(info: Pick<StreamInfo, 'config' | 'cluster'>): StreamReplication {
  const leader = info.cluster?.leader || undefined;
  const followers: ReplicaStats[] = (info.cluster?.replicas ?? [])
    .map((peer) => ({
      name: peer.name,
      leader: false,
      current: peer.current === true,
      offline: peer.offline === true,
      lag: peer.lag ?? 0,
      lastActiveMsAgo: Math.round((peer.active ?? 0) / 1e6),
    }))
    .sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  const members = leader
    ? [
        { name: leader, leader: true, current: true, offline: false, lag: 0, lastActiveMsAgo: undefined },
        ...followers,
      ]
    : followers;
  return {
    replicas: info.config.num_replicas,
    leader,
    inSync: leader ? members.filter((m) => m.current && !m.offline).length : 0,
    members,
  };
}

export interface StreamStats {
  name: string;
  purpose: string;
  messages: number;
  bytes: number;
  firstSeq: number;
  lastSeq: number;
  /** Stored time of the first message (ISO 8601); undefined when the stream is empty. */
  firstTime: string | undefined;
  lastTime: string | undefined;
  /** Distinct subjects holding messages. */
  subjects: number;
  /**
   * Messages per subject, for the subjects `bus stats` counts by (`dlq.>` in DLQ, `recheck.>` in
   * WORK): the server's per-subject counts, read with the stream's info (`subjects_filter`).
   */
  subjectCounts: Record<string, number>;
  replication: StreamReplication;
  consumers: ConsumerStats[];
}

/** The subjects whose per-subject counts are read with a stream's info: dead letters and waiting re-checks. */
const COUNTED_SUBJECTS: Partial<Record<string, string>> = {
  [STREAMS.deadLetters]: 'dlq.>',
  [STREAMS.work]: 'recheck.>',
};

const NO_TIME = /^0001-01-01/;
const TOPOLOGY_ORDER: readonly string[] = Object.values(STREAMS);

/** A stream's place in the topology's order; any other stream after them. */
function streamRank(name: string): number {
  const i = TOPOLOGY_ORDER.indexOf(name);
  return i < 0 ? TOPOLOGY_ORDER.length : i;
}

function timeOf(ts: string | undefined, messages: number): string | undefined {
  return messages > 0 && ts && !NO_TIME.test(ts) ? ts : undefined;
}

function consumerStats(c: ConsumerInfo): ConsumerStats {
  const lastActive = c.ack_floor.last_active;
  return {
    name: c.name,
    filter: c.config.filter_subject ?? c.config.filter_subjects?.join(',') ?? '',
    pending: c.num_pending,
    ackPending: c.num_ack_pending,
    maxAckPending: c.config.max_ack_pending ?? -1,
    redelivered: c.num_redelivered,
    waiting: c.num_waiting,
    lastActive: lastActive && !NO_TIME.test(String(lastActive)) ? String(lastActive) : undefined,
    durable: c.config.durable_name !== undefined && c.config.durable_name !== '',
  };
}

function streamStats(s: StreamInfo, consumers: ConsumerStats[]): StreamStats {
  return {
    name: s.config.name,
    purpose: streamPurpose(s.config.name),
    messages: s.state.messages,
    bytes: s.state.bytes,
    firstSeq: s.state.first_seq,
    lastSeq: s.state.last_seq,
    firstTime: timeOf(s.state.first_ts, s.state.messages),
    lastTime: timeOf(s.state.last_ts, s.state.messages),
    subjects: s.state.num_subjects ?? 0,
    subjectCounts: s.state.subjects ?? {},
    replication: streamReplication(s),
    consumers: consumers.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true })),
  };
}

/**
 * Every stream and its consumers, as the server reports them. The streams whose subjects are
 * counted (DLQ, WORK) are read again by name with a `subjects_filter`, and that one reply gives
 * their state and counts together; so is a stream listed without its replicas. Needs `$JS.API.STREAM.LIST`, `STREAM.INFO.*` and
 * `CONSUMER.LIST.*`: what the `bus-setup` user has.
 */
export async function busStats(jsm: JetStreamManager): Promise<StreamStats[]> {
  const out: StreamStats[] = [];
  const seen = new Set<string>();
  for await (const listed of jsm.streams.list()) {
    const name = listed.config.name;
    // A cluster lists a stream twice while its group changes leader (seen with a node killed).
    if (seen.has(name)) continue;
    seen.add(name);
    const filter = COUNTED_SUBJECTS[name];
    // A single server lists streams without their replicas (`cluster`); their info has them.
    const info =
      filter || !listed.cluster
        ? await jsm.streams.info(name, filter ? { subjects_filter: filter } : undefined)
        : listed;
    const consumers: ConsumerStats[] = [];
    for await (const c of jsm.consumers.list(name)) consumers.push(consumerStats(c));
    out.push(streamStats(info, consumers));
  }
  // The topology's streams in its order (records first, dead letters last), then any other.
  return out.sort((a, b) => streamRank(a.name) - streamRank(b.name) || a.name.localeCompare(b.name));
}

/** The topology's streams that `stats` does not hold: the topology is not (fully) applied. */
export function missingStreams(stats: readonly StreamStats[]): string[] {
  const present = new Set(stats.map((s) => s.name));
  return Object.values(STREAMS).filter((name) => !present.has(name));
}

/** A handler concern as the project runs it: its name (its dead letters go to `dlq.<concern>`) and its consumers. */
export interface ConcernPlan {
  concern: string;
  consumers: HandlerConsumerSpec;
}

export interface ConcernStats {
  concern: string;
  /**
   * `handler`: a planned concern; `unplanned`: a durable consumer or dead letters no plan names
   * (another partition count, a concern removed, a test's); `readers`: the ephemeral consumers
   * on one stream (views, record lookups, tools), whose pending is how far behind they are.
   */
  kind: 'handler' | 'unplanned' | 'readers';
  stream: string | undefined;
  /** Consumers present; for a handler, `planned` says how many its plan has. */
  consumers: number;
  planned: number;
  /** Planned consumers the server does not have (the handler has not started since, or one was deleted). */
  missing: string[];
  pending: number;
  ackPending: number;
  /** Sum of the consumers' `max_ack_pending`; null when one has no limit. */
  maxAckPending: number | null;
  redelivered: number;
  waiting: number;
  /** Messages on `dlq.<concern>` in DLQ. */
  deadLetters: number;
  /** Durable re-checks waiting (message schedules on `recheck.<concern>.…` in WORK). */
  rechecks: number;
  /** The latest ack on any of its consumers. */
  lastAck: string | undefined;
  members: ConsumerStats[];
}

export interface BusReport {
  streams: StreamStats[];
  concerns: ConcernStats[];
  /** Streams of the topology the server does not have. */
  missingStreams: string[];
}

const PARTITION_SUFFIX = /^(.*)-p\d+$/;
const DLQ_PREFIX = 'dlq.';

function emptyConcern(concern: string, kind: ConcernStats['kind'], stream: string | undefined): ConcernStats {
  return {
    concern,
    kind,
    stream,
    consumers: 0,
    planned: 0,
    missing: [],
    pending: 0,
    ackPending: 0,
    maxAckPending: 0,
    redelivered: 0,
    waiting: 0,
    deadLetters: 0,
    rechecks: 0,
    lastAck: undefined,
    members: [],
  };
}

function add(group: ConcernStats, c: ConsumerStats): void {
  group.members.push(c);
  group.consumers++;
  group.pending += c.pending;
  group.ackPending += c.ackPending;
  group.maxAckPending =
    group.maxAckPending === null || c.maxAckPending < 0 ? null : group.maxAckPending + c.maxAckPending;
  group.redelivered += c.redelivered;
  group.waiting += c.waiting;
  if (c.lastActive && (!group.lastAck || Date.parse(c.lastActive) > Date.parse(group.lastAck)))
    group.lastAck = c.lastActive;
}

/** The prefix of a concern's re-check subjects (`recheck.<concern>`), when its work is on WORK. */
function recheckPrefix(spec: HandlerConsumerSpec): string | undefined {
  if (spec.stream !== STREAMS.work) return undefined;
  const work = spec.mode === 'partitioned' ? spec.prefix : spec.filterSubject.replace(/\.>$/, '');
  return work.startsWith('work.') ? recheckSubject(work) : undefined;
}

/**
 * The consumers grouped by concern. A consumer belongs to the concern whose plan names it
 * (`planHandlerConsumers`: `<durable>` or `<durable>-p<i>`); a `<durable>-p<i>` beyond the plan's
 * partitions still does (the count was changed). Dead letters are the DLQ's count on
 * `dlq.<concern>`; re-checks the WORK subjects under the concern's `recheck.<…>` prefix.
 * Planned concerns come first, in the plan's order, then what no plan names, then the readers.
 */
export function groupByConcern(
  streams: readonly StreamStats[],
  plans: readonly ConcernPlan[],
): ConcernStats[] {
  const byConcern = new Map<string, ConcernStats>();
  const concernOfConsumer = new Map<string, ConcernStats>();
  const concernOfDurable = new Map<string, ConcernStats>();
  const rechecks: [string, ConcernStats][] = [];
  for (const plan of plans) {
    const group = emptyConcern(plan.concern, 'handler', plan.consumers.stream);
    const planned = planHandlerConsumers(plan.consumers);
    group.planned = planned.length;
    byConcern.set(plan.concern, group);
    for (const p of planned) concernOfConsumer.set(`${p.stream}/${p.name}`, group);
    concernOfDurable.set(`${plan.consumers.stream}/${plan.consumers.durable}`, group);
    const prefix = recheckPrefix(plan.consumers);
    if (prefix) rechecks.push([`${prefix}.`, group]);
  }

  const unplanned = new Map<string, ConcernStats>();
  const readers = new Map<string, ConcernStats>();
  for (const s of streams) {
    for (const c of s.consumers) {
      if (!c.durable) {
        const group = readers.get(s.name) ?? emptyConcern('readers', 'readers', s.name);
        readers.set(s.name, group);
        add(group, c);
        continue;
      }
      const base = PARTITION_SUFFIX.exec(c.name)?.[1];
      let group =
        concernOfConsumer.get(`${s.name}/${c.name}`) ??
        (base === undefined ? undefined : concernOfDurable.get(`${s.name}/${base}`));
      if (!group) {
        const concern = base ?? c.name;
        group = unplanned.get(concern) ?? emptyConcern(concern, 'unplanned', s.name);
        unplanned.set(concern, group);
      }
      add(group, c);
    }
    for (const [subject, count] of Object.entries(s.subjectCounts)) {
      if (s.name === STREAMS.deadLetters && subject.startsWith(DLQ_PREFIX)) {
        const concern = subject.slice(DLQ_PREFIX.length);
        let group = byConcern.get(concern) ?? unplanned.get(concern);
        if (!group) {
          group = emptyConcern(concern, 'unplanned', undefined);
          unplanned.set(concern, group);
        }
        group.deadLetters += count;
      } else if (s.name === STREAMS.work) {
        const owner = rechecks.find(([prefix]) => subject.startsWith(prefix))?.[1];
        if (owner) owner.rechecks += count;
      }
    }
  }

  for (const group of byConcern.values()) {
    const present = new Set(group.members.map((m) => m.name));
    const plan = plans.find((p) => p.concern === group.concern);
    if (plan)
      group.missing = planHandlerConsumers(plan.consumers)
        .map((p) => p.name)
        .filter((name) => !present.has(name));
  }
  const sorted = (m: Map<string, ConcernStats>) =>
    [...m.values()].sort(
      (a, b) => a.concern.localeCompare(b.concern) || streamRank(a.stream ?? '') - streamRank(b.stream ?? ''),
    );
  const all = [...byConcern.values(), ...sorted(unplanned), ...sorted(readers)];
  for (const group of all)
    group.members.sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  return all;
}

/** The report `bus stats` prints: streams, concerns, and the topology's streams that are missing. */
export function busReport(streams: StreamStats[], plans: readonly ConcernPlan[]): BusReport {
  return { streams, concerns: groupByConcern(streams, plans), missingStreams: missingStreams(streams) };
}

/** Reads the bus and groups it by the plans' concerns. */
export async function readBusReport(
  jsm: JetStreamManager,
  plans: readonly ConcernPlan[],
): Promise<BusReport> {
  return busReport(await busStats(jsm), plans);
}

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB'];

/** 912 B, 1.5 KiB, 23.4 MiB. */
export function humanBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes;
  let unit = '';
  for (const u of UNITS) {
    value /= 1024;
    unit = u;
    if (value < 1024) break;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${unit}`;
}

/** How long ago, coarsely: 12s, 5m, 3h, 2d. */
export function ago(iso: string | undefined, nowMs: number): string {
  if (!iso) return 'never';
  return agoMs(nowMs - Date.parse(iso));
}

/** `ms` ago, coarsely: 12s, 5m, 3h, 2d. */
export function agoMs(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 120 * 60) return `${Math.round(s / 60)}m ago`;
  if (s < 48 * 3600) return `${Math.round(s / 3600)}h ago`;
  return `${Math.round(s / 86_400)}d ago`;
}

/** Columns padded to their widest cell; the `right` ones (numbers) aligned right. */
function table(header: readonly string[], rows: readonly (readonly string[])[], right: ReadonlySet<number>) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (right.has(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function concernLabel(c: ConcernStats): string {
  if (c.kind === 'readers') return 'readers';
  return c.kind === 'unplanned' ? `${c.concern} (unplanned)` : c.concern;
}

function consumersCell(c: ConcernStats): string {
  return c.kind === 'handler' && c.consumers !== c.planned
    ? `${c.consumers}/${c.planned}`
    : String(c.consumers);
}

/** A follower's state in words: what an operator waits for (`current`) or acts on. */
export function replicaState(r: ReplicaStats): string {
  if (r.leader) return 'leader';
  if (r.offline) return 'offline';
  return r.current ? 'current' : 'catching up';
}

/**
 * Every copy of the replicated streams (more than one replica, or a follower reported): one row
 * each, so a follower behind or offline is named with its lag. Empty on a single server.
 */
function replicaRows(streams: readonly StreamStats[]): string[][] {
  return streams
    .filter((s) => s.replication.replicas > 1 || s.replication.members.length > 1)
    .flatMap((s) =>
      s.replication.members.map((m) => [
        s.name,
        m.name,
        replicaState(m),
        m.leader ? '-' : String(m.lag),
        m.lastActiveMsAgo === undefined ? '-' : agoMs(m.lastActiveMsAgo),
      ]),
    );
}

/** The report as `switchyard bus stats` prints it: the streams, their replicas, then the concerns. */
export function formatBusStats(report: BusReport, nowMs: number = Date.now()): string {
  const streams = table(
    [
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
    ],
    report.streams.map((s) => [
      s.name,
      s.purpose,
      String(s.messages),
      humanBytes(s.bytes),
      String(s.firstSeq),
      String(s.lastSeq),
      s.firstTime ? s.firstTime.replace(/\.\d+Z$/, 'Z') : '-',
      String(s.replication.replicas),
      String(s.replication.inSync),
      s.replication.leader ?? 'none',
    ]),
    new Set([2, 3, 4, 5, 7, 8]),
  );
  const replicas = replicaRows(report.streams);
  const replicaTable =
    replicas.length > 0
      ? ['', ...table(['STREAM', 'REPLICA', 'STATE', 'LAG', 'LAST ACTIVE'], replicas, new Set([3]))]
      : [];
  const concerns = table(
    [
      'CONCERN',
      'STREAM',
      'CONSUMERS',
      'PENDING',
      'ACK PENDING',
      'REDELIVERED',
      'DEAD LETTERS',
      'RECHECKS',
      'LAST ACK',
    ],
    report.concerns.map((c) => [
      concernLabel(c),
      c.stream ?? '-',
      consumersCell(c),
      String(c.pending),
      c.kind === 'readers' ? '-' : `${c.ackPending}/${c.maxAckPending === null ? '∞' : c.maxAckPending}`,
      String(c.redelivered),
      String(c.deadLetters),
      String(c.rechecks),
      c.kind === 'readers' || c.consumers === 0 ? '-' : ago(c.lastAck, nowMs),
    ]),
    new Set([2, 3, 4, 5, 6, 7]),
  );
  const notes = report.missingStreams.map(
    (name) => `stream ${name} is missing (the topology is not applied)`,
  );
  for (const c of report.concerns)
    if (c.kind === 'handler' && c.missing.length > 0 && c.missing.length < c.planned)
      notes.push(`${c.concern}: consumers missing: ${c.missing.join(', ')}`);
  for (const s of report.streams)
    if (s.replication.inSync < s.replication.replicas)
      notes.push(
        s.replication.leader
          ? `stream ${s.name}: ${s.replication.inSync} of ${s.replication.replicas} replicas in sync`
          : `stream ${s.name}: no leader (it takes no writes until its replicas elect one)`,
      );
  return [...streams, ...replicaTable, '', ...concerns, ...(notes.length > 0 ? ['', ...notes] : [])].join(
    '\n',
  );
}
