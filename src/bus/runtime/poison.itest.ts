// Fuzz against a real JetStream: a few hundred messages, valid ones and fuzzed poison (random
// bytes, broken JSON, invalid UTF-8, the wrong schema, 10^4 levels of nesting, hostile record
// keys that end up in the reason, an oversize valid payload) and replayed message ids, published
// to one consumer. Nothing valid is lost (each processed exactly once), every poison message is
// in the dead-letter stream with its reason, a replayed id is stored once, and the consumer is
// never wedged (it drains, and takes new work after).
import {
  type JetStreamClient,
  type JetStreamManager,
  jetstreamManager,
  RetentionPolicy,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { uniqueSuffix } from '../../../test/fixtures/bus-support.ts';
import { useLocalCluster } from '../../../test/support/local-cluster.ts';
import { connectNats } from '../../../test/support/nats.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { type DeadLetterRecord, readDeadLetter } from './dead-letter.ts';
import { startHandlerRuntime } from './handler-runtime.ts';
import { done } from './outcome.ts';

const { info } = useLocalCluster();
const log = pino({ level: process.env.LOG_LEVEL ?? 'error', name: 'poison-itest' });
const run = uniqueSuffix();
const STREAM = `ITEST_PZ_${run}`;
const DLQ_STREAM = `ITEST_PZ_DLQ_${run}`;
const subject = `itpz${run}.work.items`;
const dlqSubject = `itpzdlq${run}.items`;

const MESSAGES = 300;

let nc: NatsConnection;
let jsm: JetStreamManager;
let js: JetStreamClient;

beforeAll(async () => {
  nc = await connectNats(info, { maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc);
  js = jsm.jetstream();
  await jsm.streams.add({ name: STREAM, subjects: [`itpz${run}.>`], retention: RetentionPolicy.Workqueue });
  await jsm.streams.add({ name: DLQ_STREAM, subjects: [`itpzdlq${run}.>`] });
});

afterAll(async () => {
  await jsm.streams.delete(STREAM).catch(() => undefined);
  await jsm.streams.delete(DLQ_STREAM).catch(() => undefined);
  await nc.drain();
});

const itemSchema = z.object({
  n: z.int().min(0),
  tag: z.string().min(1),
  labels: z.record(z.string(), z.string()).optional(),
});

const utf8 = (s: string) => new TextEncoder().encode(s);

/** A poison payload: each fails decoding or the schema, whatever the handler would do. */
const poison: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 200 }),
  fc.string({ maxLength: 100 }).map((s) => utf8(`{"n":${JSON.stringify(s)}`)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => utf8(JSON.stringify({ n: -1, tag: v }))),
  fc
    .jsonValue({ maxDepth: 2 })
    .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
    .map((v) => utf8(JSON.stringify(v))),
  // Keys the sender chose end up in the reason, and the reason in a header.
  fc
    .dictionary(fc.string({ minLength: 1, maxLength: 12, unit: 'binary' }), fc.integer(), {
      minKeys: 1,
      maxKeys: 3,
    })
    .map((labels) => utf8(JSON.stringify({ n: 1, tag: 't', labels }))),
  fc.constant(Uint8Array.from([...utf8('{"n":1,"tag":"'), 0xff, ...utf8('"}')])),
  fc
    .integer({ min: 1_000, max: 10_000 })
    .map((depth) => utf8(`{"n":1,"tag":${'['.repeat(depth)}${']'.repeat(depth)}}`)),
);

type Planned =
  | { kind: 'valid'; n: number; data: Uint8Array; replay: boolean }
  | { kind: 'poison'; data: Uint8Array };

function plan(): Planned[] {
  const [shapes] = fc.sample(
    fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), poison, fc.boolean()), {
      minLength: MESSAGES,
      maxLength: MESSAGES,
    }),
    { numRuns: 1, seed: 29 },
  );
  let n = 0;
  return (shapes ?? []).map(([which, bad, replay]): Planned => {
    if (which === 0) return { kind: 'poison', data: bad };
    n++;
    // One valid message in fifty is large (half a MiB): oversize is not poison.
    const tag = n % 50 === 0 ? 'x'.repeat(512 * 1024) : `item-${n}`;
    return { kind: 'valid', n, data: utf8(JSON.stringify({ n, tag })), replay };
  });
}

describe('the handler runtime under fuzzed poison, on a real JetStream', () => {
  it('processes every valid message once, dead-letters every poison one with its reason, stores a replayed id once, never wedges', async () => {
    const planned = plan();
    const processed = new Map<number, number>();
    const runtime = await startHandlerRuntime({
      nc,
      concern: 'poison-fuzz',
      log,
      consumers: {
        mode: 'shared',
        stream: STREAM,
        durable: 'poison-fuzz',
        filterSubject: `itpz${run}.work.>`,
        ackWaitMs: 10_000,
        maxDeliver: 3,
      },
      concurrency: 2,
      schema: itemSchema,
      deadLetterSubject: dlqSubject,
      handle: async (item) => {
        processed.set(item.n, (processed.get(item.n) ?? 0) + 1);
        return done;
      },
    });
    try {
      const poisonSeqs = new Set<number>();
      let duplicates = 0;
      for (const message of planned) {
        if (message.kind === 'poison') {
          poisonSeqs.add((await js.publish(subject, message.data)).seq);
          continue;
        }
        const msgID = `item-${message.n}`;
        const first = await js.publish(subject, message.data, { msgID });
        expect(first.duplicate).toBe(false);
        if (message.replay) {
          const again = await js.publish(subject, message.data, { msgID });
          expect(again.duplicate, 'a replayed Nats-Msg-Id within the window must be stored once').toBe(true);
          expect(again.seq).toBe(first.seq);
          duplicates++;
        }
      }
      const valid = planned.filter((p) => p.kind === 'valid');
      expect(valid.length).toBeGreaterThan(100);
      expect(poisonSeqs.size).toBeGreaterThan(50);
      expect(duplicates).toBeGreaterThan(10);

      // Every poison message in the dead-letter stream, each once, with what is wrong.
      const dlq = await js.consumers.get(DLQ_STREAM);
      const records = new Map<number, DeadLetterRecord>();
      while (records.size < poisonSeqs.size) {
        const m = await dlq.next({ expires: 15_000 });
        if (!m)
          throw new Error(`only ${records.size} of ${poisonSeqs.size} poison messages were dead-lettered`);
        const record = readDeadLetter(m);
        expect(records.has(record.originalSeq), `seq ${record.originalSeq} dead-lettered twice`).toBe(false);
        records.set(record.originalSeq, record);
      }
      for (const seq of poisonSeqs) {
        const record = records.get(seq);
        expect(record, `poison seq ${seq} is missing from the dead-letter stream`).toBeDefined();
        expect(record?.kind).toBe('invalid');
        expect(record?.deliveryCount).toBe(1);
        expect(record?.reason).toMatch(/^(undecodable payload|schema validation failed): \S/);
      }

      // Nothing valid lost, nothing processed twice.
      await waitFor('every valid message processed', () =>
        processed.size === valid.length ? true : undefined,
      );
      for (const v of valid) expect(processed.get(v.n), `item ${v.n}`).toBe(1);

      // Not wedged: the consumer drains, and takes new work after the storm.
      await waitFor('the consumer drained', async () => {
        const ci = await jsm.consumers.info(STREAM, 'poison-fuzz');
        return ci.num_pending + ci.num_ack_pending === 0 ? true : undefined;
      });
      await js.publish(subject, utf8(JSON.stringify({ n: 1_000_000, tag: 'after' })));
      await waitFor('work after the storm processed', () =>
        processed.get(1_000_000) === 1 ? true : undefined,
      );
      // The runtime counts a message once its ack is sent, a moment after the handler returned.
      await waitFor('the runtime to count the last ack', () =>
        runtime.counters().processed === valid.length + 1 ? true : undefined,
      );
      expect(runtime.counters()).toMatchObject({
        processed: valid.length + 1,
        deadLettered: poisonSeqs.size,
        invalid: poisonSeqs.size,
      });
    } finally {
      await runtime.stop();
    }
  });
});
