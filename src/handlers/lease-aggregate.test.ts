import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { API_VERSION, SERVED_SET_ANNOTATION, WEBHOOK_SERVER_LABEL } from '../api/constants.ts';
import type { WebhookServerStatus } from '../api/webhook-server.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { HandlerContext } from '../bus/runtime/index.ts';
import { encodeServedSet, expectedSetOf } from '../core/served-set-codec.ts';
import type { Clock } from '../runtime/clock.ts';
import { leaseAggregateHandler } from './lease-aggregate.ts';
import { fakeView } from './test-support.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const NS = 'tenant';

function object(
  kind: string,
  name: string,
  rest: Record<string, unknown> = {},
  namespace?: string,
): [string, RecordedObject] {
  const metadata = {
    name,
    uid: `uid-${name}`,
    resourceVersion: '7',
    ...(namespace && { namespace }),
    ...(rest.metadata as object),
  };
  return [kind, { ...rest, metadata } as RecordedObject];
}

function instance(status?: WebhookServerStatus) {
  return object('webhookserver', 'a', {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    spec: { default: true, namespace: NS },
    ...(status && { status }),
  });
}

function lease(pod: string, served: string[]) {
  return object(
    'lease',
    `switchyard-served-${pod}`,
    {
      metadata: {
        labels: { [WEBHOOK_SERVER_LABEL]: 'a' },
        annotations: { [SERVED_SET_ANNOTATION]: encodeServedSet(served, expectedSetOf([])) },
      },
      spec: {
        holderIdentity: pod,
        leaseDurationSeconds: 90,
        renewTime: new Date(NOW - 10_000).toISOString(),
      },
    },
    NS,
  );
}

const slice = object(
  'endpointslice',
  'a-webhook-server-x',
  {
    metadata: { labels: { 'kubernetes.io/service-name': 'a-webhook-server' } },
    endpoints: [
      { conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'p1' } },
      { conditions: { ready: true }, targetRef: { kind: 'Pod', name: 'p2' } },
    ],
  },
  NS,
);
/** A config whose target exists and names no Service yet: it waits on `a` (the default). */
const config = object('crdconfig', 'w', {
  apiVersion: API_VERSION,
  kind: 'CRDConversionConfig',
  spec: { targetCRD: { name: 'widgets.x.io' }, hubVersion: 'v2', spokes: [{ version: 'v1' }] },
});
const crd = object('crd', 'widgets.x.io', { spec: {} });

const clock: Clock = { now: () => NOW, monotonic: () => 0, sleep: () => Promise.resolve() };
const ctx = { signal: new AbortController().signal, log: pino({ level: 'silent' }) } as HandlerContext;

function run(objects: Array<[string, RecordedObject]>) {
  const effects: string[] = [];
  const applied: Array<{ status?: WebhookServerStatus }> = [];
  const handle = leaseAggregateHandler({
    view: fakeView(objects, NOW),
    writer: {
      applyStatus: async (_ref, obj) => {
        effects.push('status');
        applied.push(obj as { status?: WebhookServerStatus });
        return obj;
      },
    },
    js: {
      publish: async (subject: string) => {
        effects.push(subject);
        return { stream: 'WORK', seq: 1, duplicate: false, domain: '' };
      },
    },
    clock,
    handoverPartitions: 1,
    defaultNamespace: 'switchyard-system',
  });
  return { outcome: handle({ key: 'a', seq: 3 }, ctx), effects, applied };
}

describe('the lease-aggregate handler', () => {
  const replicas = [lease('p1', ['widgets.x.io', 'b.x.io']), lease('p2', ['widgets.x.io'])];

  it('publishes handover work for the waiting target first, then writes the status, then re-checks at the first expiry', async () => {
    const first = run([instance(), ...replicas, slice, config, crd]);
    expect(await first.outcome).toEqual({ kind: 'recheck', afterMs: 80_000, reason: expect.any(String) });
    expect(first.effects).toEqual(['work.handover.0.widgets_2ex_2eio', 'status']);
    expect(first.applied[0]?.status).toMatchObject({ reportingReplicas: 2, servedTargets: ['widgets.x.io'] });
  });

  it('writes nothing and publishes nothing when the stored status already says it', async () => {
    const first = run([instance(), ...replicas, slice, config, crd]);
    await first.outcome;
    const again = run([instance(first.applied[0]?.status), ...replicas, slice, config, crd]);
    expect((await again.outcome)?.kind).toBe('recheck');
    expect(again.effects).toEqual([]);
  });

  it('does nothing for an instance the view does not hold', async () => {
    const gone = run([...replicas, slice]);
    expect(await gone.outcome).toEqual({ kind: 'done' });
    expect(gone.effects).toEqual([]);
  });
});
