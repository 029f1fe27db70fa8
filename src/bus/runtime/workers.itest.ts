// Handler runtime replicas as real processes (test/fixtures/bus-worker.ts) against the local
// cluster's JetStream: a worker killed mid-handler loses nothing and its message takes effect
// exactly once; SIGTERM drains or gives work back; two replicas never work on one key at once.
import {
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
} from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BusEvent, EventLog, spawnFixture, uniqueSuffix } from '../../../test/fixtures/bus-support.ts';
import type { WorkerConfig } from '../../../test/fixtures/bus-worker.ts';
import { useLocalCluster } from '../../../test/support/local-cluster.ts';
import { connectNats } from '../../../test/support/nats.ts';
import type { ManagedProcess } from '../../../test/support/processes.ts';
import type { HandlerConsumerSpec } from './consumers.ts';
import { HANDLER_GRACE_MS } from './handler-runtime.ts';
import { leaseTimings } from './lease.ts';
import { partitionedSubject } from './partition.ts';

const { info } = useLocalCluster();
const run = uniqueSuffix();
const STREAM = `ITEST_WK_${run}`;
const DLQ_STREAM = `ITEST_WK_DLQ_${run}`;
const subj = (s: string) => `itwk${run}.${s}`;
const EFFECTS = `itwk_effects_${run}`;
const LOCKS = `itwk_locks_${run}`;

let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;
let effects: KV;
const workers: ManagedProcess[] = [];

beforeAll(async () => {
  nc = await connectNats(info, { maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
  js = jsm.jetstream();
  await jsm.streams.add({ name: STREAM, subjects: [subj('>')], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: DLQ_STREAM, subjects: [`itwkdlq${run}.>`] });
  const kvm = new Kvm(nc);
  effects = await kvm.create(EFFECTS, { history: 5 });
  await kvm.create(LOCKS, { history: 1 });
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(2_000)));
});

afterAll(async () => {
  for (const s of [STREAM, DLQ_STREAM, `KV_${EFFECTS}`, `KV_${LOCKS}`])
    await jsm.streams.delete(s).catch(() => 0);
  await nc.drain();
});

function startWorker(name: string, consumers: HandlerConsumerSpec, extra: Partial<WorkerConfig> = {}) {
  const config: WorkerConfig = {
    natsUrl: info.natsUrl,
    natsCaFile: info.natsCaFile,
    concern: name,
    consumers,
    deadLetterSubject: `itwkdlq${run}.${name}`,
    eventsSubject: subj(`events.${name}`),
    effectBucket: EFFECTS,
    ...extra,
  };
  const w = spawnFixture(info.dir, 'bus-worker.ts', { BUS_WORKER_CONFIG: JSON.stringify(config) });
  workers.push(w);
  return w;
}

async function startWorkers(
  events: EventLog,
  n: number,
  start: () => ManagedProcess,
): Promise<ManagedProcess[]> {
  const started = Array.from({ length: n }, start);
  for (const w of started)
    await events.waitFor(`worker ${w.pid} ready`, (e) => e.type === 'ready' && e.pid === w.pid);
  return started;
}

async function effectHistory(id: string) {
  const revisions = [];
  for await (const e of await effects.history({ key: `effect.${id}` })) revisions.push(e.string());
  return revisions;
}

describe('handler workers (processes)', () => {
  it('redelivers a SIGKILLed worker’s in-flight message to another worker, with exactly one effective application', async () => {
    const name = 'crash';
    const events = new EventLog(nc, subj(`events.${name}`));
    const spec: HandlerConsumerSpec = {
      mode: 'shared',
      stream: STREAM,
      durable: name,
      filterSubject: subj(`${name}.>`),
      ackWaitMs: 3_000,
      maxDeliver: 5,
    };
    const spawn = () => startWorker(name, spec);
    const [a, b] = await startWorkers(events, 2, spawn);
    const byPid = new Map([a, b].map((w) => [w?.pid, w]));

    // Killed before the effect: the other worker must apply it.
    await js.publish(subj(`${name}.x`), JSON.stringify({ id: 'before', crashPoint: 'before-effect' }));
    const holding1 = await events.waitFor(
      'a worker holding "before"',
      (e) => e.type === 'holding' && e.id === 'before',
    );
    const victim1 = byPid.get(holding1.pid);
    process.kill(victim1?.pid ?? 0, 'SIGKILL');
    const applied1 = await events.waitFor(
      '"before" applied',
      (e) => e.type === 'applied' && e.id === 'before',
    );
    expect(applied1.pid, 'the surviving worker must take over the killed worker’s message').not.toBe(
      holding1.pid,
    );

    // Killed after the effect but before the ack: redelivered, and the repeat is a no-op.
    const replacement = spawn();
    await events.waitFor('replacement ready', (e) => e.type === 'ready' && e.pid === replacement.pid);
    byPid.set(replacement.pid, replacement);
    await js.publish(subj(`${name}.x`), JSON.stringify({ id: 'after', crashPoint: 'after-effect' }));
    const holding2 = await events.waitFor(
      'a worker holding "after"',
      (e) => e.type === 'holding' && e.id === 'after',
    );
    process.kill(byPid.get(holding2.pid)?.pid ?? 0, 'SIGKILL');
    const repeat = await events.waitFor(
      '"after" redelivered',
      (e) => e.type === 'already-applied' && e.id === 'after',
    );
    expect(repeat.pid).not.toBe(holding2.pid);

    for (const id of ['before', 'after']) {
      expect(events.of('applied', id), `"${id}" must take effect exactly once`).toHaveLength(1);
      expect(await effectHistory(id), `"${id}" must be written to the effect store once`).toHaveLength(1);
    }
    await expect
      .poll(async () => {
        const ci = await jsm.consumers.info(STREAM, name);
        return ci.num_pending + ci.num_ack_pending;
      })
      .toBe(0);
    events.close();
  });

  it('on SIGTERM finishes in-flight work and exits 0, or abandons it past the drain timeout so it is redelivered only after ack_wait', async () => {
    const name = 'drain';
    const events = new EventLog(nc, subj(`events.${name}`));
    const spec: HandlerConsumerSpec = {
      mode: 'shared',
      stream: STREAM,
      durable: name,
      filterSubject: subj(`${name}.>`),
      ackWaitMs: 4_000,
      maxDeliver: 5,
    };
    // Finishes: a 1.5 s handler outlives the SIGTERM and still acks.
    const [w1] = await startWorkers(events, 1, () => startWorker(name, spec, { drainTimeoutMs: 10_000 }));
    await js.publish(
      subj(`${name}.x`),
      JSON.stringify({ id: 'finish', crashPoint: 'before-effect', holdOnFirstMs: 1_500 }),
    );
    await events.waitFor('holding "finish"', (e) => e.type === 'holding' && e.id === 'finish');
    process.kill(w1?.pid ?? 0, 'SIGTERM');
    expect(await w1?.whenExited(), 'a worker must exit cleanly on SIGTERM').toBe(0);
    expect(events.of('applied', 'finish').map((e) => e.pid)).toEqual([w1?.pid]);
    expect(events.of('end', 'finish')).toHaveLength(1);

    // Abandons: the handler would run 60 s and ignores its signal; past the drain timeout (0.5 s) and
    // the grace it is abandoned, not nak'd, because its write may still land: another worker gets the
    // message only when ack_wait has run out after the holder's last confirmed progress.
    const drainTimeoutMs = 500;
    const [w2, w3] = await startWorkers(events, 2, () => startWorker(name, spec, { drainTimeoutMs }));
    await js.publish(
      subj(`${name}.x`),
      JSON.stringify({ id: 'release', crashPoint: 'before-effect', holdOnFirstMs: 60_000 }),
    );
    const holding = await events.waitFor(
      'holding "release"',
      (e) => e.type === 'holding' && e.id === 'release',
    );
    const holder = holding.pid === w2?.pid ? w2 : w3;
    const sentAt = Date.now();
    process.kill(holder?.pid ?? 0, 'SIGTERM');
    expect(await holder?.whenExited()).toBe(0);
    const applied = await events.waitFor(
      '"release" applied elsewhere',
      (e) => e.type === 'applied' && e.id === 'release',
    );
    expect(applied.pid).not.toBe(holding.pid);
    const { heartbeatMs } = leaseTimings(spec.ackWaitMs);
    expect(
      applied.t - sentAt,
      'a message whose handler may still write was handed to another replica before ack_wait ran out',
    ).toBeGreaterThanOrEqual(drainTimeoutMs + HANDLER_GRACE_MS - heartbeatMs + spec.ackWaitMs - 100);
    expect(events.of('applied', 'release')).toHaveLength(1);
    events.close();
  });

  it('never lets two replicas work on one key at once (partitioned consumers, max_ack_pending 1)', async () => {
    const name = 'serial';
    const prefix = subj(name);
    const events = new EventLog(nc, subj(`events.${name}`));
    const spec: HandlerConsumerSpec = {
      mode: 'partitioned',
      stream: STREAM,
      durable: name,
      prefix,
      partitions: 4,
      ackWaitMs: 5_000,
      maxDeliver: 5,
    };
    await startWorkers(events, 2, () => startWorker(name, spec, { lockBucket: LOCKS }));
    const keys = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta'];
    const total = 120;
    for (let i = 0; i < total; i++) {
      const key = keys[i % keys.length] ?? 'alpha';
      await js.publish(
        partitionedSubject(prefix, [key], 4),
        JSON.stringify({ id: `s${i}`, holdMs: 3 + ((i * 7) % 12) }),
      );
    }
    await expect.poll(() => events.of('end').length, { timeout: 25_000 }).toBe(total);
    expect(new Set(events.of('start').map((e) => e.pid)).size, 'both replicas must have worked').toBe(2);
    expect(new Set(events.of('start').map((e) => e.id)).size).toBe(total);
    expect(serializationViolations(events.events), 'two replicas worked on one key at once').toEqual([]);
    events.close();
  });

  it('the serialization checker does see overlap when keys are NOT partitioned (control)', async () => {
    const name = 'control';
    const events = new EventLog(nc, subj(`events.${name}`));
    const spec: HandlerConsumerSpec = {
      mode: 'shared',
      stream: STREAM,
      durable: name,
      filterSubject: subj(`${name}.>`),
      ackWaitMs: 5_000,
      maxDeliver: 5,
    };
    await startWorkers(events, 2, () => startWorker(name, spec, { lockBucket: LOCKS, concurrency: 4 }));
    for (let i = 0; i < 40; i++) {
      await js.publish(
        subj(`${name}.${i % 2 === 0 ? 'one' : 'two'}`),
        JSON.stringify({ id: `c${i}`, holdMs: 20 }),
      );
    }
    await expect.poll(() => events.of('end').length, { timeout: 20_000 }).toBe(40);
    expect(
      serializationViolations(events.events).length,
      'without partitions, a shared consumer runs one key on several lanes; the checker must notice',
    ).toBeGreaterThan(0);
    events.close();
  });
});

/** Per key: lock violations, and messages that started before the previous one of the key ended. */
function serializationViolations(events: BusEvent[]): string[] {
  const problems = events
    .filter((e) => e.type === 'violation')
    .map((e) => `lock of ${e.key} taken (${e.id})`);
  const ends = new Map(events.filter((e) => e.type === 'end').map((e) => [e.id, e]));
  const byKey = new Map<string, BusEvent[]>();
  for (const s of events.filter((e) => e.type === 'start')) {
    byKey.set(s.key ?? '', [...(byKey.get(s.key ?? '') ?? []), s]);
  }
  for (const [key, list] of byKey) {
    list.sort((x, y) => x.t - y.t);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1] as BusEvent;
      const cur = list[i] as BusEvent;
      const prevEnd = ends.get(prev.id)?.t ?? Number.POSITIVE_INFINITY;
      if (cur.t < prevEnd) problems.push(`key ${key}: ${cur.id} started before ${prev.id} ended`);
      if ((cur.seq ?? 0) < (prev.seq ?? 0))
        problems.push(`key ${key}: ${cur.id} ran before earlier ${prev.id}`);
    }
  }
  return problems;
}
