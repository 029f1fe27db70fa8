import { ApiException, type EventsV1Event } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  buildEvent,
  type EventInput,
  EventRecorder,
  type EventRecorderOptions,
  KEYED_ANNOTATION,
  MicroTime,
} from './event-recorder.ts';
import { tokenBucketLimiter, unlimited } from './rate-limiter.ts';

const input: EventInput = {
  regarding: {
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'CRDConversionConfig',
    name: 'widgets',
    uid: 'u-1',
  },
  type: 'Normal',
  reason: 'HandoverGated',
  action: 'WaitForReplicas',
  note: 'waiting for 2 of 3 replicas of b to serve widgets.example.com',
};

type Create = (req: { namespace: string; body: EventsV1Event }) => Promise<EventsV1Event>;

function recorder(create: Create, overrides: Partial<EventRecorderOptions> = {}) {
  const sleeps: number[] = [];
  const rec = new EventRecorder({
    api: { createNamespacedEvent: create as never },
    component: 'handover',
    instance: 'handover-7d9f-abcde',
    admission: unlimited,
    queueSize: 100,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    random: () => 0.5,
    ...overrides,
  });
  return { rec, sleeps };
}

const apiError = (code: number) => new ApiException(code, 'error', '{}', {});

describe('buildEvent', () => {
  it('fills every field events.k8s.io/v1 requires, with a microsecond eventTime', () => {
    const event = buildEvent(input, {
      component: 'handover',
      instance: 'pod-1',
      epochMicros: 1_767_225_600_123_456,
      suffix: '00ff',
    });
    expect(JSON.parse(JSON.stringify(event))).toEqual({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: `widgets.${(1_767_225_600_123_456).toString(16)}00ff`, namespace: 'default' },
      eventTime: '2026-01-01T00:00:00.123456Z',
      reportingController: 'switchyard.dev/handover',
      reportingInstance: 'pod-1',
      regarding: input.regarding,
      type: 'Normal',
      reason: 'HandoverGated',
      action: 'WaitForReplicas',
      note: input.note,
    });
  });

  it('puts a namespaced object’s Event in its namespace', () => {
    const event = buildEvent(
      { ...input, regarding: { ...input.regarding, namespace: 'team-a' } },
      { component: 'c', instance: 'i', epochMicros: 1, suffix: '0000' },
    );
    expect(event.metadata?.namespace).toBe('team-a');
  });

  it('cuts what the apiserver would reject instead of losing the Event: note to 1 kB, reason/action to 128', () => {
    const event = buildEvent(
      { ...input, reason: 'R'.repeat(300), action: 'A'.repeat(300), note: 'é'.repeat(2000) },
      { component: 'c', instance: 'i', epochMicros: 1, suffix: '0000' },
    );
    expect(event.reason).toHaveLength(128);
    expect(event.action).toHaveLength(128);
    expect(Buffer.byteLength(event.note ?? '')).toBeLessThanOrEqual(1024);
  });

  it('names a keyed Event by its component and key: every record of one transition has one name', () => {
    const at = (epochMicros: number, suffix: string, key: string, component = 'handover') =>
      buildEvent({ ...input, key }, { component, instance: 'pod-1', epochMicros, suffix });
    const first = at(1, '0000', 'repointed widgets at 42');
    expect(at(999, 'ffff', 'repointed widgets at 42').metadata?.name).toBe(first.metadata?.name);
    expect(at(1, '0000', 'repointed widgets at 43').metadata?.name).not.toBe(first.metadata?.name);
    expect(at(1, '0000', 'repointed widgets at 42', 'assign').metadata?.name).not.toBe(first.metadata?.name);
    expect(first.metadata?.name).toMatch(/^widgets\.[0-9a-f]{20}$/);
    expect(first.metadata?.annotations).toEqual({ [KEYED_ANNOTATION]: 'repointed widgets at 42' });
  });

  it('MicroTime keeps microseconds the JS Date drops', () => {
    expect(new MicroTime(1_000_000_000_000_001).toISOString()).toBe('2001-09-09T01:46:40.000001Z');
  });
});

describe('EventRecorder', () => {
  it('sends a recorded Event and counts it emitted', async () => {
    const sent: EventsV1Event[] = [];
    const { rec } = recorder(async ({ body }) => {
      sent.push(body);
      return body;
    });
    expect(rec.record(input)).toBe(true);
    await rec.idle();
    expect(sent).toHaveLength(1);
    expect(rec.counters()).toMatchObject({ emitted: 1, dropped: 0, rejected: 0, failed: 0 });
  });

  it('an Event answered with any HTTP error status (4xx, 429 and 5xx, as client-go) is not retried', async () => {
    for (const code of [400, 403, 422, 429, 500, 503, 504]) {
      let calls = 0;
      const { rec } = recorder(async () => {
        calls++;
        throw apiError(code);
      });
      rec.record(input);
      await rec.idle();
      expect(calls, `a ${code} must not be retried`).toBe(1);
      expect(rec.counters()).toMatchObject({ rejected: 1, retried: 0, emitted: 0 });
    }
  });

  it('network errors are retried with growing backoff, a bounded number of times', async () => {
    let calls = 0;
    const { rec, sleeps } = recorder(
      async () => {
        calls++;
        throw new TypeError('fetch failed');
      },
      { maxAttempts: 4, retryBaseDelayMs: 100, retryMaxDelayMs: 300 },
    );
    rec.record(input);
    await rec.idle();
    expect(calls).toBe(4);
    expect(sleeps).toEqual([88, 175, 263]); // 100, 200, 400 capped at 300, each 12.5% shorter (random 0.5 of 25% jitter)
    expect(rec.counters()).toMatchObject({ failed: 1, retried: 3, emitted: 0 });
  });

  it('a retry that meets AlreadyExists means an earlier try landed: emitted, not a duplicate', async () => {
    let calls = 0;
    const names: string[] = [];
    const { rec } = recorder(async ({ body }) => {
      names.push(body.metadata?.name ?? '');
      calls++;
      if (calls === 1) throw new TypeError('socket hang up');
      throw apiError(409);
    });
    rec.record(input);
    await rec.idle();
    expect(new Set(names).size).toBe(1);
    expect(rec.counters()).toMatchObject({ emitted: 1, rejected: 0 });
  });

  it('a keyed Event met by AlreadyExists on its first try is the same transition again: deduplicated', async () => {
    const { rec } = recorder(async () => {
      throw apiError(409);
    });
    rec.record({ ...input, key: 'repointed widgets at 42' });
    rec.record(input);
    await rec.idle();
    expect(rec.counters()).toMatchObject({ emitted: 0, deduplicated: 1, rejected: 1 });
  });

  it('under a storm, Events beyond the bucket are dropped and counted without waiting', () => {
    const { rec } = recorder(() => new Promise(() => {}), {
      admission: tokenBucketLimiter({ qps: 200, burst: 400 }, () => 0),
      queueSize: 10_000,
    });
    const started = performance.now();
    const accepted = Array.from({ length: 5000 }, () => rec.record(input)).filter(Boolean).length;
    expect(performance.now() - started).toBeLessThan(1000);
    expect(accepted).toBe(400);
    expect(rec.counters()).toMatchObject({ droppedRateLimited: 4600, dropped: 4600 });
  });

  it('a full queue drops and counts: memory stays bounded when the apiserver is slow', () => {
    const { rec } = recorder(() => new Promise(() => {}), { queueSize: 50, concurrency: 2 });
    for (let i = 0; i < 1000; i++) rec.record(input);
    expect(rec.counters()).toMatchObject({ inFlight: 2, queued: 50, droppedQueueFull: 948 });
  });

  it('sends at most `concurrency` at once', async () => {
    let active = 0;
    let peak = 0;
    const { rec } = recorder(
      async ({ body }) => {
        active++;
        peak = Math.max(peak, active);
        await new Promise((r) => setTimeout(r, 1));
        active--;
        return body;
      },
      { concurrency: 3 },
    );
    for (let i = 0; i < 20; i++) rec.record(input);
    await rec.idle();
    expect(peak).toBe(3);
    expect(rec.counters().emitted).toBe(20);
  });

  it('after close, Events are dropped and counted; close waits for the queue to drain', async () => {
    let sent = 0;
    const { rec } = recorder(async ({ body }) => {
      await new Promise((r) => setTimeout(r, 5));
      sent++;
      return body;
    });
    for (let i = 0; i < 5; i++) rec.record(input);
    await rec.close({ timeoutMs: 2000 });
    expect(sent).toBe(5);
    expect(rec.record(input)).toBe(false);
    expect(rec.counters().droppedShutdown).toBe(1);
  });
});
