// Handler runtime against a real JetStream (the local cluster's nats-server), in-process:
// poison messages are dead-lettered without blocking the rest, and a deleted consumer comes back.
import {
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { uniqueSuffix } from '../../../test/fixtures/bus-support.ts';
import { useLocalCluster } from '../../../test/support/local-cluster.ts';
import { connectNats } from '../../../test/support/nats.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { ensureConsumer, planHandlerConsumers } from './consumers.ts';
import { readDeadLetter } from './dead-letter.ts';
import { type HandlerRuntime, startHandlerRuntime } from './handler-runtime.ts';
import { done } from './outcome.ts';
import { partitionedSubject } from './partition.ts';

const { info } = useLocalCluster();
const log = pino({ level: process.env.LOG_LEVEL ?? 'error', name: 'runtime-itest' });
const run = uniqueSuffix();
const STREAM = `ITEST_RT_${run}`;
const DLQ_STREAM = `ITEST_RT_DLQ_${run}`;
const subj = (s: string) => `itrt${run}.${s}`;
const dlqSubject = `itrtdlq${run}.poison`;

let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;

beforeAll(async () => {
  nc = await connectNats(info, { maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
  js = jsm.jetstream();
  await jsm.streams.add({ name: STREAM, subjects: [subj('>')], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: DLQ_STREAM, subjects: [`itrtdlq${run}.>`] });
});

afterAll(async () => {
  await jsm.streams.delete(STREAM).catch(() => undefined);
  await jsm.streams.delete(DLQ_STREAM).catch(() => undefined);
  await nc.drain();
});

const itemSchema = z.object({ n: z.number().int(), poison: z.boolean().optional() });

describe('handler runtime', () => {
  it('dead-letters an invalid message at once and an always-failing one after max_deliver, while later messages keep flowing', async () => {
    const processedAt = new Map<number, number>();
    let poisonAttempts = 0;
    const runtime: HandlerRuntime = await startHandlerRuntime({
      nc,
      concern: 'poison',
      log,
      consumers: {
        mode: 'shared',
        stream: STREAM,
        durable: 'poison',
        filterSubject: subj('poison.>'),
        ackWaitMs: 5_000,
        maxDeliver: 4,
      },
      concurrency: 2,
      schema: itemSchema,
      deadLetterSubject: dlqSubject,
      errorBackoff: { baseMs: 300, maxMs: 2_000, jitter: 0 },
      handle: async (item) => {
        if (item.poison) {
          poisonAttempts++;
          throw new Error(`handler always fails for item ${item.n}`);
        }
        processedAt.set(item.n, Date.now());
        return done;
      },
    });
    try {
      const invalid = await js.publish(subj('poison.a'), JSON.stringify({ n: 'not-a-number' }));
      const notJson = await js.publish(subj('poison.a'), '{"n": 1');
      const poison = await js.publish(subj('poison.b'), JSON.stringify({ n: 0, poison: true }));
      for (let n = 1; n <= 30; n++) await js.publish(subj('poison.c'), JSON.stringify({ n }));

      // Dead-letter records: two invalid ones at once, the failing one after its 4 attempts.
      const dlq = await js.consumers.get(DLQ_STREAM);
      const records: Array<ReturnType<typeof readDeadLetter> & { at2: number }> = [];
      while (records.length < 3) {
        const m = await dlq.next({ expires: 10_000 });
        if (!m) throw new Error(`only ${records.length} dead-letter records arrived`);
        records.push({ ...readDeadLetter(m), at2: Date.now() });
      }
      const bySeq = new Map(records.map((r) => [r.originalSeq, r]));
      const invalidRec = bySeq.get(invalid.seq);
      const notJsonRec = bySeq.get(notJson.seq);
      const poisonRec = bySeq.get(poison.seq);
      expect(invalidRec?.kind, 'a payload that fails its schema must be dead-lettered, not retried').toBe(
        'invalid',
      );
      expect(invalidRec?.deliveryCount).toBe(1);
      expect(invalidRec?.reason).toMatch(/schema validation failed/);
      expect(notJsonRec?.kind).toBe('invalid');
      expect(notJsonRec?.reason).toMatch(/undecodable/);
      expect(poisonRec, 'the always-failing message must reach the dead-letter subject').toBeDefined();
      expect(poisonRec?.kind).toBe('max-deliver');
      expect(poisonRec?.deliveryCount).toBe(4);
      expect(poisonRec?.originalSubject).toBe(subj('poison.b'));
      expect(poisonRec?.originalStream).toBe(STREAM);
      expect(poisonRec?.reason).toMatch(/handler always fails/);
      expect(poisonAttempts).toBe(4);

      // Everything published after the poison message was processed while it was still being retried.
      await waitFor('30 good messages', () => (processedAt.size === 30 ? true : undefined));
      const lastGood = Math.max(...processedAt.values());
      expect(
        lastGood,
        'messages behind a poison message must not wait for its retries to run out',
      ).toBeLessThan(poisonRec?.at2 ?? 0);

      // A record is published before its original is acked: give the ack its moment.
      await waitFor('the dead-lettered originals acked', async () => {
        const ci = await jsm.consumers.info(STREAM, 'poison');
        return ci.num_pending + ci.num_ack_pending === 0 ? true : undefined;
      });
      // The runtime counts a dead letter once its ack is confirmed, a moment after the server applied it.
      await expect.poll(() => runtime.counters().deadLettered, { timeout: 5_000 }).toBe(3);
      expect(runtime.counters()).toMatchObject({ processed: 30, deadLettered: 3, invalid: 2, retried: 3 });
    } finally {
      await runtime.stop();
    }
  });

  it('dead-letters a message whose worker died on its last attempt, without running the handler again', async () => {
    const spec = {
      mode: 'shared' as const,
      stream: STREAM,
      durable: 'lastgasp',
      filterSubject: subj('lastgasp.>'),
      ackWaitMs: 3_000,
      maxDeliver: 1,
    };
    const pub = await js.publish(subj('lastgasp.x'), JSON.stringify({ n: 1 }));
    // A "worker" that takes the message (its only handler attempt) and dies without a verdict.
    const [planned] = planHandlerConsumers(spec);
    if (!planned) throw new Error('no consumer planned');
    await ensureConsumer(jsm, planned);
    const taken = await (await js.consumers.get(STREAM, 'lastgasp')).next({ expires: 5_000 });
    expect(taken?.info.deliveryCount).toBe(1);

    let handlerRuns = 0;
    const runtime = await startHandlerRuntime({
      nc,
      concern: 'lastgasp',
      log,
      consumers: spec,
      schema: itemSchema,
      deadLetterSubject: `itrtdlq${run}.lastgasp`,
      handle: async () => {
        handlerRuns++;
        return done;
      },
    });
    try {
      const dlq = await js.consumers.get(DLQ_STREAM, { filter_subjects: `itrtdlq${run}.lastgasp` });
      const m = await dlq.next({ expires: 10_000 });
      if (!m)
        throw new Error('no dead-letter record: a message that exhausted its attempts was silently dropped');
      const rec = readDeadLetter(m);
      expect(rec).toMatchObject({ kind: 'max-deliver', originalSeq: pub.seq, deliveryCount: 2 });
      expect(rec.reason).toMatch(/no verdict after 1 handler attempts/);
      expect(handlerRuns).toBe(0);
    } finally {
      await runtime.stop();
    }
  });

  it('re-adds deleted partition consumers, still with max_ack_pending 1, and keeps processing', async () => {
    const seen = new Set<number>();
    const prefix = subj('recreate');
    const runtime = await startHandlerRuntime({
      nc,
      concern: 'recreate',
      log,
      consumers: {
        mode: 'partitioned',
        stream: STREAM,
        durable: 'recreate',
        prefix,
        partitions: 2,
        ackWaitMs: 5_000,
        maxDeliver: 3,
      },
      schema: itemSchema,
      deadLetterSubject: dlqSubject,
      pullExpiresMs: 2_000,
      handle: async (item) => {
        seen.add(item.n);
        return done;
      },
    });
    try {
      const publish = (n: number) =>
        js.publish(partitionedSubject(prefix, [`k${n % 5}`], 2), JSON.stringify({ n }));
      for (let n = 0; n < 10; n++) await publish(n);
      await waitFor('first batch', () => (seen.size === 10 ? true : undefined));

      await jsm.consumers.delete(STREAM, 'recreate-p0');
      await jsm.consumers.delete(STREAM, 'recreate-p1');
      for (let n = 10; n < 20; n++) await publish(n);
      await waitFor(
        'second batch after the consumers were deleted',
        () => (seen.size === 20 ? true : undefined),
        {
          timeoutMs: 20_000,
        },
      );

      expect(runtime.counters().consumersRecreated).toBeGreaterThanOrEqual(2);
      const p0 = await jsm.consumers.info(STREAM, 'recreate-p0');
      expect(p0.config.max_ack_pending, 'a recreated partition consumer must still serialize').toBe(1);
    } finally {
      await runtime.stop();
    }
  });
});
