// `switchyard bus stats` agrees with the NATS monitoring endpoint (issue 15): on a nats-server of
// the test's own with the project's topology and every planned consumer, records, work in flight,
// a redelivery, waiting re-checks and dead letters are put on the bus; then the CLI, run as the
// `bus-setup` user, and `/jsz?streams=true&consumers=true&config=true` must give the same numbers,
// per stream, per consumer and summed per concern. The server refuses nothing the CLI asks
// (`stop()` fails on any permission violation).
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnBus, startOwnBus } from '../../test/support/bus.ts';
import { unreachableNatsUrl } from '../../test/support/nats.ts';
import { runSwitchyard } from '../../test/support/processes.ts';
import { handlerConcernPlans } from '../cli/bus.ts';
import { defaultConfig } from '../config/schema.ts';
import { ensureConsumer, planHandlerConsumers } from './runtime/consumers.ts';
import { partitionedSubject, partitionOf } from './runtime/partition.ts';
import { scheduleRecheck } from './runtime/recheck.ts';
import type { BusReport, ConcernPlan } from './stats.ts';
import { STREAMS } from './topology.ts';
import { ObjectView } from './view.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'stats-itest' });
const config = defaultConfig();

interface JszConsumer {
  name: string;
  config: { durable_name?: string; max_ack_pending?: number };
  num_pending: number;
  num_ack_pending: number;
  num_redelivered: number;
  num_waiting: number;
}
interface JszStream {
  name: string;
  state: {
    messages: number;
    bytes: number;
    first_seq: number;
    last_seq: number;
    first_ts: string;
    num_subjects?: number;
  };
  consumer_detail?: JszConsumer[];
}
interface Jsz {
  account_details?: { stream_detail?: JszStream[] }[];
}

let bus: OwnBus;
let plans: ConcernPlan[];
let view: ObjectView | undefined;

beforeAll(async () => {
  bus = await startOwnBus();
  plans = await handlerConcernPlans(config);
  // Every consumer the handlers create at start, from their plans.
  for (const plan of plans)
    for (const c of planHandlerConsumers(plan.consumers)) await ensureConsumer(bus.jsm, c);
});

afterAll(async () => {
  view?.stop();
  await bus?.stop();
});

function asBusSetup(): string[] {
  return [
    `--nats.url=${bus.server.url}`,
    '--nats.user=bus-setup',
    `--nats.passwordFile=${join(bus.natsCredentialsDir, 'bus-setup')}`,
  ];
}

async function jsz(): Promise<Map<string, JszStream>> {
  const res = await fetch(`${bus.server.monitorUrl}/jsz?streams=true&consumers=true&config=true`);
  expect(res.ok).toBe(true);
  const body = (await res.json()) as Jsz;
  const streams = (body.account_details ?? []).flatMap((a) => a.stream_detail ?? []);
  return new Map(streams.map((s) => [s.name, s]));
}

/** Keys of `concern`'s work whose partitions are all different, so one pull from each finds its own. */
function keysInDistinctPartitions(prefix: string, partitions: number, count: number): string[] {
  const keys: string[] = [];
  const used = new Set<number>();
  for (let i = 0; keys.length < count; i++) {
    const key = `${prefix}-${i}`;
    const p = partitionOf([key], partitions);
    if (used.has(p)) continue;
    used.add(p);
    keys.push(key);
  }
  return keys;
}

async function pull(stream: string, consumer: string) {
  const c = await bus.js.consumers.get(stream, consumer);
  const m = await c.next({ expires: 5_000 });
  if (!m) throw new Error(`no message on ${stream}/${consumer}`);
  return m;
}

async function putOnTheBus(): Promise<void> {
  const p = config.bus.partitions;
  // Records: K8S and its mirror; 20 objects, one of them changed twice more.
  for (let i = 0; i < 20; i++)
    await bus.js.publish(
      `k8s.crd._.obj-${i}`,
      JSON.stringify({ op: 'upsert', object: { i, pad: 'x'.repeat(i * 10) } }),
    );
  for (let i = 0; i < 2; i++)
    await bus.js.publish('k8s.crd._.obj-0', JSON.stringify({ op: 'upsert', again: i }));
  // Heartbeats: one per Lease subject survives.
  for (let i = 0; i < 3; i++)
    await bus.js.publish('hb.lease.switchyard-system.r1', JSON.stringify({ renew: i }));
  await bus.js.publish('hb.lease.switchyard-system.r2', JSON.stringify({ renew: 0 }));

  // assign: 6 keys in 6 partitions, plus a second item behind the first in two of them.
  const assignKeys = keysInDistinctPartitions('cfg', p.assign, 6);
  for (const key of assignKeys)
    await bus.js.publish(partitionedSubject('work.assign', [key], p.assign), JSON.stringify({ key, seq: 1 }));
  for (const key of assignKeys.slice(0, 2))
    await bus.js.publish(partitionedSubject('work.assign', [key], p.assign), JSON.stringify({ key, seq: 2 }));
  // In flight: the first item of three partitions pulled and not acked (ack-pending 3 of 16).
  for (const key of assignKeys.slice(0, 3))
    await pull(STREAMS.work, `assign-p${partitionOf([key], p.assign)}`);
  // Two waiting re-checks of assign keys, due in an hour (message schedules on recheck.assign.…).
  for (const key of assignKeys.slice(4, 6)) {
    const subject = partitionedSubject('work.assign', [key], p.assign);
    await scheduleRecheck(
      bus.js,
      { subject, data: new TextEncoder().encode(key), headers: undefined },
      Date.now() + 3_600_000,
      'test',
      5_000,
    );
  }

  // handover: 4 keys; one pulled, nak'd, pulled again and left in flight (redelivered 1).
  const handoverKeys = keysInDistinctPartitions('target', p.handover, 4);
  for (const key of handoverKeys)
    await bus.js.publish(
      partitionedSubject('work.handover', [key], p.handover),
      JSON.stringify({ key, seq: 1 }),
    );
  const retried = `handover-p${partitionOf([handoverKeys[0] as string], p.handover)}`;
  (await pull(STREAMS.work, retried)).nak();
  const again = await pull(STREAMS.work, retried);
  expect(again.info.deliveryCount).toBe(2);

  // lease-aggregate and config-status: backlog only.
  for (const key of keysInDistinctPartitions('inst', p.leaseAggregate, 3))
    await bus.js.publish(
      partitionedSubject('work.lease-aggregate', [key], p.leaseAggregate),
      JSON.stringify({ key }),
    );
  await bus.js.publish(partitionedSubject('work.config-status', ['crdconfig', 'c1'], p.configStatus), '{}');

  // The router, a shared consumer on K8S: 3 records pulled, 1 acked, 2 in flight.
  const router = await bus.js.consumers.get(STREAMS.records, 'router');
  const batch = await router.fetch({ max_messages: 3, expires: 5_000 });
  let n = 0;
  for await (const m of batch) if (n++ === 0) m.ack();
  await bus.nc.flush();

  // The pacer's backlog: 5 items parked on fanout.assign.>, one pulled.
  for (let i = 0; i < 5; i++) await bus.js.publish(`fanout.assign.cfg-${i}`, JSON.stringify({ i }));
  await pull(STREAMS.fanout, 'assign-pacer');

  // Dead letters: on the concerns' dlq subjects, and one of a concern no plan names.
  const dead = { handover: 3, 'assign-fanout': 1, 'lease-aggregate': 2, retired: 1 };
  for (const [concern, count] of Object.entries(dead))
    for (let i = 0; i < count; i++) await bus.js.publish(`dlq.${concern}`, JSON.stringify({ concern, i }));

  // A view that holds Leases (ordered consumers on K8S_LATEST and HEARTBEATS), caught up; of kinds
  // not recorded on K8S here, so it skips those records without reading them as objects.
  view = new ObjectView(['webhookserver', 'lease'], log);
  await view.start(bus.js);

  // The mirror has copied every record.
  for (;;) {
    const [k8s, latest] = await Promise.all([
      bus.jsm.streams.info(STREAMS.records),
      bus.jsm.streams.info(STREAMS.latest),
    ]);
    if (latest.state.last_seq === k8s.state.last_seq) break;
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('switchyard bus stats', () => {
  it('agrees with the monitoring endpoint, per stream, per consumer and per concern', async () => {
    await putOnTheBus();

    const run = await runSwitchyard(['bus', 'stats', '-o', 'json', ...asBusSetup()]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as BusReport;
    const monitored = await jsz();

    // Streams: the same set, and every number the same.
    expect(report.missingStreams).toEqual([]);
    expect(report.streams.map((s) => s.name).sort()).toEqual([...monitored.keys()].sort());
    expect(report.streams.map((s) => s.name)).toEqual(Object.values(STREAMS));
    for (const s of report.streams) {
      const m = monitored.get(s.name) as JszStream;
      expect({
        stream: s.name,
        messages: s.messages,
        bytes: s.bytes,
        first: s.firstSeq,
        last: s.lastSeq,
      }).toEqual({
        stream: s.name,
        messages: m.state.messages,
        bytes: m.state.bytes,
        first: m.state.first_seq,
        last: m.state.last_seq,
      });
      expect(s.subjects).toBe(m.state.num_subjects ?? 0);
      if (s.messages > 0) expect(s.firstTime).toBe(m.state.first_ts);
      // Every consumer the server has, with the server's numbers.
      const consumers = new Map((m.consumer_detail ?? []).map((c) => [c.name, c]));
      expect(s.consumers.map((c) => c.name).sort()).toEqual([...consumers.keys()].sort());
      for (const c of s.consumers) {
        const mc = consumers.get(c.name) as JszConsumer;
        expect({
          consumer: c.name,
          pending: c.pending,
          ackPending: c.ackPending,
          redelivered: c.redelivered,
        }).toEqual({
          consumer: c.name,
          pending: mc.num_pending,
          ackPending: mc.num_ack_pending,
          redelivered: mc.num_redelivered,
        });
        expect(c.durable).toBe(mc.config.durable_name !== undefined);
        if (c.durable) {
          expect(c.maxAckPending).toBe(mc.config.max_ack_pending);
          expect(c.waiting).toBe(mc.num_waiting);
        }
      }
    }

    // Concerns: each one's sums over its planned consumers as the monitoring endpoint has them.
    for (const plan of plans) {
      const concern = report.concerns.find((c) => c.concern === plan.concern);
      const planned = planHandlerConsumers(plan.consumers);
      const detail = monitored.get(plan.consumers.stream)?.consumer_detail ?? [];
      const mine = detail.filter((c) => planned.some((p) => p.name === c.name));
      const sum = (f: (c: JszConsumer) => number) => mine.reduce((n, c) => n + f(c), 0);
      expect({
        concern: concern?.concern,
        kind: concern?.kind,
        consumers: concern?.consumers,
        pending: concern?.pending,
        ackPending: concern?.ackPending,
        maxAckPending: concern?.maxAckPending,
        redelivered: concern?.redelivered,
      }).toEqual({
        concern: plan.concern,
        kind: 'handler',
        consumers: planned.length,
        pending: sum((c) => c.num_pending),
        ackPending: sum((c) => c.num_ack_pending),
        maxAckPending: sum((c) => c.config.max_ack_pending ?? 0),
        redelivered: sum((c) => c.num_redelivered),
      });
    }

    // And what was put on the bus, so the agreement is not over zeros.
    const of = (name: string) => report.concerns.find((c) => c.concern === name);
    const p = config.bus.partitions;
    expect(of('assign')).toMatchObject({ pending: 5, ackPending: 3, maxAckPending: p.assign, rechecks: 2 });
    expect(of('handover')).toMatchObject({ pending: 3, ackPending: 1, redelivered: 1, deadLetters: 3 });
    expect(of('lease-aggregate')).toMatchObject({ pending: 3, ackPending: 0, deadLetters: 2 });
    expect(of('config-status')).toMatchObject({ pending: 1 });
    expect(of('router')).toMatchObject({ pending: 19, ackPending: 2, maxAckPending: 1000 });
    expect(of('assign-fanout')).toMatchObject({ pending: 4, ackPending: 1, deadLetters: 1 });
    expect(of('retired')).toMatchObject({ kind: 'unplanned', deadLetters: 1 });
    expect(report.concerns.filter((c) => c.kind === 'readers').map((c) => c.stream)).toEqual([
      STREAMS.latest,
      STREAMS.heartbeats,
    ]);
    expect(report.concerns.filter((c) => c.kind === 'readers').every((c) => c.pending === 0)).toBe(true);

    // Dead letters: the per-concern counts add up to the DLQ's messages.
    const dlq = monitored.get(STREAMS.deadLetters) as JszStream;
    expect(report.concerns.reduce((n, c) => n + c.deadLetters, 0)).toBe(dlq.state.messages);
    // A work queue holds what is waiting, in flight, or a waiting re-check: nothing else.
    const onWork = report.concerns.filter((c) => c.kind === 'handler' && c.stream === STREAMS.work);
    expect(onWork.reduce((n, c) => n + c.pending + c.ackPending + c.rechecks, 0)).toBe(
      monitored.get(STREAMS.work)?.state.messages,
    );
    expect((of('assign-fanout')?.pending ?? 0) + (of('assign-fanout')?.ackPending ?? 0)).toBe(
      monitored.get(STREAMS.fanout)?.state.messages,
    );

    // The table says the same in words.
    const table = await runSwitchyard(['bus', 'stats', ...asBusSetup()]);
    expect(table.code).toBe(0);
    const row = (first: string) =>
      table.stdout
        .split('\n')
        .find((l) => l.startsWith(`${first} `))
        ?.split(/\s{2,}/);
    expect(row('DLQ')?.slice(0, 3)).toEqual(['DLQ', 'dead letters', String(dlq.state.messages)]);
    expect(row('handover')?.slice(0, 8)).toEqual([
      'handover',
      'WORK',
      String(p.handover),
      '3',
      `1/${p.handover}`,
      '1',
      '3',
      '0',
    ]);
  });

  it('exits 2 on bad usage, 1 when NATS cannot be reached or a stream is missing', async () => {
    const usage = await runSwitchyard(['bus', 'stats', '-o', 'wide', ...asBusSetup()]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/-o takes table, json, yaml, got "wide"/);

    const unreachable = await runSwitchyard(['bus', 'stats', `--nats.url=${await unreachableNatsUrl()}`]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/cannot reach the bus/);

    await bus.jsm.streams.delete(STREAMS.fanout);
    const missing = await runSwitchyard(['bus', 'stats', ...asBusSetup()]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/streams missing: FANOUT/);
    expect(missing.stdout).toContain('stream FANOUT is missing');
  });
});
