import { describe, expect, it } from 'vitest';
import { formatBusStats } from './stats.ts';

describe('formatBusStats', () => {
  it('shows each consumer’s backlog and saturation under its stream', () => {
    const text = formatBusStats([
      {
        name: 'WORK',
        messages: 12,
        bytes: 900,
        firstSeq: 3,
        lastSeq: 14,
        subjects: 5,
        consumers: [
          {
            name: 'assign-p0',
            filter: 'work.assign.0.>',
            pending: 7,
            ackPending: 1,
            maxAckPending: 1,
            redelivered: 2,
            waiting: 0,
            lastActive: undefined,
          },
        ],
      },
    ]);
    const [, stream, consumer] = text.split('\n');
    expect(stream).toMatch(/^WORK\s+12\s+14$/);
    expect(consumer).toMatch(/^\s+assign-p0\s+7\s+1\/1\s+2$/);
  });
});
