import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { DEFAULT_CONFLICT_BACKOFF, DEFAULT_ERROR_BACKOFF } from '../../runtime/backoff.ts';
import { systemClock } from '../../runtime/clock.ts';
import type { HandlerConsumerSpec } from './consumers.ts';
import { classifyFailure } from './errors.ts';
import { done } from './outcome.ts';
import {
  DEFAULT_HANDLER_TIMEOUT_MS,
  type HandlerRuntimeOptions,
  resolveRuntimeOptions,
} from './runtime-options.ts';

const shared: HandlerConsumerSpec = {
  stream: 'WORK',
  durable: 'worker',
  ackWaitMs: 30_000,
  maxDeliver: 5,
  mode: 'shared',
  filterSubject: 'work.>',
};
const partitioned: HandlerConsumerSpec = { ...shared, mode: 'partitioned', prefix: 'work', partitions: 4 };

function options(overrides: Partial<HandlerRuntimeOptions<unknown>> = {}): HandlerRuntimeOptions<unknown> {
  return {
    nc: {} as NatsConnection,
    concern: 'test',
    consumers: shared,
    schema: z.unknown(),
    handle: async () => done,
    deadLetterSubject: 'dlq.test',
    log: pino({ level: 'silent' }),
    ...overrides,
  };
}

describe('resolveRuntimeOptions', () => {
  it('fills in every default once', () => {
    const resolved = resolveRuntimeOptions(options());
    expect(resolved).toMatchObject({
      concurrency: 1,
      pullExpiresMs: 10_000,
      drainTimeoutMs: 20_000,
      handlerTimeoutMs: DEFAULT_HANDLER_TIMEOUT_MS,
      requestTimeoutMs: 5_000,
      ensureConsumersAtStart: true,
      decode: undefined,
      policy: { errorBackoff: DEFAULT_ERROR_BACKOFF, conflictBackoff: DEFAULT_CONFLICT_BACKOFF },
    });
    expect(resolved.clock).toBe(systemClock);
    expect(resolved.classify).toBe(classifyFailure);
  });

  it('keeps what was given', () => {
    const errorBackoff = { baseMs: 5, maxMs: 50 };
    const resolved = resolveRuntimeOptions(
      options({ concurrency: 4, handlerTimeoutMs: 100, ensureConsumersAtStart: false, errorBackoff }),
    );
    expect(resolved).toMatchObject({
      concurrency: 4,
      handlerTimeoutMs: 100,
      ensureConsumersAtStart: false,
      policy: { errorBackoff, conflictBackoff: DEFAULT_CONFLICT_BACKOFF },
    });
  });

  it.each([
    [{ handlerTimeoutMs: 0 }, 'handlerTimeoutMs must be positive, got 0'],
    [{ handlerTimeoutMs: Number.NaN }, 'handlerTimeoutMs must be positive, got NaN'],
    [{ concurrency: 0 }, 'concurrency must be a whole number of lanes, at least 1, got 0'],
    [{ concurrency: 1.5 }, 'concurrency must be a whole number of lanes, at least 1, got 1.5'],
    [{ consumers: partitioned, concurrency: 2 }, 'concurrency is one lane per partition in partitioned mode'],
  ])('refuses %o, naming the option', (overrides, message) => {
    expect(() => resolveRuntimeOptions(options(overrides))).toThrow(message);
  });
});
