import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { API_VERSION } from '../api/constants.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectKey } from '../bus/subjects.ts';
import type { ViewLag } from '../bus/view-lag.ts';
import type { ExpectedSet } from '../core/served-set-codec.ts';
import { type Clock, systemClock } from '../runtime/clock.ts';
import { REPLICA_VIEW_PROJECTIONS } from '../views/projection.ts';
import { WebhookMetrics } from './metrics.ts';
import { COMPILE_SLICE_MS, Replica, type ReplicaView } from './replica.ts';
import { gizmoTarget, renameConfig } from './test-support.ts';

/**
 * A view whose objects the test replaces, telling listeners as ObjectView does, and keeping
 * configs and targets projected as the replica's view does: a compile reads them whole (`reads`).
 */
function mutableView() {
  const objects = new Map<string, Map<string, RecordedObject>>();
  const listeners = new Set<(kind: string) => void>();
  const freshnessListeners = new Set<(lag: ViewLag) => void>();
  const lists = new Map<string, readonly RecordedObject[]>();
  const reads: string[] = [];
  let lag: ViewLag = { state: 'current', behindBy: 0, confirmedAgoMs: 0, reason: undefined };
  const held = (kind: string, object: RecordedObject) => REPLICA_VIEW_PROJECTIONS[kind]?.(object) ?? object;
  const view: ReplicaView = {
    list: (kind) => {
      let list = lists.get(kind);
      if (!list) {
        list = [...(objects.get(kind)?.values() ?? [])].map((o) => held(kind, o));
        lists.set(kind, list);
      }
      return list;
    },
    record: (key: ObjectKey) => {
      const object = objects.get(key.kind)?.get(key.name);
      const projected = REPLICA_VIEW_PROJECTIONS[key.kind] !== undefined;
      return (
        object && {
          op: 'upsert',
          object: held(key.kind, object),
          observedBy: 'watch',
          observedAt: '2030-01-01T00:00:00Z',
          ...(projected ? { projected: true, seq: 1 } : {}),
        }
      );
    },
    whole: (key: ObjectKey) => {
      reads.push(`${key.kind}/${key.name}`);
      return Promise.resolve(objects.get(key.kind)?.get(key.name));
    },
    renewTime: () => undefined,
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    freshness: () => lag,
    onFreshnessChange: (listener) => {
      freshnessListeners.add(listener);
      return () => freshnessListeners.delete(listener);
    },
  };
  /** What the view's lag checks would say next. */
  const setLag = (next: ViewLag) => {
    lag = next;
    for (const l of freshnessListeners) l(lag);
  };
  const put = (kind: string, object: RecordedObject) => {
    const byName = objects.get(kind) ?? new Map<string, RecordedObject>();
    byName.set(object.metadata.name, object);
    objects.set(kind, byName);
    lists.delete(kind);
    for (const l of listeners) l(kind);
  };
  return { view, put, setLag, reads };
}

const BEHIND: ViewLag = {
  state: 'unknown',
  behindBy: undefined,
  confirmedAgoMs: 9_000,
  reason: 'the bus did not answer: disconnected (last confirmed current 9 s ago)',
};
const CURRENT: ViewLag = { state: 'current', behindBy: 0, confirmedAgoMs: 0, reason: undefined };

const meta = (name: string) => ({ name, uid: `u-${name}`, resourceVersion: String(Math.random()) });

const crd = (name: string) => gizmoTarget(name) as RecordedObject;
const config = (name: string, target: string, pin: string, status: object = {}, spokePath?: string) =>
  renameConfig(name, target, {
    pin,
    status,
    ...(spokePath && { spokePath, generation: 2 }),
  }) as RecordedObject;

const instance = (name: string) =>
  ({
    apiVersion: API_VERSION,
    kind: 'ConversionWebhookServer',
    metadata: meta(name),
    spec: {},
  }) as RecordedObject;

const settle = () => new Promise((resolve) => setImmediate(resolve));

/** Started, and every plan it holds compiled in the background. */
async function started(replica: Replica): Promise<void> {
  replica.start();
  await replica.whenCompiled();
}

function replicaOf(view: ReplicaView, drainMs = 0, clock?: Clock, syncIntervalMs = 0) {
  const published: { served: string[]; expected: ExpectedSet; viewBehind: boolean }[] = [];
  const metrics = new WebhookMetrics();
  const replica = new Replica({
    view,
    instance: 'a',
    sink: {
      publish: (served, expected, opts) =>
        published.push({ served: [...served].sort(), expected, viewBehind: opts?.viewBehind === true }),
      // Every write lands at once.
      settled: () => true,
      whenPublished: () => Promise.resolve(true),
    },
    metrics,
    log: pino({ level: 'silent' }),
    drainMs,
    // Each sync at once, so a test sees each change's effect after one turn of the event loop.
    syncIntervalMs,
    ...(clock && { clock }),
  });
  return { replica, published, metrics };
}

describe('a webhook-server replica', () => {
  it('is ready after its first sync, before it compiles, and publishes each plan once compiled', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica, published, metrics } = replicaOf(view);
    expect(replica.ready).toBe(false);
    replica.start();
    expect(replica.ready, 'ready once its view is read, not once it compiled').toBe(true);
    expect(replica.describe()).toMatchObject({ servable: [], compiling: ['gizmos.x.io'] });
    expect(published, 'nothing reported before it is compiled').toEqual([]);
    expect(replica.readinessNote()).toMatch(/^ok: 1 plans still compiling/);
    expect((await metrics.render()).body).toContain('switchyard_webhook_plans_pending_compile 1');
    await replica.whenCompiled();
    expect(published.map((p) => p.served)).toEqual([['gizmos.x.io']]);
    expect([...(published[0]?.expected.names ?? [])]).toEqual(['gizmos.x.io']);
    expect(replica.readinessNote()).toBe('ok');
    expect((await metrics.render()).body).toContain('switchyard_webhook_plans_pending_compile 0');
    expect((await replica.lookup('gizmos.x.io')).kind).toBe('plan');
    replica.stop();
  });

  it('serves a review for a target its background compile has not reached, compiling it then', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    for (const name of ['a1.x.io', 'a2.x.io', 'a3.x.io']) {
      put('crd', crd(name));
      put('crdconfig', config(name, name, 'a'));
    }
    const { replica, published } = replicaOf(view);
    replica.start();
    const found = await replica.lookup('a3.x.io');
    expect(found.kind, 'served at once, not refused').toBe('plan');
    expect(replica.describe()).toMatchObject({ servable: ['a3.x.io'], compiling: ['a1.x.io', 'a2.x.io'] });
    await replica.whenCompiled();
    expect(published.at(-1)?.served).toEqual(['a1.x.io', 'a2.x.io', 'a3.x.io']);
    expect(await replica.lookup('a3.x.io'), 'the same plan: compiled once').toEqual(found);
    replica.stop();
  });

  it('compiles in slices, yielding to the event loop between them, and publishes the set as it grows', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    const names = ['a1.x.io', 'a2.x.io', 'a3.x.io'];
    for (const name of names) {
      put('crd', crd(name));
      put('crdconfig', config(name, name, 'a'));
    }
    // Every reading of the clock is a slice later: each slice compiles one plan, then yields.
    let now = 0;
    const clock = { ...systemClock, monotonic: () => (now += COMPILE_SLICE_MS) };
    const { replica, published } = replicaOf(view, 0, clock);
    replica.start();
    const seen: string[][] = [];
    for (let turn = 0; turn < 3; turn++) {
      // One turn of the event loop: what waited behind the slice runs before the next slice.
      await settle();
      seen.push(replica.describe().servable);
    }
    expect(seen).toEqual([['a1.x.io'], ['a1.x.io', 'a2.x.io'], names]);
    expect(published.map((p) => p.served)).toEqual([['a1.x.io'], ['a1.x.io', 'a2.x.io'], names]);
    replica.stop();
  });

  it('keeps serving a moved target through its drain, then lets go and republishes on its own', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('webhookserver', instance('b'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica, published } = replicaOf(view, 100);
    replica.start();
    put('crdconfig', config('g', 'gizmos.x.io', 'b'));
    await settle();
    expect((await replica.lookup('gizmos.x.io')).kind, 'assigned to b, draining').toBe('plan');
    expect(published.at(-1)?.served, 'no longer reported while it drains').toEqual([]);
    expect(replica.describe().draining).toEqual(['gizmos.x.io']);
    const drainBegan = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 150));
    await settle();
    expect(replica.describe().draining, 'dropped once the drain ended, with no record to wake it').toEqual(
      [],
    );
    expect(performance.now() - drainBegan).toBeGreaterThanOrEqual(100);
    replica.stop();
  });

  it('republishes once for changes arriving together, and not for a status write', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crd', crd('widgets.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica, published } = replicaOf(view);
    await started(replica);
    put('crdconfig', config('w', 'widgets.x.io', 'a'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a', { phase: 'Applied' }));
    await settle();
    await replica.whenCompiled();
    expect(
      published.map((p) => p.served),
      'a change and its compile: one publish',
    ).toEqual([['gizmos.x.io'], ['gizmos.x.io', 'widgets.x.io']]);
    put('crdconfig', config('w', 'widgets.x.io', 'a', { phase: 'Applied' }));
    await settle();
    await settle();
    expect(published, 'a status write changes nothing it publishes').toHaveLength(2);
  });

  it('syncs at most once an interval: changes within it make one sync at its end, and one publish', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    for (const target of ['gizmos.x.io', 'widgets.x.io', 'sprockets.x.io']) put('crd', crd(target));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica, published } = replicaOf(view, 0, undefined, 100);
    await started(replica);
    expect(published.map((p) => p.served)).toEqual([['gizmos.x.io']]);
    put('crdconfig', config('w', 'widgets.x.io', 'a'));
    await settle();
    put('crdconfig', config('s', 'sprockets.x.io', 'a'));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(published, 'no sync yet: the last was less than 100 ms ago').toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 120));
    await replica.whenCompiled();
    expect(
      published.map((p) => p.served),
      'both changes in one sync and one publish',
    ).toEqual([['gizmos.x.io'], ['gizmos.x.io', 'sprockets.x.io', 'widgets.x.io']]);
    replica.stop();
  });

  it('reads a config and its target whole from the bus only to compile them: a status write or a repoint compiles nothing', async () => {
    const { view, put, reads } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica } = replicaOf(view);
    await started(replica);
    expect(reads.sort()).toEqual(['crd/gizmos.x.io', 'crdconfig/g']);
    const held = view.record({ kind: 'crd', namespace: '', name: 'gizmos.x.io' })?.object;
    expect(JSON.stringify(held), 'the view keeps no schema').not.toContain('openAPIV3Schema');
    const plan = await replica.lookup('gizmos.x.io');
    reads.length = 0;
    put('crdconfig', config('g', 'gizmos.x.io', 'a', { phase: 'Applied' }));
    await settle();
    await replica.whenCompiled();
    expect(reads, 'a status write reads nothing').toEqual([]);
    put('crd', gizmoTarget('gizmos.x.io', { service: 'a-webhook-server' }) as RecordedObject);
    await settle();
    await replica.whenCompiled();
    expect(reads, 'a repoint (a new generation of the target) reads the target again').toEqual([
      'crdconfig/g',
      'crd/gizmos.x.io',
    ]);
    expect(await replica.lookup('gizmos.x.io'), 'and compiles nothing: its versions are the same').toEqual(
      plan,
    );
    replica.stop();
  });

  it('serves the plans it holds while the bus does not answer its reads, and compiles once it does', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    let answering = true;
    const whole = view.whole;
    const flaky: ReplicaView = {
      ...view,
      whole: (key) => (answering ? whole(key) : Promise.reject(new Error('TimeoutError: timeout'))),
    };
    const { replica, published } = replicaOf(flaky);
    await started(replica);
    const before = await replica.lookup('gizmos.x.io');
    answering = false;
    put('crdconfig', config('g', 'gizmos.x.io', 'a', {}, 'spec.count'));
    put('crd', gizmoTarget('gizmos.x.io', { v1Field: 'count' }) as RecordedObject);
    await settle();
    await settle();
    expect(replica.describe()).toMatchObject({ servable: ['gizmos.x.io'], compiling: ['gizmos.x.io'] });
    expect(await replica.lookup('gizmos.x.io'), 'the plan held serves the review').toEqual(before);
    answering = true;
    await replica.whenCompiled();
    const after = await replica.lookup('gizmos.x.io');
    expect(after.kind).toBe('plan');
    expect(after).not.toEqual(before);
    expect(published.at(-1)?.served).toEqual(['gizmos.x.io']);
    replica.stop();
  }, 10_000);

  it('says the bus did not answer when a review needs a plan it could not read', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const down: ReplicaView = { ...view, whole: () => Promise.reject(new Error('TimeoutError: timeout')) };
    const { replica } = replicaOf(down);
    replica.start();
    expect(await replica.lookup('gizmos.x.io')).toEqual({
      kind: 'none',
      why: 'its config and target could not be read from the bus to compile: TimeoutError: timeout',
    });
    replica.stop();
  });

  it('compiles while the view keeps changing under its reads: a sync queues the same revisions anew', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    put('crd', crd('other.x.io'));
    let writes = 0;
    const whole = view.whole;
    const busy: ReplicaView = {
      ...view,
      // Every read meets a status write elsewhere, and answers after the sync it causes.
      whole: (key) => {
        put('crdconfig', config('o', 'other.x.io', 'b', { phase: 'Applied', message: `write ${writes++}` }));
        return new Promise((resolve) => setImmediate(() => resolve(whole(key))));
      },
    };
    const { replica, published } = replicaOf(busy);
    await started(replica);
    expect(published.at(-1)?.served).toEqual(['gizmos.x.io']);
    replica.stop();
  });

  it('republishes when the expected set changes even if what it serves does not', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crd', crd('other.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    put('crdconfig', config('o', 'other.x.io', 'a'));
    const { replica, published } = replicaOf(view);
    await started(replica);
    // Marked Invalid by config-status: no longer expected anywhere, though this replica's
    // compile still holds it; readers decode against the new expectation.
    put('crdconfig', config('o', 'other.x.io', 'a', { phase: 'Invalid' }));
    await expect.poll(() => published.length).toBeGreaterThan(1);
    expect(published.map((p) => p.served)).toEqual([
      ['gizmos.x.io', 'other.x.io'],
      ['gizmos.x.io', 'other.x.io'],
    ]);
    expect([...(published.at(-1)?.expected.names ?? [])]).toEqual(['gizmos.x.io']);
  });

  it('reports a config that does not compile in its metrics and keeps the others', async () => {
    const { view, put } = mutableView();
    put('webhookserver', instance('a'));
    put('crd', crd('gizmos.x.io'));
    put('crd', crd('bad.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const broken = config('b', 'bad.x.io', 'a') as { spec: { hubVersion: string } } & RecordedObject;
    broken.spec.hubVersion = 'v9';
    put('crdconfig', broken);
    const { replica, metrics } = replicaOf(view);
    await started(replica);
    expect(replica.describe()).toMatchObject({
      servable: ['gizmos.x.io'],
      failures: { 'bad.x.io': [expect.any(String)] },
    });
    const body = (await metrics.render()).body;
    expect(body).toContain('switchyard_webhook_plans_held 1');
    expect(body).toContain('switchyard_webhook_compile_failures 1');
  });

  it('while its view is behind, says "cannot tell" in its Lease, drops nothing and serves; then reports again', async () => {
    const { view, put, setLag } = mutableView();
    put('webhookserver', instance('a'));
    put('webhookserver', instance('b'));
    put('crd', crd('gizmos.x.io'));
    put('crdconfig', config('g', 'gizmos.x.io', 'a'));
    const { replica, published } = replicaOf(view, 50);
    await started(replica);
    expect(published.at(-1)).toMatchObject({ served: ['gizmos.x.io'], viewBehind: false });
    setLag(BEHIND);
    await settle();
    expect(published.at(-1), 'a stale view is not reported as a set').toMatchObject({ viewBehind: true });
    // What the stale view shows is no evidence: the target looks moved, and stays held far past the drain.
    put('crdconfig', config('g', 'gizmos.x.io', 'b'));
    await new Promise((resolve) => setTimeout(resolve, 120));
    await settle();
    expect(replica.describe().draining).toEqual(['gizmos.x.io']);
    expect((await replica.lookup('gizmos.x.io')).kind).toBe('plan');
    setLag(CURRENT);
    await settle();
    expect(published.at(-1), 'current again: the set, without the target it lets go').toMatchObject({
      served: [],
      viewBehind: false,
    });
    await new Promise((resolve) => setTimeout(resolve, 120));
    await settle();
    expect(
      replica.describe().draining,
      'dropped once evidence from a current view held for the drain',
    ).toEqual([]);
    replica.stop();
  });
});
