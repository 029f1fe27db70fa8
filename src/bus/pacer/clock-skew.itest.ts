// A pacer replica whose clock is 90 s behind (more than the slot bucket's 60 s max_age) must not
// raise the fleet rate: slots are claimed on the server's clock (issue 9, item 10). The negative
// control claims on raw clocks and shows the doubling. Against a nats-server of our own.
import { type JetStreamManager, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OwnNatsServer, startOwnNats } from '../../../test/support/nats.ts';
import { DEFAULT_TOPOLOGY } from '../topology.ts';
import { PACER_BUCKET_OPTIONS, type Pacer, publishPaced, startPacer } from './pacer.ts';
import { SlotClaimer } from './slot-claimer.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
const RATE = 50;
const ITEMS = 150;
const SKEW_MS = -90_000;
const skewed = () => Date.now() + SKEW_MS;
let nats: OwnNatsServer;
const conns: NatsConnection[] = [];
let jsm: JetStreamManager;

async function conn(): Promise<NatsConnection> {
  const nc = await connect({ servers: nats.server.url });
  conns.push(nc);
  return nc;
}

beforeAll(async () => {
  nats = await startOwnNats('skew', log);
  jsm = await jetstreamManager(await conn());
  await jsm.streams.add({ name: 'FANOUT', subjects: ['fan.>'], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: 'WORK', subjects: ['work.>'] });
  await jsm.streams.add({ name: 'DLQ', subjects: ['dlq.>'] });
});

afterAll(async () => {
  for (const nc of conns) await nc.close();
  await nats?.stop();
});

/** Releases per second over the whole run and the most in any one-second window, from server stamps. */
function rates(times: number[]): { rate: number; maxInOneSecond: number } {
  const sorted = [...times].sort((a, b) => a - b);
  let maxInOneSecond = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while ((sorted[i] ?? 0) - (sorted[j] ?? 0) >= 1000) j++;
    maxInOneSecond = Math.max(maxInOneSecond, i - j + 1);
  }
  const span = ((sorted.at(-1) ?? 0) - (sorted[0] ?? 0)) / 1000;
  return { rate: (sorted.length - 1) / span, maxInOneSecond };
}

describe('pacer with a skewed replica clock', () => {
  it('holds the fleet rate when one of two replicas runs 90 s behind', async () => {
    const common = {
      log,
      concern: 'skew',
      stream: 'FANOUT',
      durable: 'pacer',
      filterSubject: 'fan.>',
      bucket: 'slots',
      ratePerSecond: RATE,
      deadLetterSubject: 'dlq.pacer',
      bucketReplicas: DEFAULT_TOPOLOGY.streamReplicas,
    };
    const pacers: Pacer[] = [
      await startPacer({ ...common, nc: await conn(), owner: 'on-time' }),
      await startPacer({ ...common, nc: await conn(), owner: 'behind', clock: skewed }),
    ];
    try {
      const js = jsm.jetstream();
      await Promise.all(
        Array.from({ length: ITEMS }, (_, i) =>
          publishPaced(js, 'fan.c', { subject: `work.i${i}`, payload: { i } }),
        ),
      );
      await expect
        .poll(async () => (await jsm.streams.info('WORK')).state.messages, { timeout: 20_000 })
        .toBe(ITEMS);
      const times: number[] = [];
      for (let seq = 1; seq <= ITEMS; seq++)
        times.push((await jsm.streams.getMessage('WORK', { seq }))?.time.getTime() ?? 0);
      const { rate, maxInOneSecond } = rates(times);
      const released = pacers.map((p) => p.counters().itemsReleased);
      process.stderr.write(
        `[skew] ${rate.toFixed(1)}/s, max ${maxInOneSecond} in 1 s, released per replica ${released}\n`,
      );
      expect(rate, 'a replica 90 s behind must not add its own rate to the fleet’s').toBeLessThan(RATE * 1.1);
      expect(maxInOneSecond).toBeLessThanOrEqual(RATE * 1.1);
      // Only that both take part, so the skewed one's slots are really tested: how the work splits
      // between two pullers follows the scheduler (28 of 150 seen on a loaded 2-core machine).
      for (const n of released) expect(n, 'both replicas release').toBeGreaterThan(ITEMS * 0.1);
    } finally {
      await Promise.all(pacers.map((p) => p.stop()));
    }
  });

  it('negative control: on raw clocks, the replica 90 s behind wins slots the bucket already expired', async () => {
    const kv = await new Kvm(await conn()).create('rawslots', PACER_BUCKET_OPTIONS);
    const claimers = [
      new SlotClaimer({ kv, ratePerSecond: RATE, owner: 'on-time' }),
      new SlotClaimer({ kv, ratePerSecond: RATE, owner: 'behind', clock: skewed }),
    ];
    const signal = new AbortController().signal;
    const started = Date.now();
    const wins = await Promise.all(
      claimers.map(async (c) => {
        let n = 0;
        while (Date.now() - started < 2_000) {
          await c.claim(signal);
          n++;
        }
        return n;
      }),
    );
    const rate = wins.reduce((a, b) => a + b, 0) / 2;
    process.stderr.write(`[skew control] raw clocks: ${rate.toFixed(1)}/s (wins ${wins})\n`);
    expect(rate, 'without the server clock the fleet rate doubles').toBeGreaterThan(RATE * 1.6);
  });
});
