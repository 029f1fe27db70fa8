// A message whose attempts all fail on the bus (not on itself) is republished afresh, never
// dead-lettered; a real failure still is. Against a nats-server of our own.
import { type JetStreamManager, jetstreamManager, RetentionPolicy } from '@nats-io/jetstream';
import { connect, type NatsConnection, TimeoutError } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type OwnNatsServer, startOwnNats } from '../../../test/support/nats.ts';
import { startHandlerRuntime } from './handler-runtime.ts';
import { done } from './outcome.ts';
import { REPUBLISHED_FROM_HEADER } from './republish.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn' });
let nats: OwnNatsServer;
let nc: NatsConnection;
let jsm: JetStreamManager;

beforeAll(async () => {
  nats = await startOwnNats('infra', log);
  nc = await connect({ servers: nats.server.url });
  jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: 'W', subjects: ['w.>'], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: 'DLQ', subjects: ['dlq.>'] });
});

afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

describe('bus failures are not poison', () => {
  it('republishes a message whose whole attempt budget failed on the bus, and dead-letters a real failure', async () => {
    const origins: Array<string | undefined> = [];
    let busFailures = 3;
    const runtime = await startHandlerRuntime({
      nc,
      log,
      concern: 'infra',
      consumers: {
        mode: 'shared',
        stream: 'W',
        durable: 'infra',
        filterSubject: 'w.>',
        ackWaitMs: 5_000,
        maxDeliver: 2,
      },
      schema: z.object({ kind: z.enum(['bus', 'bug']) }),
      deadLetterSubject: 'dlq.infra',
      errorBackoff: { baseMs: 50, maxMs: 100 },
      handle: async (item, ctx) => {
        if (item.kind === 'bug') throw new Error('a real bug');
        origins.push(ctx.headers?.get(REPUBLISHED_FROM_HEADER) || undefined);
        if (busFailures-- > 0) throw new TimeoutError();
        return done;
      },
    });
    try {
      const js = jsm.jetstream();
      const first = await js.publish('w.a', JSON.stringify({ kind: 'bus' }), { msgID: 'bus-1' });
      await js.publish('w.b', JSON.stringify({ kind: 'bug' }));
      await expect.poll(() => runtime.counters().processed, { timeout: 15_000 }).toBe(1);
      await expect.poll(() => runtime.counters().deadLettered, { timeout: 15_000 }).toBe(1);
      expect(runtime.counters()).toMatchObject({ republished: 1, deadLettered: 1 });
      // Two attempts on the original, then the copy (which the original's msg id must not have deduplicated).
      expect(origins).toEqual([undefined, undefined, `W:${first.seq}`, `W:${first.seq}`]);
      const dlq = await jsm.streams.getMessage('DLQ', { seq: 1 });
      expect(dlq?.json<{ kind: string }>().kind, 'only the real bug is dead-lettered').toBe('bug');
    } finally {
      await runtime.stop();
    }
  });
});
