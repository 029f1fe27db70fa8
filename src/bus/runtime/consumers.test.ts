import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_SPARE_DELIVERIES, planHandlerConsumers } from './consumers.ts';

describe('planHandlerConsumers', () => {
  it('plans one durable per partition, each serialized by max_ack_pending 1 on its own filter', () => {
    const plan = planHandlerConsumers({
      mode: 'partitioned',
      stream: 'WORK',
      durable: 'handover',
      prefix: 'work.handover',
      partitions: 3,
      ackWaitMs: 30_000,
      maxDeliver: 5,
    });
    expect(plan.map((c) => [c.name, c.config.filter_subject, c.config.max_ack_pending])).toEqual([
      ['handover-p0', 'work.handover.0.>', 1],
      ['handover-p1', 'work.handover.1.>', 1],
      ['handover-p2', 'work.handover.2.>', 1],
    ]);
    expect(plan[0]?.config.ack_wait).toBe(30_000 * 1_000_000);
    expect(plan[0]?.config.max_deliver, 'spare deliveries let a crashed last attempt be dead-lettered').toBe(
      5 + DEAD_LETTER_SPARE_DELIVERIES,
    );
  });

  it('plans one shared durable with the filter and an optional fleet-wide in-flight cap', () => {
    const [c] = planHandlerConsumers({
      mode: 'shared',
      stream: 'WORK',
      durable: 'assign',
      filterSubject: 'work.assign.>',
      ackWaitMs: 10_000,
      maxDeliver: 3,
      maxAckPending: 64,
    });
    expect(c?.config).toMatchObject({
      durable_name: 'assign',
      filter_subject: 'work.assign.>',
      max_ack_pending: 64,
    });
  });

  it('refuses plans that cannot work', () => {
    const base = { stream: 'S', durable: 'd', ackWaitMs: 5_000, maxDeliver: 3 };
    expect(() =>
      planHandlerConsumers({ ...base, mode: 'partitioned', prefix: 'p', partitions: 0 }),
    ).toThrow();
    expect(() =>
      planHandlerConsumers({ ...base, mode: 'shared', filterSubject: 'x', maxDeliver: 0 }),
    ).toThrow();
    expect(() =>
      planHandlerConsumers({ ...base, mode: 'shared', filterSubject: 'x', ackWaitMs: 10 }),
    ).toThrow();
  });
});
