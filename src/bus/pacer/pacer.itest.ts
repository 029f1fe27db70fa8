// The pacer against the local cluster's JetStream, with two pacer processes
// (test/fixtures/bus-pacer.ts): the configured rate holds for the fleet, not per replica.
import { type JetStreamManager, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PacerFixtureConfig } from '../../../test/fixtures/bus-pacer.ts';
import { EventLog, spawnFixture, uniqueSuffix } from '../../../test/fixtures/bus-support.ts';
import { useLocalCluster } from '../../../test/support/local-cluster.ts';
import { connectNats } from '../../../test/support/nats.ts';
import type { ManagedProcess } from '../../../test/support/processes.ts';
import { publishPaced } from './pacer.ts';

const { info } = useLocalCluster();
const run = uniqueSuffix();
const FANOUT = `ITEST_PC_FAN_${run}`;
const WORK = `ITEST_PC_WORK_${run}`;
const DLQ = `ITEST_PC_DLQ_${run}`;
const BUCKET = `itpc_slots_${run}`;
const RATE = 50;
const ITEMS = 200;

let nc: NatsConnection;
let jsm: JetStreamManager;
const pacers: ManagedProcess[] = [];

beforeAll(async () => {
  nc = await connectNats(info, { maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({
    name: FANOUT,
    subjects: [`itpcfan${run}.>`],
    retention: RetentionPolicy.Workqueue,
  });
  await jsm.streams.add({ name: WORK, subjects: [`itpcwork${run}.>`], retention: RetentionPolicy.Limits });
  await jsm.streams.add({ name: DLQ, subjects: [`itpcdlq${run}.>`] });
});

afterAll(async () => {
  await Promise.all(pacers.map((p) => p.stop(3_000)));
  for (const s of [FANOUT, WORK, DLQ, `KV_${BUCKET}`]) await jsm.streams.delete(s).catch(() => false);
  await nc.drain();
});

describe('paced fan-out', () => {
  it(`releases ${ITEMS} items at ${RATE}/s across two pacer processes (fleet-wide, ±10%)`, async () => {
    const eventsSubject = `itpc${run}.events`;
    const events = new EventLog(nc, eventsSubject);
    const config: PacerFixtureConfig = {
      natsUrl: info.natsUrl,
      natsCaFile: info.natsCaFile,
      stream: FANOUT,
      durable: 'pacer',
      filterSubject: `itpcfan${run}.>`,
      bucket: BUCKET,
      ratePerSecond: RATE,
      deadLetterSubject: `itpcdlq${run}.pacer`,
      eventsSubject,
    };
    for (let i = 0; i < 2; i++) {
      pacers.push(spawnFixture(info.dir, 'bus-pacer.ts', { BUS_PACER_CONFIG: JSON.stringify(config) }));
    }
    for (const p of pacers)
      await events.waitFor(`pacer ${p.pid} ready`, (e) => e.type === 'ready' && e.pid === p.pid);

    // One change → ITEMS work items, all in the backlog at once.
    const js = jsm.jetstream();
    await Promise.all(
      Array.from({ length: ITEMS }, (_, i) =>
        publishPaced(js, `itpcfan${run}.change-1`, { subject: `itpcwork${run}.cfg.c${i}`, payload: { i } }),
      ),
    );
    await expect
      .poll(async () => (await jsm.streams.info(WORK)).state.messages, { timeout: 20_000, interval: 250 })
      .toBe(ITEMS);

    // Release times are the work stream's storage timestamps (one clock: the server's).
    const times: number[] = [];
    for (let seq = 1; seq <= ITEMS; seq++) {
      const m = await jsm.streams.getMessage(WORK, { seq });
      if (!m) throw new Error(`work message ${seq} missing`);
      times.push(m.time.getTime());
      if (seq === 1) expect(m.json<{ i: number }>()).toHaveProperty('i');
    }
    const spanS = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / 1000;
    const rate = (ITEMS - 1) / spanS;
    let maxInOneSecond = 0;
    for (let i = 0, j = 0; i < times.length; i++) {
      while ((times[i] ?? 0) - (times[j] ?? 0) >= 1000) j++;
      maxInOneSecond = Math.max(maxInOneSecond, i - j + 1);
    }
    // Who released what: each slot token's value is its winner.
    const kv = await new Kvm(nc).open(BUCKET);
    const owners = new Map<string, number>();
    for await (const key of await kv.keys('slot.>')) {
      const owner = (await kv.get(key))?.string() ?? '?';
      owners.set(owner, (owners.get(owner) ?? 0) + 1);
    }
    process.stderr.write(
      `[pacer] ${ITEMS} items in ${spanS.toFixed(2)} s = ${rate.toFixed(1)}/s (target ${RATE}/s); ` +
        `max in any 1 s window ${maxInOneSecond}; slots won per replica ${JSON.stringify(Object.fromEntries(owners))}\n`,
    );
    expect(
      rate,
      'the fleet-wide release rate must be the configured one, not one per replica',
    ).toBeGreaterThan(RATE * 0.9);
    expect(rate).toBeLessThan(RATE * 1.1);
    // Claims are at most one per slot (51 per second); publish latency jitter can shift a release by a few ms.
    expect(maxInOneSecond, 'no burst above the rate in any one-second window').toBeLessThanOrEqual(
      RATE * 1.1,
    );
    expect(owners.size, 'both pacer processes must have released items').toBe(2);
    for (const n of owners.values()) expect(n).toBeGreaterThan(ITEMS * 0.2);
    const fan = await jsm.consumers.info(FANOUT, 'pacer');
    expect(fan.num_pending + fan.num_ack_pending, 'every item acked after release').toBe(0);
    events.close();
  });
});
