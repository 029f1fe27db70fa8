import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import {
  API_VERSION,
  HANDOVER_VERDICT_ANNOTATION,
  SERVED_SET_ANNOTATION,
  WEBHOOK_SERVER_LABEL,
} from '../api/constants.ts';
import type { ConfigStatus } from '../api/conversion-config.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { HandlerContext } from '../bus/runtime/index.ts';
import { encodeServedSet, expectedSetOf } from '../core/served-set-codec.ts';
import type { EventInput } from '../kube/event-recorder.ts';
import type { Clock } from '../runtime/clock.ts';
import { handoverHandler, nextLookMs } from './handover.ts';
import { fakeView } from './test-support.ts';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const NS = 'tenant';
const TARGET = 'widgets.x.io';
const CA = 'Q0EtQlVORExF';
const GRACE_MS = 5_000;

type Entry = [string, RecordedObject];

function object(kind: string, name: string, rest: Record<string, unknown> = {}, namespace?: string): Entry {
  const metadata = {
    name,
    uid: `uid-${name}`,
    resourceVersion: '7',
    ...(namespace && { namespace }),
    ...(rest.metadata as object),
  };
  return [kind, { ...rest, metadata } as RecordedObject];
}

const instance = (name: string) =>
  object('webhookserver', name, {
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    spec: { namespace: NS },
  });

const schema = {
  openAPIV3Schema: {
    type: 'object',
    properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
  },
};

function crd(service?: string, rest: Record<string, unknown> = {}): Entry {
  const conversion =
    service === undefined
      ? { strategy: 'None' }
      : {
          strategy: 'Webhook',
          webhook: {
            clientConfig: {
              service: { name: service, namespace: NS, path: `/convert/${TARGET}`, port: 443 },
              caBundle: CA,
            },
            conversionReviewVersions: ['v1'],
          },
        };
  return object('crd', TARGET, {
    spec: {
      versions: [
        { name: 'v1', served: true, storage: false, schema },
        { name: 'v2', served: true, storage: true, schema },
      ],
      conversion,
    },
    status: ESTABLISHED,
    ...rest,
  });
}

const ESTABLISHED = { conditions: [{ type: 'Established', status: 'True' }] };

/** A config pinned to `pin`, whose status names `pin` as assign records it unless `status` says otherwise. */
function config(pin: string, status?: ConfigStatus, hub = 'v2'): Entry {
  return object('crdconfig', 'w', {
    metadata: { generation: 4 },
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    spec: {
      targetCRD: { name: TARGET },
      hubVersion: hub,
      spokes: [{ version: 'v1' }],
      webhookServerRef: { name: pin },
    },
    status: { assignedWebhookServer: pin, ...status },
  });
}

function readyPods(instanceName: string, pods: string[]): Entry {
  return object(
    'endpointslice',
    `${instanceName}-webhook-server-x`,
    {
      metadata: { labels: { 'kubernetes.io/service-name': `${instanceName}-webhook-server` } },
      endpoints: pods.map((name) => ({ conditions: { ready: true }, targetRef: { kind: 'Pod', name } })),
    },
    NS,
  );
}

function lease(instanceName: string, pod: string, served: string[], renewMs: number): Entry {
  return object(
    'lease',
    `switchyard-served-${pod}`,
    {
      metadata: {
        labels: { [WEBHOOK_SERVER_LABEL]: instanceName },
        annotations: { [SERVED_SET_ANNOTATION]: encodeServedSet(served, expectedSetOf([])) },
      },
      spec: { holderIdentity: pod, leaseDurationSeconds: 90, renewTime: new Date(renewMs).toISOString() },
    },
    NS,
  );
}

const ctx = { signal: new AbortController().signal, log: pino({ level: 'silent' }) } as HandlerContext;

interface Write {
  what: 'target' | 'status';
  resource: string;
  body: { spec?: { conversion?: unknown }; status?: ConfigStatus };
  resourceVersion: string | undefined;
}

// The bundle is boxed: a default parameter would turn an explicit undefined back into CA.
async function run(
  objects: Entry[],
  nowMs = T0,
  bundle: { value: string | undefined } = { value: CA },
  work: { trust?: true } = {},
) {
  const writes: Write[] = [];
  let bundleReads = 0;
  const record =
    (what: Write['what']) =>
    async (ref: { resource: string }, body: unknown, opts?: { resourceVersion?: string }) => {
      writes.push({
        what,
        resource: ref.resource,
        body: body as Write['body'],
        resourceVersion: opts?.resourceVersion,
      });
      return body as never;
    };
  const clock: Clock = { now: () => nowMs, monotonic: () => 0, sleep: () => Promise.resolve() };
  const events: EventInput[] = [];
  const handle = handoverHandler({
    events: {
      record: (e) => {
        events.push(e);
        return true;
      },
    },
    view: fakeView(objects, T0),
    writer: { apply: record('target'), applyStatus: record('status') },
    trustBundle: async () => {
      bundleReads++;
      return bundle.value === undefined
        ? { kind: 'unavailable', why: 'no Secret' }
        : { kind: 'found', caBundle: bundle.value };
    },
    clock,
    policy: { unreportedGraceMs: GRACE_MS, stallAfterMs: 600_000, confirmMs: 0 },
    defaultNamespace: 'switchyard-system',
  });
  // Repoint Events gather over a window (handover/repoint-events.ts): this look's batch is recorded
  // when the window ends.
  vi.useFakeTimers({ toFake: ['setTimeout'] });
  let outcome: Awaited<ReturnType<typeof handle>>;
  try {
    outcome = await handle({ key: TARGET, seq: 3, ...work }, ctx);
    vi.runOnlyPendingTimers();
  } finally {
    vi.useRealTimers();
  }
  const status = writes.find((w) => w.what === 'status')?.body.status;
  return { outcome, writes, status, events, bundleReads, reason: status?.conditions?.[0]?.reason };
}

const targetWrites = (writes: Write[]) => writes.filter((w) => w.what === 'target');

describe('the handover handler', () => {
  it('first apply: waits while the destination has no ready Pod, then patches at once', async () => {
    const waiting = await run([instance('a'), config('a'), crd()]);
    expect(targetWrites(waiting.writes), 'a Service with no endpoints would fail every conversion').toEqual(
      [],
    );
    expect(waiting.reason).toBe('DestinationNotReady');

    const ready = await run([instance('a'), config('a', waiting.status), crd(), readyPods('a', ['a1'])]);
    expect(ready.outcome).toEqual({ kind: 'done' });
    expect(targetWrites(ready.writes)).toEqual([
      {
        what: 'target',
        resource: 'customresourcedefinitions',
        resourceVersion: '7',
        body: {
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: {
            name: TARGET,
            annotations: {
              [HANDOVER_VERDICT_ANNOTATION]: JSON.stringify({
                instance: 'a',
                reason: 'FirstApply',
                message: `no Service serves ${TARGET} yet; pointing it at a`,
              }),
            },
          },
          spec: {
            conversion: {
              strategy: 'Webhook',
              webhook: {
                clientConfig: {
                  service: { name: 'a-webhook-server', namespace: NS, path: `/convert/${TARGET}`, port: 443 },
                  caBundle: CA,
                },
                conversionReviewVersions: ['v1'],
              },
            },
          },
        },
      },
    ]);
    expect(ready.status).toMatchObject({ conditions: [{ reason: 'FirstApply', status: 'True' }] });
    expect(ready.status, 'the phase is config-status’s to state').not.toHaveProperty('phase');
    expect(ready.status?.handover, 'nothing waits after a patch').toBeUndefined();
  });

  it('a move waits until every ready Pod of the destination reports the target, then patches', async () => {
    const fleet = [instance('a'), instance('b'), crd('a-webhook-server'), readyPods('b', ['b1', 'b2'])];
    const oneReported = await run([
      ...fleet,
      config('b', { phase: 'Applied' }),
      lease('b', 'b1', [TARGET], T0),
    ]);
    expect(targetWrites(oneReported.writes), 'b2 would get conversions it has no plan for').toEqual([]);
    expect(oneReported.reason).toBe('HandoverPending');
    expect(oneReported.outcome?.kind, 'a live Lease expiring can change the answer').toBe('recheck');

    const both = await run([
      ...fleet,
      config('b', oneReported.status),
      lease('b', 'b1', [TARGET], T0),
      lease('b', 'b2', [TARGET], T0),
    ]);
    const [patch] = targetWrites(both.writes);
    expect(patch?.body.spec?.conversion).toMatchObject({
      webhook: { clientConfig: { service: { name: 'b-webhook-server' } } },
    });
    expect(both.reason).toBe('HandoverReady');
    expect(both.status).not.toHaveProperty('phase');
  });

  it('the verdict of a repoint goes onto the target with it; its status write is conditional, and a retry after a 409 states it again', async () => {
    const fleet = [instance('a'), instance('b'), readyPods('b', ['b1']), lease('b', 'b1', [TARGET], T0)];
    const moved = await run([...fleet, config('b'), crd('a-webhook-server')]);
    const [patch] = targetWrites(moved.writes);
    const annotations = (patch?.body as { metadata?: { annotations?: Record<string, string> } }).metadata
      ?.annotations;
    const recorded = JSON.parse(annotations?.[HANDOVER_VERDICT_ANNOTATION] ?? '{}');
    expect(recorded).toEqual({
      instance: 'b',
      reason: 'HandoverReady',
      message: `moving ${TARGET} from Service a-webhook-server to b: all 1 ready Pods of b serve it`,
    });
    const status = moved.writes.find((w) => w.what === 'status');
    expect(status?.body.status?.conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'HandoverReady',
      observedGeneration: 4,
    });
    expect(status?.resourceVersion, 'a True verdict beside an assignment written since').toBe('7');

    // The status write lost to a concurrent writer: the target names b and carries the verdict.
    const retry = await run([...fleet, config('b'), crd('b-webhook-server', { metadata: { annotations } })]);
    expect(targetWrites(retry.writes)).toEqual([]);
    expect(retry.status?.conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'HandoverReady',
      message: recorded.message,
    });
  });

  it('holds, writing nothing, while the status does not name the resolved instance', async () => {
    const fleet = [instance('a'), instance('b'), readyPods('b', ['b1']), lease('b', 'b1', [TARGET], T0)];
    const verifiedA: ConfigStatus = {
      assignedWebhookServer: 'a',
      handoverDestination: 'a',
      conditions: [
        {
          type: 'HandoverReady',
          status: 'True',
          reason: 'HandoverReady',
          message: 'moved to a',
          lastTransitionTime: new Date(T0).toISOString(),
        },
      ],
    };
    // Pinned to b; assign has not recorded it yet. A repoint now would leave "True about a" beside a target naming b.
    const held = await run([...fleet, config('b', verifiedA), crd('a-webhook-server')]);
    expect(held.writes).toEqual([]);
    expect(held.outcome, "assign's write of the status wakes it again").toEqual({ kind: 'done' });
    const notYet = await run([...fleet, config('b', { assignedWebhookServer: undefined }), crd()]);
    expect(notYet.writes, 'a first apply waits for the first assignment too').toEqual([]);
  });

  it('a target that does not exist: HandoverReady False TargetNotFound, whatever was verified before', async () => {
    const verified: ConfigStatus = {
      handoverDestination: 'a',
      conditions: [
        {
          type: 'HandoverReady',
          status: 'True',
          reason: 'HandoverReady',
          message: 'moved to a',
          lastTransitionTime: new Date(T0).toISOString(),
        },
      ],
    };
    const gone = await run([instance('a'), readyPods('a', ['a1']), config('a', verified)]);
    expect(targetWrites(gone.writes)).toEqual([]);
    expect(gone.status?.conditions?.[0]).toMatchObject({
      status: 'False',
      reason: 'TargetNotFound',
      message: `CustomResourceDefinition "${TARGET}" does not exist; it is pointed at a once it is created`,
    });
    expect(gone.writes[0]?.resourceVersion).toBe('7');
    const again = await run([instance('a'), readyPods('a', ['a1']), config('a', gone.status)]);
    expect(again.writes, 'said once').toEqual([]);
  });

  it('a silent destination proceeds HandoverUnverified once the grace has passed, through the re-check', async () => {
    const fleet = [instance('a'), instance('b'), crd('a-webhook-server'), readyPods('b', ['b1'])];
    const silent = await run([...fleet, config('b')]);
    expect(silent.reason).toBe('HandoverAwaitingReports');
    expect(silent.outcome).toEqual({ kind: 'recheck', afterMs: GRACE_MS, reason: expect.any(String) });
    expect(targetWrites(silent.writes)).toEqual([]);

    const fired = await run([...fleet, config('b', silent.status)], T0 + GRACE_MS);
    expect(targetWrites(fired.writes)).toHaveLength(1);
    expect(fired.status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'HandoverUnverified' });
    expect(silent.events, 'waiting for reports resolves itself: no Event').toEqual([]);
    expect(fired.events).toEqual([
      expect.objectContaining({
        type: 'Warning',
        reason: 'HandoverUnverified',
        action: 'RepointConversion',
        regarding: { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', name: 'b' },
        key: `repoint/b/HandoverUnverified/${TARGET}/7`,
      }),
    ]);
  });

  it('records each repoint in its batch’s Event, none when the target already says it, and one on entering a stall', async () => {
    const fleet = [instance('a'), instance('b'), readyPods('b', ['b1']), lease('b', 'b1', [TARGET], T0)];
    const moved = await run([...fleet, crd('a-webhook-server'), config('b')]);
    expect(moved.events.map((e) => [e.type, e.reason])).toEqual([['Normal', 'HandoverReady']]);
    expect(moved.events[0]?.note).toContain('(was a-webhook-server)');
    const again = await run([...fleet, crd('b-webhook-server'), config('b', moved.status)]);
    expect(again.events, 'a redelivery after the patch records nothing').toEqual([]);

    const stale = [instance('a'), instance('b'), readyPods('b', ['b1']), lease('b', 'b1', [], T0)];
    const pending = await run([...stale, crd('a-webhook-server'), config('b')]);
    const stalled = await run([...stale, crd('a-webhook-server'), config('b', pending.status)], T0 + 600_000);
    expect(stalled.reason).toBe('HandoverStalled');
    expect(stalled.events.map((e) => [e.type, e.reason, e.action])).toEqual([
      ['Warning', 'HandoverStalled', 'GateHandover'],
    ]);
    const still = await run([...stale, crd('a-webhook-server'), config('b', stalled.status)], T0 + 700_000);
    expect(still.events, 'still stalled is not a new transition').toEqual([]);
  });

  it('a config that does not compile against the target leaves the target and the status untouched', async () => {
    const invalid = await run([instance('a'), config('a', undefined, 'v9'), crd(), readyPods('a', ['a1'])]);
    expect(invalid.writes, 'a target must never be pointed at rules that do not compile').toEqual([]);
    expect(invalid.outcome).toEqual({ kind: 'done' });
  });

  it('a target no config converts is left alone', async () => {
    const none = await run([instance('a'), crd(), readyPods('a', ['a1'])]);
    expect(none.writes).toEqual([]);
  });

  it('writes nothing when the target and the status already say it', async () => {
    const fleet = [instance('a'), crd('a-webhook-server'), readyPods('a', ['a1'])];
    const first = await run([...fleet, config('a')]);
    expect(targetWrites(first.writes), 'the conversion is already current').toEqual([]);
    expect(first.reason).toBe('NoMove');
    const again = await run([...fleet, config('a', first.status)]);
    expect(again.writes).toEqual([]);
    expect(again.outcome).toEqual({ kind: 'done' });
  });

  it('a crash between the repoint and its verdict: the retry does not keep the verdict of the move before', async () => {
    // a → b verified; then b → a repointed, and the process stopped before the status write.
    const fleet = [instance('a'), instance('b'), readyPods('a', ['a1']), lease('a', 'a1', [TARGET], T0)];
    const toB = await run([
      ...fleet,
      config('b', { phase: 'Applied' }),
      crd('a-webhook-server'),
      readyPods('b', ['b1']),
      lease('b', 'b1', [TARGET], T0),
    ]);
    expect(toB.status?.conditions?.[0]).toMatchObject({ status: 'True', reason: 'HandoverReady' });
    expect(toB.status?.handoverDestination).toBe('b');
    // The target already names a; the status still holds the verdict about b.
    const retry = await run([...fleet, config('a', toB.status), crd('a-webhook-server')]);
    expect(targetWrites(retry.writes)).toEqual([]);
    expect(retry.status?.conditions?.[0]).toMatchObject({
      status: 'True',
      reason: 'NoMove',
      message: `${TARGET} is already served by a (Service a-webhook-server)`,
    });
    expect(retry.status?.handoverDestination).toBe('a');
    expect(retry.writes.find((w) => w.what === 'status')?.resourceVersion, 'nothing was repointed').toBe('7');
    // And once said, it is kept: the next look writes nothing.
    const again = await run([...fleet, config('a', retry.status), crd('a-webhook-server')]);
    expect(again.writes).toEqual([]);
  });

  it('re-checks instead of patching while the destination publishes no trust bundle', async () => {
    const noBundle = await run([instance('a'), config('a'), crd(), readyPods('a', ['a1'])], T0, {
      value: undefined,
    });
    expect(targetWrites(noBundle.writes), 'a caBundle-less conversion fails TLS').toEqual([]);
    expect(noBundle.outcome?.kind).toBe('recheck');
  });

  it('reads the trust bundle for a move, keeps the one a target publishes for its destination, and reads it again when told to', async () => {
    const fleet = [instance('a'), config('a'), readyPods('a', ['a1'])];
    const move = await run([...fleet, crd()]);
    expect(move.bundleReads).toBe(1);
    expect(targetWrites(move.writes)).toHaveLength(1);
    const kept = await run([...fleet, crd('a-webhook-server')], T0, { value: 'Um90YXRlZA==' });
    expect(kept.bundleReads, 'the target already names a and trusts a bundle for it').toBe(0);
    expect(targetWrites(kept.writes)).toEqual([]);
    const rotated = await run(
      [...fleet, crd('a-webhook-server')],
      T0,
      { value: 'Um90YXRlZA==' },
      { trust: true },
    );
    expect(rotated.bundleReads).toBe(1);
    expect(targetWrites(rotated.writes).map((w) => w.body.spec?.conversion)).toMatchObject([
      { webhook: { clientConfig: { caBundle: 'Um90YXRlZA==' } } },
    ]);
  });

  it('an XRD target is patched on compositeresourcedefinitions, and verified by the CRD Crossplane generates', async () => {
    const [, crdObject] = crd();
    const xrdOf = (conversion: unknown): Entry => [
      'xrd',
      {
        ...crdObject,
        apiVersion: 'apiextensions.crossplane.io/v1',
        kind: 'CompositeResourceDefinition',
        spec: {
          ...(crdObject.spec as object),
          conversion,
          versions: [
            { name: 'v1', served: true, referenceable: false, schema },
            { name: 'v2', served: true, referenceable: true, schema },
          ],
        },
      } as RecordedObject,
    ];
    const xrdConfig = object('xrdconfig', 'w', {
      apiVersion: API_VERSION,
      kind: 'XRDConversionConfig',
      spec: {
        targetXRD: { name: TARGET },
        hubVersion: 'v2',
        spokes: [{ version: 'v1' }],
        webhookServerRef: { name: 'a' },
      },
      status: { assignedWebhookServer: 'a' },
    });
    const fleet = [instance('a'), xrdConfig, readyPods('a', ['a1'])];
    const none = (crdObject.spec as { conversion: unknown }).conversion;

    const ungenerated = await run([...fleet, xrdOf(none)]);
    expect(targetWrites(ungenerated.writes), 'no first apply before Crossplane generated the CRD').toEqual(
      [],
    );
    expect(ungenerated.reason).toBe('TargetNotEstablished');

    // The generated CRD exists with the XRD's conversion (none yet): the first apply patches the XRD,
    // and the config says it waits for Crossplane to copy it.
    const first = await run([...fleet, xrdOf(none), crd()]);
    expect(targetWrites(first.writes).map((w) => w.resource)).toEqual(['compositeresourcedefinitions']);
    expect(first.writes.find((w) => w.what === 'status')?.resource).toBe('xrdconversionconfigs');
    expect(first.status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'AwaitingCrossplane' });
    expect(first.status?.conditions?.[0]?.message).toContain(`CRD ${TARGET} names no Service`);

    // The XRD names a; the generated CRD does not yet, then does.
    const patched = (targetWrites(first.writes)[0]?.body.spec as { conversion: unknown }).conversion;
    const lagging = await run([...fleet, xrdOf(patched), crd()]);
    expect(targetWrites(lagging.writes)).toEqual([]);
    expect(lagging.reason).toBe('AwaitingCrossplane');
    const followed = await run([...fleet, xrdOf(patched), crd('a-webhook-server')]);
    expect(targetWrites(followed.writes)).toEqual([]);
    expect(followed.status?.conditions?.[0]).toMatchObject({ status: 'True' });
  });
});

describe('when a target is looked at again', () => {
  const NOW_MS = 1_000_000;
  it('looks at a waiting move within 10 s whatever else it waits for, a lost wake-up bounded by it', () => {
    const wait = (reason: string, recheckAtMs: number | undefined) => ({
      action: 'wait',
      condition: { reason },
      recheckAtMs,
    });
    expect(nextLookMs(wait('HandoverPending', NOW_MS + 80_000), NOW_MS)).toBe(NOW_MS + 10_000);
    expect(nextLookMs(wait('DestinationNotReady', undefined), NOW_MS)).toBe(NOW_MS + 10_000);
    expect(nextLookMs(wait('HandoverPending', NOW_MS + 3_000), NOW_MS), 'an earlier time stands').toBe(
      NOW_MS + 3_000,
    );
    expect(nextLookMs(wait('TargetNotFound', undefined), NOW_MS), 'its creation wakes it').toBeUndefined();
    expect(
      nextLookMs({ action: 'patch', condition: { reason: 'HandoverReady' }, recheckAtMs: undefined }, NOW_MS),
    ).toBeUndefined();
  });
});
