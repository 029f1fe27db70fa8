import { describe, expect, it } from 'vitest';
import { nextStep } from './watch-outcome.ts';

const timeout = Object.assign(new Error('timed out'), { name: 'TimeoutError' });

describe('nextStep after a watch ends', () => {
  it.each([
    ['a normal close', { recordFailed: false }, { relist: false, backoff: false }],
    ['the client timeout', { err: timeout, recordFailed: false }, { relist: false, backoff: false }],
    [
      '410 as an ERROR event',
      { errorEvent: { code: 410 }, recordFailed: false },
      { relist: true, backoff: false },
    ],
    [
      '410 as an HTTP status',
      { err: { statusCode: 410 }, recordFailed: false },
      { relist: true, backoff: false },
    ],
    [
      'another ERROR event (too large resource version after an etcd restore)',
      {
        errorEvent: { code: 504, reason: 'Timeout', message: 'Too large resource version' },
        recordFailed: false,
      },
      { relist: true, backoff: true },
    ],
    [
      'a network error',
      { err: new Error('ECONNRESET'), recordFailed: false },
      { relist: false, backoff: true },
    ],
    ['a change the bus did not store', { recordFailed: true }, { relist: true, backoff: true }],
  ])('%s', (_name, end, expected) => {
    expect(nextStep(end)).toEqual(expected);
  });
});
