import { NoRespondersError, TimeoutError } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { retryWhileBusUnavailable } from './while-unavailable.ts';

const log = pino({ level: 'silent' });

/** A step that fails with each of `failures` in turn, then answers `done`. */
function failingThen(failures: Error[]) {
  let calls = 0;
  const step = async () => {
    const failure = failures[calls++];
    if (failure) throw failure;
    return 'done';
  };
  return { step, calls: () => calls };
}

describe('retryWhileBusUnavailable', () => {
  it('tries again while the bus cannot answer (no responders, timeouts), then returns the answer', async () => {
    const s = failingThen([new NoRespondersError('$KV.b.k'), new TimeoutError()]);
    await expect(retryWhileBusUnavailable('opening', s.step, { log })).resolves.toBe('done');
    expect(s.calls()).toBe(3);
  });

  it("throws any other failure at once: a wrong request is not the bus's state", async () => {
    const s = failingThen([new Error('bucket name invalid')]);
    await expect(retryWhileBusUnavailable('opening', s.step, { log })).rejects.toThrow('bucket name invalid');
    expect(s.calls()).toBe(1);
  });

  it('gives up past its patience with the last failure', async () => {
    const s = failingThen(Array.from({ length: 100 }, () => new TimeoutError()));
    await expect(
      retryWhileBusUnavailable('opening', s.step, { log, patienceMs: 150 }),
    ).rejects.toBeInstanceOf(TimeoutError);
    expect(s.calls()).toBeGreaterThan(1);
    expect(s.calls()).toBeLessThan(100);
  });
});
