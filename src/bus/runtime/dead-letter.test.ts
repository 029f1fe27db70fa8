import { describe, expect, it } from 'vitest';
import { type DeadLetterRecord, deadLetterHeaders, deadLetterMsgId, readDeadLetter } from './dead-letter.ts';

describe('dead-letter record', () => {
  const record: DeadLetterRecord = {
    kind: 'max-deliver',
    reason: 'retry on attempt 5 of 5:\nError: boom',
    originalSubject: 'work.handover.3.ns.name',
    originalStream: 'WORK',
    originalSeq: 42,
    consumer: 'handover-p3',
    deliveryCount: 5,
    at: '2026-01-01T00:00:00.000Z',
  };

  it('round-trips through headers, with the reason on one line', () => {
    const back = readDeadLetter({ headers: deadLetterHeaders(record) });
    expect(back).toEqual({ ...record, reason: 'retry on attempt 5 of 5: Error: boom' });
  });

  it('has a message id per original message, so two replicas dead-lettering it store one record', () => {
    expect(deadLetterMsgId('WORK', 42)).toBe('dlq:WORK:42');
  });

  it('refuses a message that is not a dead-letter record', () => {
    expect(() => readDeadLetter({})).toThrow(/no headers/);
  });
});
