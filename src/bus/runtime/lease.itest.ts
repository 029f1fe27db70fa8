// Per-key serialization when a replica stalls or a handler hangs, against a real nats-server of our
// own (so nothing else shares it) with handler replicas as processes (test/fixtures/bus-worker.ts).
// The server accepts a late ack from an attempt it already redelivered, and that ack frees a
// `max_ack_pending: 1` partition: the runtime must never send one.
import { type JetStreamManager, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type BusEvent, EventLog, spawnFixture, uniqueSuffix } from '../../../test/fixtures/bus-support.ts';
import type { WorkerConfig } from '../../../test/fixtures/bus-worker.ts';
import { type OwnNatsServer, startOwnNats } from '../../../test/support/nats.ts';
import type { ManagedProcess } from '../../../test/support/processes.ts';
import { ensureConsumer, type HandlerConsumerSpec, planHandlerConsumers } from './consumers.ts';
import { HANDLER_GRACE_MS } from './handler-runtime.ts';
import { leaseTimings } from './lease.ts';
import { partitionedSubject } from './partition.ts';

const ACK_WAIT_MS = 3_000;
const timings = leaseTimings(ACK_WAIT_MS);
let nats: OwnNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const workers: ManagedProcess[] = [];

beforeAll(async () => {
  nats = await startOwnNats('lease', pino({ level: process.env.LOG_LEVEL ?? 'warn' }));
  nc = await connect({ servers: nats.server.url, maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop(2_000)));
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** One partition, so every message is "key K" for serialization purposes. */
async function setUp(name: string): Promise<{ spec: HandlerConsumerSpec; subject: (id: string) => string }> {
  const run = uniqueSuffix();
  const prefix = `lease${run}.${name}`;
  await jsm.streams.add({
    name: `LEASE_${run}`,
    subjects: [`lease${run}.>`],
    retention: RetentionPolicy.Workqueue,
  });
  await jsm.streams.add({ name: `LEASE_DLQ_${run}`, subjects: [`leasedlq${run}.>`] });
  await new Kvm(nc).create(`lease_effects_${run}`, { history: 5 });
  const spec: HandlerConsumerSpec = {
    mode: 'partitioned',
    stream: `LEASE_${run}`,
    durable: name,
    prefix,
    partitions: 1,
    ackWaitMs: ACK_WAIT_MS,
    maxDeliver: 5,
  };
  return { spec, subject: () => partitionedSubject(prefix, ['k'], 1) };
}

function startWorker(
  spec: HandlerConsumerSpec,
  events: string,
  extra: Partial<WorkerConfig> = {},
): ManagedProcess {
  const run = spec.stream.replace('LEASE_', '');
  const config: WorkerConfig = {
    natsUrl: nats.server.url,
    concern: spec.durable,
    consumers: spec,
    deadLetterSubject: `leasedlq${run}.${spec.durable}`,
    eventsSubject: events,
    effectBucket: `lease_effects_${run}`,
    ...extra,
  };
  const w = spawnFixture(nats.dir, 'bus-worker.ts', { BUS_WORKER_CONFIG: JSON.stringify(config) });
  workers.push(w);
  return w;
}

async function ready(events: EventLog, ws: ManagedProcess[]): Promise<void> {
  for (const w of ws)
    await events.waitFor(`worker ${w.pid} ready`, (e) => e.type === 'ready' && e.pid === w.pid);
}

function only(events: EventLog, pred: (e: BusEvent) => boolean, what: string): BusEvent {
  const found = events.events.filter(pred);
  expect(found, what).toHaveLength(1);
  return found[0] as BusEvent;
}

function lastCounters(events: EventLog, pid: number | undefined): Record<string, number> {
  const mine = events.events.filter((e) => e.type === 'counters' && e.pid === pid);
  return (mine.at(-1)?.counters ?? {}) as Record<string, number>;
}

describe('what the lease relies on, on this nats-server', () => {
  it('answers a +WPI request, and confirmed progress keeps a delivery past ack_wait; it also answers a stale one', async () => {
    const { spec, subject } = await setUp('progress');
    const [planned] = planHandlerConsumers(spec);
    if (!planned) throw new Error('no consumer planned');
    await ensureConsumer(jsm, planned);
    const js = jsm.jetstream();
    await js.publish(subject('m1'), JSON.stringify({ id: 'm1' }));
    const consumer = await js.consumers.get(spec.stream, planned.name);
    const m = await consumer.next({ expires: 5_000 });
    const reply = (m as unknown as { reply: string }).reply;
    const progress = new TextEncoder().encode('+WPI');
    const until = Date.now() + 2 * ACK_WAIT_MS;
    while (Date.now() < until) {
      const started = performance.now();
      await nc.request(reply, progress, { timeout: 1_000 });
      expect(performance.now() - started, 'the server confirms progress quickly').toBeLessThan(250);
      await new Promise((r) => setTimeout(r, timings.heartbeatMs));
    }
    expect((await jsm.consumers.info(spec.stream, planned.name)).num_redelivered, 'progress kept it').toBe(0);
    // Silent past ack_wait: redelivered; the first delivery's progress request is still answered,
    // which is why a reply extends the lease only when it arrives within it.
    const again = await consumer.next({ expires: 2 * ACK_WAIT_MS });
    expect(again?.info.deliveryCount).toBe(2);
    await expect(nc.request(reply, progress, { timeout: 1_000 })).resolves.toBeDefined();
    await again?.ackAck();
  });
});

describe('handler lease (own nats-server, worker processes)', () => {
  it('a replica stalled past ack_wait never acks its late completion, so the next message for the key waits for the redelivered one', async () => {
    const { spec, subject } = await setUp('stall');
    const eventsSubject = `leaseev.${uniqueSuffix()}`;
    const events = new EventLog(nc, eventsSubject);
    const [a, b] = [startWorker(spec, eventsSubject), startWorker(spec, eventsSubject)];
    await ready(events, [a, b]);
    const js = jsm.jetstream();
    // m1: the first replica blocks its event loop for 2 × ack_wait, then applies the effect; the
    // redelivered attempt holds for long enough that the stalled one finishes first.
    await js.publish(
      subject('m1'),
      JSON.stringify({ id: 'm1', stallOnFirstMs: 2 * ACK_WAIT_MS, holdOnRetryMs: 3 * ACK_WAIT_MS }),
    );
    await js.publish(subject('m2'), JSON.stringify({ id: 'm2' }));

    const m2End = await events.waitFor('m2 to end', (e) => e.type === 'end' && e.id === 'm2', 40_000);
    await events.waitFor(
      'the redelivered m1 to end',
      (e) => e.type === 'end' && e.id === 'm1' && e.deliveryCount === 2,
    );
    const stalled = only(
      events,
      (e) => e.type === 'start' && e.id === 'm1' && e.deliveryCount === 1,
      'one first attempt',
    );
    const redelivered = only(
      events,
      (e) => e.type === 'start' && e.id === 'm1' && e.deliveryCount === 2,
      'm1 must be redelivered exactly once after the stall',
    );
    expect(redelivered.pid, 'the redelivery goes to the other replica').not.toBe(stalled.pid);
    const redeliveredEnd = only(
      events,
      (e) => e.type === 'end' && e.id === 'm1' && e.deliveryCount === 2,
      'end',
    );
    const m2Start = only(events, (e) => e.type === 'start' && e.id === 'm2', 'm2 runs once');
    const stalledEnd = only(
      events,
      (e) => e.type === 'end' && e.id === 'm1' && e.deliveryCount === 1,
      'stale end',
    );
    expect(stalledEnd.t, 'the stalled attempt completes while the redelivered one still runs').toBeLessThan(
      redeliveredEnd.t,
    );
    expect(
      m2Start.t,
      'the next message for the key started while the redelivered attempt still ran: a late ack from the stalled replica freed the partition',
    ).toBeGreaterThanOrEqual(redeliveredEnd.t);
    expect(m2End.t).toBeGreaterThan(m2Start.t);
    // The stalled replica abandoned m1 and acked only m2, if it ran it.
    await expect
      .poll(() => lastCounters(events, stalled.pid), { timeout: 2_000 })
      .toMatchObject({ abandoned: 1, processed: m2Start.pid === stalled.pid ? 1 : 0 });
    events.close();
  });

  it('negative control: the server itself frees the partition on a late ack from a redelivered attempt', async () => {
    const { spec, subject } = await setUp('control');
    const eventsSubject = `leaseev.${uniqueSuffix()}`;
    const events = new EventLog(nc, eventsSubject);
    const [planned] = planHandlerConsumers(spec);
    if (!planned) throw new Error('no consumer planned');
    await ensureConsumer(jsm, planned);
    const js = jsm.jetstream();
    await js.publish(subject('m1'), JSON.stringify({ id: 'm1', holdOnRetryMs: 3 * ACK_WAIT_MS }));
    await js.publish(subject('m2'), JSON.stringify({ id: 'm2' }));
    // The old runtime, as a stalled replica: it takes m1, is silent past ack_wait, then acks anyway.
    const taken = await (await js.consumers.get(spec.stream, planned.name)).next({ expires: 5_000 });
    expect(taken?.info.deliveryCount).toBe(1);
    const replicas = [startWorker(spec, eventsSubject), startWorker(spec, eventsSubject)];
    await ready(events, replicas);
    await events.waitFor('m1 redelivered', (e) => e.type === 'start' && e.id === 'm1', 15_000);
    expect(await taken?.ackAck(), 'the server accepts the stale ack').toBe(true);
    const m2Start = await events.waitFor('m2 start', (e) => e.type === 'start' && e.id === 'm2', 15_000);
    const m1End = await events.waitFor('m1 end', (e) => e.type === 'end' && e.id === 'm1', 15_000);
    expect(
      m2Start.t,
      'with a late ack, m2 overlaps the redelivered m1 (the defect the lease prevents)',
    ).toBeLessThan(m1End.t);
    events.close();
  });

  it('a hung handler is cut at its deadline and its partition is released only after ack_wait, never before', async () => {
    const { spec, subject } = await setUp('hung');
    const eventsSubject = `leaseev.${uniqueSuffix()}`;
    const events = new EventLog(nc, eventsSubject);
    const handlerTimeoutMs = 2_000;
    const [a, b] = [
      startWorker(spec, eventsSubject, { handlerTimeoutMs }),
      startWorker(spec, eventsSubject, { handlerTimeoutMs }),
    ];
    await ready(events, [a, b]);
    const js = jsm.jetstream();
    await js.publish(subject('m1'), JSON.stringify({ id: 'm1', hangOnFirst: true }));
    await js.publish(subject('m2'), JSON.stringify({ id: 'm2' }));
    await events.waitFor('m2 to end', (e) => e.type === 'end' && e.id === 'm2', 30_000);

    const hung = only(events, (e) => e.type === 'start' && e.id === 'm1' && e.deliveryCount === 1, 'first');
    const aborted = only(
      events,
      (e) => e.type === 'aborted' && e.id === 'm1',
      'the deadline aborts the signal',
    );
    const retry = only(
      events,
      (e) => e.type === 'start' && e.id === 'm1' && e.deliveryCount === 2,
      'one retry',
    );
    const retryEnd = only(events, (e) => e.type === 'end' && e.id === 'm1', 'the retry completes');
    const m2Start = only(events, (e) => e.type === 'start' && e.id === 'm2', 'm2 once');
    expect(aborted.t - hung.t).toBeGreaterThanOrEqual(handlerTimeoutMs - 50);
    // Abandoned at deadline + grace; its last confirmed progress was at most one heartbeat before.
    const earliestRedelivery = aborted.t + HANDLER_GRACE_MS - timings.heartbeatMs + ACK_WAIT_MS;
    expect(
      retry.t,
      'the hung attempt was handed to another replica before ack_wait ran out after its last progress: its write may still be in flight',
    ).toBeGreaterThanOrEqual(earliestRedelivery - 100);
    expect(m2Start.t, 'm2 waits for the retried m1').toBeGreaterThanOrEqual(retryEnd.t);
    await expect
      .poll(() => lastCounters(events, hung.pid), { timeout: 2_000 })
      .toMatchObject({ timedOut: 1, abandoned: 1 });
    events.close();
  });
});
