// Durable re-checks (message schedules in WORK) on a nats-server of the test's own, with the
// real topology: a re-check fires at its time, survives a SIGKILL of nats-server, a newer one
// replaces the older, and re-checking never spends the attempt budget (issue 11, the contract).
// A failing key's retries wait the same way, so they never hold back the keys of its partition.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type OwnBus, startOwnBus } from '../../../test/support/bus.ts';
import { STREAMS } from '../topology.ts';
import { readDeadLetter } from './dead-letter.ts';
import { startHandlerRuntime } from './handler-runtime.ts';
import { done, type Outcome, recheckAfter } from './outcome.ts';
import { partitionedSubject, partitionOf } from './partition.ts';
import { scheduleRecheck } from './recheck.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'recheck-itest' });
const PARTITIONS = 2;
const MAX_DELIVER = 3;
const triggerSchema = z.object({ key: z.string() });

interface Run {
  key: string;
  at: number;
  deliveryCount: number;
  recheckDueAtMs: number | undefined;
}

let bus: OwnBus;

beforeAll(async () => {
  bus = await startOwnBus();
});

afterAll(async () => {
  await bus?.stop();
});

/** A runtime over `work.<concern>.<p>.<key>` whose handler answers with `decide`; records every run. */
async function startRecorder(concern: string, decide: (run: Run, runsOfKey: number) => Outcome) {
  const runs: Run[] = [];
  const runtime = await startHandlerRuntime({
    nc: bus.nc,
    concern,
    log,
    consumers: {
      mode: 'partitioned',
      stream: STREAMS.work,
      durable: concern,
      prefix: `work.${concern}`,
      partitions: PARTITIONS,
      ackWaitMs: 4_000,
      maxDeliver: MAX_DELIVER,
    },
    schema: triggerSchema,
    deadLetterSubject: `dlq.${concern}`,
    pullExpiresMs: 1_000,
    handle: async ({ key }, ctx) => {
      const run = {
        key,
        at: Date.now(),
        deliveryCount: ctx.deliveryCount,
        recheckDueAtMs: ctx.recheckDueAtMs,
      };
      runs.push(run);
      return decide(run, runs.filter((r) => r.key === key).length);
    },
  });
  const trigger = (key: string) =>
    bus.js.publish(partitionedSubject(`work.${concern}`, [key], PARTITIONS), JSON.stringify({ key }));
  return { runtime, runs, trigger };
}

async function dlqCount(concern: string): Promise<number> {
  const info = await bus.jsm.streams.info(STREAMS.deadLetters, { subjects_filter: `dlq.${concern}` });
  return info.state.subjects?.[`dlq.${concern}`] ?? 0;
}

describe('durable re-check', () => {
  it('fires at its time, as a first delivery that says when it was due', async () => {
    const { runtime, runs, trigger } = await startRecorder('fire', (_r, n) =>
      n === 1 ? recheckAfter(1_500, 'lease expires') : done,
    );
    try {
      await trigger('a');
      await expect.poll(() => runs.length, { timeout: 10_000 }).toBe(2);
      const [first, second] = runs as [Run, Run];
      const due = second.recheckDueAtMs ?? Number.NaN;
      log.warn({ lateMs: second.at - due, afterMs: second.at - first.at }, 're-check fired');
      expect(due - first.at).toBeGreaterThanOrEqual(1_500);
      expect(second.at, 'never early').toBeGreaterThanOrEqual(due);
      expect(
        second.at - due,
        'on time: the server timer fires within its 250 ms floor, plus a pull',
      ).toBeLessThan(1_000);
      expect(second.deliveryCount).toBe(1);
      // The handler's run is recorded before its outcome is acked and counted.
      await expect
        .poll(() => runtime.counters(), { timeout: 5_000 })
        .toMatchObject({ rechecks: 1, processed: 1, retried: 0, deadLettered: 0 });
    } finally {
      await runtime.stop();
    }
  });

  it('survives a SIGKILL restart of nats-server: a re-check due during the outage fires after it', async () => {
    const { runtime, runs, trigger } = await startRecorder('restart', (_r, n) =>
      n === 1 ? recheckAfter(1_000, 'grace ends') : done,
    );
    try {
      await trigger('b');
      await expect.poll(() => runtime.counters().rechecks, { timeout: 10_000 }).toBe(1);
      const killedAt = Date.now();
      await bus.server.stop({ kill: true });
      await new Promise((r) => setTimeout(r, 2_000)); // the re-check falls due while the server is down
      await bus.server.launch();
      const upAt = Date.now();
      await expect.poll(() => runs.length, { timeout: 30_000 }).toBe(2);
      const fired = runs[1] as Run;
      log.warn(
        {
          downMs: upAt - killedAt,
          firedAfterUpMs: fired.at - upAt,
          lateMs: fired.at - (fired.recheckDueAtMs ?? 0),
        },
        're-check after SIGKILL',
      );
      expect(fired.recheckDueAtMs).toBeLessThan(upAt);
      expect(fired.deliveryCount).toBe(1);
    } finally {
      await runtime.stop();
    }
  });

  it('a newer re-check of a key replaces the older: only the newer fires', async () => {
    const { runtime, runs } = await startRecorder('replace', () => done);
    try {
      const subject = partitionedSubject('work.replace', ['c'], PARTITIONS);
      const data = new TextEncoder().encode(JSON.stringify({ key: 'c' }));
      const t0 = Date.now();
      await scheduleRecheck(bus.js, { subject, data, headers: undefined }, t0 + 1_000, 'first', 5_000);
      await scheduleRecheck(bus.js, { subject, data, headers: undefined }, t0 + 2_500, 'second', 5_000);
      await expect.poll(() => runs.length, { timeout: 10_000 }).toBe(1);
      await new Promise((r) => setTimeout(r, 1_500));
      expect(runs).toHaveLength(1);
      expect(runs[0]?.recheckDueAtMs).toBe(t0 + 2_500);
      expect(runs[0]?.at).toBeGreaterThanOrEqual(t0 + 2_500);
    } finally {
      await runtime.stop();
    }
  });

  it(`re-checking 10 times with max_deliver ${MAX_DELIVER} never dead-letters: a re-check is not a failed delivery`, async () => {
    const { runtime, runs, trigger } = await startRecorder('budget', (_r, n) =>
      n <= 10 ? recheckAfter(100, `round ${n}`) : done,
    );
    try {
      await trigger('d');
      await expect.poll(() => runs.length, { timeout: 30_000 }).toBe(11);
      expect(runs.map((r) => r.deliveryCount)).toEqual(Array(11).fill(1));
      await expect
        .poll(() => runtime.counters(), { timeout: 5_000 })
        .toMatchObject({ rechecks: 10, processed: 1, deadLettered: 0, retried: 0 });
      expect(await dlqCount('budget')).toBe(0);
      await expect
        .poll(
          async () => (await bus.jsm.streams.info(STREAMS.work, { subjects_filter: '>' })).state.messages,
          { timeout: 5_000, message: 'the work queue is empty: every fired re-check was acked away' },
        )
        .toBe(0);
    } finally {
      await runtime.stop();
    }
  });

  it('a key that keeps failing does not hold back the other keys of its partition, and spends its budget once', async () => {
    const other = keyOnSamePartitionAs('stuck');
    const { runtime, runs, trigger } = await startRecorder('stuck', (r) => {
      if (r.key === 'stuck') throw new Error('apiserver says 503');
      return done;
    });
    try {
      await trigger('stuck');
      await expect.poll(() => runs.length, { timeout: 10_000 }).toBe(1);
      await trigger(other);
      await expect.poll(() => dlqCount('stuck'), { timeout: 30_000 }).toBe(1);
      // The dead letter is stored before the original is acked and counted.
      await expect.poll(() => runtime.counters().deadLettered, { timeout: 5_000 }).toBe(1);
      // Under naks, the other key ran only after all three failed attempts (max_ack_pending 1).
      expect(runs.map((r) => r.key)).toEqual(['stuck', other, 'stuck', 'stuck']);
      expect(
        runs.map((r) => r.deliveryCount),
        'each retry is a fresh copy, off the consumer',
      ).toEqual([1, 1, 1, 1]);
      expect(runtime.counters()).toMatchObject({ retried: 2, deadLettered: 1, processed: 1 });
      const dead = await bus.jsm.streams.getMessage(STREAMS.deadLetters, { last_by_subj: 'dlq.stuck' });
      expect(readDeadLetter({ headers: dead?.header }).reason).toMatch(
        /^transient on attempt 3 of 3: .*apiserver says 503/,
      );
    } finally {
      await runtime.stop();
    }
  });
});

/** A key that lands on the same partition as `key` (partitionOf is deterministic: FNV-1a). */
function keyOnSamePartitionAs(key: string): string {
  const target = partitionOf([key], PARTITIONS);
  for (let n = 0; ; n++) if (partitionOf([`other-${n}`], PARTITIONS) === target) return `other-${n}`;
}
