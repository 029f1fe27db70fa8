// The pacer across a nats-server restart (SIGKILL mid-fan-out), on a server of our own: the slot
// bucket survives, claims that fail while the server is down are retried as bus failures, and every
// item is released exactly once with none dead-lettered (issue 9, item 3).
import { type JetStreamManager, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PacerFixtureConfig } from '../../../test/fixtures/bus-pacer.ts';
import { EventLog, spawnFixture } from '../../../test/fixtures/bus-support.ts';
import { type OwnNatsServer, startOwnNats } from '../../../test/support/nats.ts';
import type { ManagedProcess } from '../../../test/support/processes.ts';
import { publishPaced } from './pacer.ts';

const RATE = 50;
const ITEMS = 200;
let nats: OwnNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;
const pacers: ManagedProcess[] = [];

beforeAll(async () => {
  nats = await startOwnNats('pacer-restart', pino({ level: process.env.LOG_LEVEL ?? 'warn' }));
  nc = await connect({ servers: nats.server.url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'FANOUT', subjects: ['fan.>'], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: 'WORK', subjects: ['work.>'] });
  await jsm.streams.add({ name: 'DLQ', subjects: ['dlq.>'] });
});

afterAll(async () => {
  await Promise.all(pacers.map((p) => p.stop(3_000)));
  await nc?.close();
  await nats?.stop();
});

describe('pacer across a NATS restart', () => {
  it('releases every item exactly once and dead-letters none when nats-server is SIGKILLed mid-fan-out', async () => {
    const events = new EventLog(nc, 'pacer.events');
    const config: PacerFixtureConfig = {
      natsUrl: nats.server.url,
      stream: 'FANOUT',
      durable: 'pacer',
      filterSubject: 'fan.>',
      bucket: 'slots',
      ratePerSecond: RATE,
      deadLetterSubject: 'dlq.pacer',
      eventsSubject: 'pacer.events',
      ackWaitMs: 4_000,
      // A small budget, so an outage longer than it exercises the republish path instead of the DLQ.
      maxDeliver: 3,
    };
    for (let i = 0; i < 2; i++) {
      pacers.push(spawnFixture(nats.dir, 'bus-pacer.ts', { BUS_PACER_CONFIG: JSON.stringify(config) }));
    }
    for (const p of pacers)
      await events.waitFor(`pacer ${p.pid} ready`, (e) => e.type === 'ready' && e.pid === p.pid);

    const js = jsm.jetstream();
    await Promise.all(
      Array.from({ length: ITEMS }, (_, i) =>
        publishPaced(js, 'fan.change-1', { subject: `work.c${i}`, payload: { i } }),
      ),
    );
    // Mid-fan-out: about a third released.
    await expect
      .poll(async () => (await jsm.streams.info('WORK')).state.messages, { timeout: 20_000 })
      .toBeGreaterThan(60);
    await nats.server.restart({ kill: true });

    await expect
      .poll(
        async () => {
          const fan = await jsm.consumers.info('FANOUT', 'pacer').catch(() => undefined);
          return fan ? fan.num_pending + fan.num_ack_pending : -1;
        },
        { timeout: 90_000, interval: 500 },
      )
      .toBe(0);
    const released = new Map<number, number>();
    const work = await jsm.streams.info('WORK');
    for (let seq = work.state.first_seq; seq <= work.state.last_seq; seq++) {
      const m = await jsm.streams.getMessage('WORK', { seq });
      const i = m?.json<{ i: number }>().i ?? -1;
      released.set(i, (released.get(i) ?? 0) + 1);
    }
    const twice = [...released].filter(([, n]) => n > 1).map(([i]) => i);
    const counters = pacers.map(
      (p) => events.events.filter((e) => e.type === 'counters' && e.pid === p.pid).at(-1)?.counters,
    );
    process.stderr.write(
      `[pacer-restart] released ${released.size} distinct of ${ITEMS}; counters ${JSON.stringify(counters)}\n`,
    );
    expect(twice, 'items released twice (the work stream dedups by release message id)').toEqual([]);
    expect(released.size, 'every item released').toBe(ITEMS);
    expect((await jsm.streams.info('DLQ')).state.messages, 'a NATS restart must dead-letter nothing').toBe(0);
    events.close();
  });
});
