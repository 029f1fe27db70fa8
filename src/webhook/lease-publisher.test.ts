import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVED_SET_ANNOTATION,
  WEBHOOK_SERVER_LABEL,
} from '../api/constants.ts';
import { KINDS } from '../api/resources.ts';
import { decodeServedSet, encodeServedSet, expectedSetOf } from '../core/served-set-codec.ts';
import { ApiStatusError } from '../kube/errors.ts';
import type { ObjectRef, ResourceRef, WriteOptions } from '../kube/writer.ts';
import { DEFAULT_CONFLICT_BACKOFF } from '../runtime/backoff.ts';
import type { Clock } from '../runtime/clock.ts';
import {
  DEFAULT_WRITE_BACKOFF,
  LeasePublisher,
  type LeasePublisherOptions,
  type LeaseWriter,
  type LeaseWriteState,
  microTime,
  nextLeaseWrite,
  resolveLeasePublisherOptions,
  retryAfterFailure,
  type ServedLease,
  servedLeaseBody,
  shrinkOnly,
} from './lease-publisher.ts';

const POD = { name: 'alpha-webhook-server-7d9f-x2', uid: '5b0c2f9e-0000-4000-8000-000000000001' };
const WALL_START = Date.UTC(2025, 0, 2, 3, 4, 5, 678);

describe('nextLeaseWrite: what to write now', () => {
  const written = { value: 'v2.n.A', resourceVersion: '7', renewedAtMs: 1_000, publishedAtMs: 1_000 };
  const state = (over: Partial<LeaseWriteState>): LeaseWriteState => ({
    desired: 'v2.n.A',
    written,
    nowMs: 2_000,
    renewEveryMs: 30_000,
    withdrawing: false,
    ...over,
  });

  it('publishes the whole Lease when nothing was written yet (start, or after any failure)', () => {
    expect(nextLeaseWrite(state({ written: undefined }))).toEqual({ kind: 'publish' });
  });

  it('publishes at once when the encoded set changed, however recent the last renewal', () => {
    expect(nextLeaseWrite(state({ desired: 'v2.n.B', nowMs: 1_000 }))).toEqual({ kind: 'publish' });
  });

  it('publishes rather than renews when the last write gave no resourceVersion to renew on', () => {
    expect(nextLeaseWrite(state({ written: { ...written, resourceVersion: '' }, nowMs: 99_000 }))).toEqual({
      kind: 'publish',
    });
  });

  it('writes nothing between heartbeats when the set did not change, and says how long to wait', () => {
    expect(nextLeaseWrite(state({}))).toEqual({ kind: 'wait', ms: 29_000 });
  });

  it('renews (renewTime only) once the heartbeat is due, and not a millisecond before', () => {
    expect(nextLeaseWrite(state({ nowMs: 30_999 }))).toEqual({ kind: 'wait', ms: 1 });
    expect(nextLeaseWrite(state({ nowMs: 31_000 }))).toEqual({ kind: 'renew' });
    expect(nextLeaseWrite(state({ nowMs: 500_000 }))).toEqual({ kind: 'renew' });
  });

  it('while withdrawing: publishes the empty set if the Lease does not hold it, then is done (no renewals)', () => {
    expect(nextLeaseWrite(state({ withdrawing: true, desired: 'v2.n.EMPTY' }))).toEqual({ kind: 'publish' });
    expect(nextLeaseWrite(state({ withdrawing: true, nowMs: 500_000 }))).toEqual({ kind: 'done' });
  });

  it('a held shrink waits for its window, or for the heartbeat if that comes first, and then publishes', () => {
    const held = (over: Partial<LeaseWriteState>) =>
      nextLeaseWrite(state({ desired: 'v2.n.B', shrinkHeldUntilMs: 6_000, ...over }));
    expect(held({})).toEqual({ kind: 'wait', ms: 4_000 });
    expect(held({ nowMs: 6_000 })).toEqual({ kind: 'publish' });
    expect(held({ shrinkHeldUntilMs: 40_000, nowMs: 30_000 })).toEqual({ kind: 'wait', ms: 1_000 });
    expect(held({ shrinkHeldUntilMs: 40_000, nowMs: 31_000 }), 'the heartbeat publishes it').toEqual({
      kind: 'publish',
    });
    expect(held({ withdrawing: true }), 'a withdrawal never waits').toEqual({ kind: 'publish' });
  });
});

describe('shrinkOnly: the one change whose publish may wait', () => {
  const names = (...n: string[]) => ({
    served: new Set(n),
    viewBehind: false,
    value: encodeServedSet(n, expectedSetOf(n)),
  });

  it('holds a names-form set that only lost names', () => {
    expect(shrinkOnly(names('a.x.io', 'b.x.io'), names('a.x.io'))).toBe(true);
    expect(shrinkOnly(names('a.x.io'), names())).toBe(true);
  });

  it('publishes at once anything added, an unchanged size, and "view behind" either way', () => {
    expect(shrinkOnly(names('a.x.io'), names('a.x.io', 'b.x.io'))).toBe(false);
    expect(shrinkOnly(names('a.x.io', 'b.x.io'), names('a.x.io', 'c.x.io'))).toBe(false);
    expect(shrinkOnly(names('a.x.io', 'b.x.io'), { ...names('a.x.io'), viewBehind: true })).toBe(false);
    expect(shrinkOnly({ ...names('a.x.io', 'b.x.io'), viewBehind: true }, names('a.x.io'))).toBe(false);
  });

  it('publishes the digest form at once: a reader decodes it against the expected set of now', () => {
    const many = Array.from({ length: 1_500 }, (_, i) => `t${i}.x.io`);
    const expected = expectedSetOf(many);
    const digest = (n: string[]) => ({
      served: new Set(n),
      viewBehind: false,
      value: encodeServedSet(n, expected),
    });
    expect(digest(many).value).not.toMatch(/^v2\.n\./);
    expect(shrinkOnly(digest(many), digest(many.slice(1)))).toBe(false);
  });
});

describe('retryAfterFailure', () => {
  const noJitter = () => 0;

  it('409 and 404 retry on the short conflict backoff (the next write is an apply that cures both)', () => {
    expect(
      retryAfterFailure(new ApiStatusError(409, 'conflict'), 1, DEFAULT_WRITE_BACKOFF, noJitter),
    ).toEqual({
      kind: 'conflict',
      delayMs: DEFAULT_CONFLICT_BACKOFF.baseMs,
    });
    expect(retryAfterFailure(new ApiStatusError(404, 'gone'), 2, DEFAULT_WRITE_BACKOFF, noJitter)).toEqual({
      kind: 'not-found',
      delayMs: DEFAULT_CONFLICT_BACKOFF.baseMs * 2,
    });
  });

  it('anything else (5xx, 403, network) backs off from 1 s, capped at 10 s, inside any sane lease duration', () => {
    const at = (n: number, err: unknown) =>
      retryAfterFailure(err, n, DEFAULT_WRITE_BACKOFF, noJitter).delayMs;
    expect(at(1, new ApiStatusError(500, 'boom'))).toBe(1_000);
    expect(at(2, new ApiStatusError(403, 'forbidden'))).toBe(2_000);
    expect(at(10, new Error('ECONNREFUSED'))).toBe(10_000);
    expect(retryAfterFailure(new Error('x'), 1, DEFAULT_WRITE_BACKOFF, noJitter).kind).toBe('error');
  });
});

describe('servedLeaseBody and microTime', () => {
  it('states the whole Lease: name, namespace, labels, Pod owner, holder, duration, MicroTime, the value', () => {
    const body = servedLeaseBody({
      namespace: 'tenants',
      instance: 'alpha',
      pod: POD,
      leaseDurationSeconds: 90,
      value: 'v2.n.X',
      renewTimeMs: WALL_START,
    });
    expect(body).toEqual({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: `switchyard-served-${POD.name}`,
        namespace: 'tenants',
        labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [WEBHOOK_SERVER_LABEL]: 'alpha' },
        annotations: { [SERVED_SET_ANNOTATION]: 'v2.n.X' },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: POD.name, uid: POD.uid }],
      },
      spec: { holderIdentity: POD.name, leaseDurationSeconds: 90, renewTime: '2025-01-02T03:04:05.678000Z' },
    });
  });

  it('MicroTime has exactly six fractional digits (the apiserver rejects three)', () => {
    expect(microTime(0)).toBe('1970-01-01T00:00:00.000000Z');
    expect(microTime(WALL_START)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});

describe('resolveLeasePublisherOptions', () => {
  const base = {
    writer: {} as LeaseWriter,
    namespace: 'ns',
    instance: 'alpha',
    pod: POD,
    log: pino({ level: 'silent' }),
  };

  it('defaults: a 30 s heartbeat and a 90 s Lease (three heartbeats)', () => {
    const o = resolveLeasePublisherOptions(base);
    expect(o.renewEveryMs).toBe(30_000);
    expect(o.leaseDurationSeconds).toBe(90);
    expect(resolveLeasePublisherOptions({ ...base, renewEveryMs: 1_500 }).leaseDurationSeconds).toBe(5);
  });

  it('refuses a Lease that would go stale between heartbeats, and a missing Pod uid (no owner, no GC)', () => {
    expect(() =>
      resolveLeasePublisherOptions({ ...base, renewEveryMs: 10_000, leaseDurationSeconds: 10 }),
    ).toThrow(/longer than one heartbeat/);
    expect(() => resolveLeasePublisherOptions({ ...base, pod: { name: 'p', uid: '' } })).toThrow(/pod.uid/);
  });
});

// --- The publisher loop, against a writer that behaves like the apiserver and a clock the test moves.

class ManualClock implements Clock {
  private t = 0;
  private sleepers: Array<{ at: number; resolve: () => void }> = [];
  now = () => WALL_START + this.t;
  monotonic = () => this.t;
  sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const sleeper = { at: this.t + Math.max(0, ms), resolve };
      this.sleepers.push(sleeper);
      signal?.addEventListener(
        'abort',
        () => {
          this.sleepers = this.sleepers.filter((s) => s !== sleeper);
          resolve();
        },
        { once: true },
      );
    });
  /** Moves time on, waking sleepers in order, and lets the loop run after each. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await settle();
      const next = this.sleepers.filter((s) => s.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!next) break;
      this.t = Math.max(this.t, next.at);
      this.sleepers = this.sleepers.filter((s) => s !== next);
      next.resolve();
    }
    this.t = end;
    await settle();
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}
function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

type Call =
  | { kind: 'apply'; lease: ServedLease }
  | { kind: 'renew'; resourceVersion: string; renewTime: string; patch: Record<string, unknown> };

/** One Lease as the apiserver keeps it: resourceVersion preconditions, 404 when deleted. */
class FakeApiserver implements LeaseWriter {
  stored: ServedLease | undefined;
  readonly calls: Call[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Failures for the next writes, in order. */
  readonly fail: unknown[] = [];
  /** When set, every write waits for it (a slow apiserver). */
  gate: Deferred | undefined;
  private rv = 100;

  async apply<T extends KubernetesObject>(ref: ResourceRef, obj: T, opts: WriteOptions = {}): Promise<T> {
    expect(ref).toBe(KINDS.lease);
    const lease = structuredClone(obj) as unknown as ServedLease;
    return this.write({ kind: 'apply', lease }, opts.signal, () => {
      this.stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    });
  }

  async mergePatch<T extends KubernetesObject>(
    _ref: ResourceRef,
    target: ObjectRef & { resourceVersion: string },
    patch: Record<string, unknown>,
    opts: WriteOptions = {},
  ): Promise<T> {
    const renewTime = (patch.spec as { renewTime: string }).renewTime;
    const call: Call = { kind: 'renew', resourceVersion: target.resourceVersion, renewTime, patch };
    return this.write(call, opts.signal, () => {
      if (!this.stored) throw new ApiStatusError(404, 'not found', 'NotFound');
      if (this.stored.metadata?.resourceVersion !== target.resourceVersion)
        throw new ApiStatusError(409, 'the object has been modified', 'Conflict');
      this.stored = {
        ...this.stored,
        metadata: { ...this.stored.metadata, resourceVersion: String(++this.rv) },
        spec: { ...this.stored.spec, renewTime },
      };
    });
  }

  /** Someone else's write: the next conditional renewal gets 409. */
  touch(): void {
    if (this.stored)
      this.stored = {
        ...this.stored,
        metadata: { ...this.stored.metadata, resourceVersion: String(++this.rv) },
      };
  }

  private async write<T>(call: Call, signal: AbortSignal | undefined, effect: () => void): Promise<T> {
    this.calls.push(call);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) {
        const aborted = new Promise<never>((_, reject) =>
          signal?.addEventListener('abort', () => reject(new Error('aborted')), { once: true }),
        );
        await Promise.race([this.gate.promise, aborted]);
      }
      const failure = this.fail.shift();
      if (failure !== undefined) throw failure;
      effect();
      return structuredClone(this.stored) as unknown as T;
    } finally {
      this.inFlight--;
    }
  }

  applies(): ServedLease[] {
    return this.calls.flatMap((c) => (c.kind === 'apply' ? [c.lease] : []));
  }
  renewals() {
    return this.calls.filter((c) => c.kind === 'renew');
  }
}

const EXPECTED = expectedSetOf(['a.x.io', 'b.x.io', 'c.x.io']);
const annotationOf = (lease: ServedLease | undefined) =>
  lease?.metadata?.annotations?.[SERVED_SET_ANNOTATION] ?? '';
const decoded = (lease: ServedLease | undefined) => {
  const d = decodeServedSet(annotationOf(lease), EXPECTED);
  return d.kind === 'set' ? [...d.served].sort() : d;
};

function setup(over: Partial<LeasePublisherOptions> = {}) {
  const api = new FakeApiserver();
  const clock = new ManualClock();
  const logs: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line)) });
  const publisher = new LeasePublisher({
    writer: api,
    namespace: 'tenants',
    instance: 'alpha',
    pod: POD,
    log,
    clock,
    renewEveryMs: 30_000,
    random: () => 0,
    ...over,
  });
  return { api, clock, publisher, logs };
}

describe('LeasePublisher', () => {
  it('creates the Lease with the set at once, then only renews renewTime every heartbeat, conditionally', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    expect(api.applies()).toHaveLength(1);
    expect(decoded(api.stored)).toEqual(['a.x.io', 'b.x.io']);
    expect(api.stored?.spec.renewTime).toBe(microTime(WALL_START));
    expect(await publisher.whenPublished()).toBe(true);

    await clock.advance(29_999);
    expect(api.calls, 'nothing written between heartbeats').toHaveLength(1);
    await clock.advance(1);
    expect(api.renewals()).toHaveLength(1);
    expect(api.renewals()[0]?.patch, 'a heartbeat carries renewTime and nothing else').toEqual({
      spec: { renewTime: microTime(WALL_START + 30_000) },
    });
    expect(api.renewals()[0]?.resourceVersion, 'on the version of our own last write').toBe('101');
    await clock.advance(90_000);
    expect(api.renewals()).toHaveLength(4);
    expect(api.applies(), 'the set did not change: never republished').toHaveLength(1);
    expect(api.stored?.spec.renewTime).toBe(microTime(WALL_START + 120_000));
    expect(publisher.stats()).toMatchObject({ publishes: 1, renewals: 4, failures: 0, servedCount: 2 });
    await publisher.stop();
  });

  it('writes nothing when given the same set again, or a set that encodes the same', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    publisher.publish(new Set(['b.x.io', 'a.x.io']), EXPECTED);
    publisher.publish(['a.x.io', 'b.x.io', 'a.x.io'], expectedSetOf(EXPECTED.names));
    await clock.advance(1_000);
    expect(api.calls).toHaveLength(1);
    await publisher.stop();
  });

  it('republishes a change at once, not at the next heartbeat, with a fresh renewTime', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io'], EXPECTED);
    await clock.advance(10_000);
    publisher.publish(['a.x.io', 'c.x.io'], EXPECTED);
    await settle();
    expect(api.applies()).toHaveLength(2);
    expect(decoded(api.stored)).toEqual(['a.x.io', 'c.x.io']);
    expect(api.stored?.spec.renewTime).toBe(microTime(WALL_START + 10_000));
    // The heartbeat is measured from that write.
    await clock.advance(29_999);
    expect(api.renewals()).toHaveLength(0);
    await clock.advance(1);
    expect(api.renewals()).toHaveLength(1);
    await publisher.stop();
  });

  it('coalesces changes that arrive while a write is in flight into one write of the latest set, never two writes at once', async () => {
    const { api, clock, publisher } = setup();
    api.gate = deferred();
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    expect(api.inFlight).toBe(1);
    for (const set of [['b.x.io'], ['a.x.io', 'b.x.io'], ['c.x.io'], ['a.x.io', 'b.x.io', 'c.x.io']])
      publisher.publish(set, EXPECTED);
    const published = publisher.whenPublished();
    await clock.advance(5_000);
    expect(api.calls, 'the second write waits for the first').toHaveLength(1);
    const gate = api.gate;
    api.gate = undefined;
    gate.resolve();
    expect(await published).toBe(true);
    expect(api.applies()).toHaveLength(2);
    expect(decoded(api.applies()[1]), 'only the latest set is written').toEqual([
      'a.x.io',
      'b.x.io',
      'c.x.io',
    ]);
    expect(api.maxInFlight).toBe(1);
    await publisher.stop();
  });

  it('a shrink right after a publish waits out the window with whatever else shrank, unsettled meanwhile; an addition goes at once', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io', 'c.x.io'], EXPECTED);
    await clock.advance(10_000);
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    expect(api.applies(), 'the first shrink after a quiet window goes at once').toHaveLength(2);

    publisher.publish(['a.x.io'], EXPECTED);
    await clock.advance(1_000);
    publisher.publish([], EXPECTED);
    await clock.advance(3_999);
    expect(api.applies(), 'shrinks within 5 s of the last publish wait').toHaveLength(2);
    expect(decoded(api.stored), 'the Lease still reports what the replica still holds').toEqual([
      'a.x.io',
      'b.x.io',
    ]);
    expect(publisher.settled(), 'not settled: a plan leaving the report must not drain yet').toBe(false);
    await clock.advance(1);
    expect(api.applies(), 'one write for both shrinks, at the end of the window').toHaveLength(3);
    expect(decoded(api.stored)).toEqual([]);
    expect(publisher.settled()).toBe(true);

    await clock.advance(100);
    publisher.publish(['c.x.io'], EXPECTED);
    await settle();
    expect(api.applies(), 'an addition is never held').toHaveLength(4);
    publisher.publish([], EXPECTED);
    await clock.advance(100);
    expect(api.applies()).toHaveLength(4);
    publisher.publish(['b.x.io'], EXPECTED);
    await settle();
    expect(api.applies(), 'an addition ends a held shrink: the latest set goes at once').toHaveLength(5);
    expect(decoded(api.stored)).toEqual(['b.x.io']);
    await publisher.stop();
  });

  it('withdraw does not wait for a held shrink', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    publisher.publish(['a.x.io'], EXPECTED);
    await clock.advance(100);
    expect(api.applies()).toHaveLength(1);
    expect(await publisher.withdraw()).toBe(true);
    expect(api.applies()).toHaveLength(2);
    expect(decoded(api.stored)).toEqual([]);
  });

  it('a renewal refused with 409 (someone else wrote the Lease) is followed by a whole apply that restores it', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    api.touch();
    await clock.advance(30_000);
    expect(api.renewals()).toHaveLength(1);
    expect(publisher.stats().failures).toBe(1);
    await clock.advance(DEFAULT_CONFLICT_BACKOFF.baseMs);
    expect(api.calls.map((c) => c.kind)).toEqual(['apply', 'renew', 'apply']);
    expect(decoded(api.stored)).toEqual(['a.x.io']);
    expect(publisher.stats().consecutiveFailures).toBe(0);
    await publisher.stop();
  });

  it('a Lease deleted by someone is re-created with the current set (404 on renewal, then apply)', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    api.stored = undefined;
    await clock.advance(30_000 + DEFAULT_CONFLICT_BACKOFF.baseMs);
    expect(api.calls.map((c) => c.kind)).toEqual(['apply', 'renew', 'apply']);
    expect(decoded(api.stored)).toEqual(['a.x.io', 'b.x.io']);
    await publisher.stop();
  });

  it('retries a failed write on the backoff, publishing the latest set, and logs it with instance and pod', async () => {
    const { api, clock, publisher, logs } = setup();
    api.fail.push(new ApiStatusError(503, 'unavailable'), new ApiStatusError(503, 'unavailable'));
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    expect(api.calls).toHaveLength(1);
    publisher.publish(['b.x.io'], EXPECTED);
    await clock.advance(999);
    expect(api.calls, 'a change does not cut a backoff short').toHaveLength(1);
    await clock.advance(1);
    expect(api.calls).toHaveLength(2);
    await clock.advance(1_999);
    expect(api.calls).toHaveLength(2);
    await clock.advance(1);
    expect(api.calls).toHaveLength(3);
    expect(decoded(api.stored)).toEqual(['b.x.io']);
    expect(publisher.stats()).toMatchObject({ publishes: 1, failures: 2, consecutiveFailures: 0 });
    const failed = logs.filter((l) => l.msg === 'served-set Lease write failed; retrying');
    expect(failed).toHaveLength(2);
    expect(failed[1]).toMatchObject({
      instance: 'alpha',
      pod: POD.name,
      namespace: 'tenants',
      lease: `switchyard-served-${POD.name}`,
      status: 503,
      attempt: 2,
      retryInMs: 2_000,
      write: 'publish',
    });
    await publisher.stop();
  });

  it('withdraw publishes the empty set first, then never writes again', async () => {
    const { api, clock, publisher } = setup();
    publisher.publish(['a.x.io', 'b.x.io'], EXPECTED);
    await settle();
    expect(await publisher.withdraw()).toBe(true);
    expect(api.applies()).toHaveLength(2);
    expect(decoded(api.stored)).toEqual([]);
    expect(api.stored?.metadata?.ownerReferences?.[0]?.uid, 'still owned by the Pod: GC removes it').toBe(
      POD.uid,
    );
    publisher.publish(['a.x.io'], EXPECTED);
    await clock.advance(600_000);
    expect(api.calls, 'no renewal and no later set after withdrawal').toHaveLength(2);
    expect(publisher.stats().state).toBe('withdrawn');
  });

  it('withdraw does not wait out a backoff begun before it', async () => {
    const { api, clock, publisher } = setup({ backoff: { baseMs: 60_000, maxMs: 60_000 } });
    api.fail.push(new ApiStatusError(500, 'boom'));
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    const withdrawn = publisher.withdraw();
    await clock.advance(1);
    expect(await withdrawn).toBe(true);
    expect(decoded(api.stored)).toEqual([]);
    expect(api.calls).toHaveLength(2);
  });

  it('withdraw gives up after its timeout when the apiserver keeps failing, and then writes nothing', async () => {
    const { api, clock, publisher, logs } = setup();
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    for (let i = 0; i < 100; i++) api.fail.push(new ApiStatusError(500, 'boom'));
    const withdrawn = publisher.withdraw({ timeoutMs: 5_000 });
    await clock.advance(5_000);
    expect(await withdrawn).toBe(false);
    const attempts = api.calls.length;
    expect(attempts, 'retried on the backoff meanwhile, not in a tight loop').toBeLessThanOrEqual(5);
    await clock.advance(600_000);
    expect(api.calls).toHaveLength(attempts);
    expect(publisher.stats().state).toBe('stopped');
    expect(
      logs.some((l) => l.level === 50 && String(l.msg).startsWith('could not publish the empty set')),
    ).toBe(true);
  });

  it('withdraw before any publish still writes the empty set (a restarted container clears its old report)', async () => {
    const { api, publisher } = setup();
    expect(await publisher.withdraw()).toBe(true);
    expect(decoded(api.stored)).toEqual([]);
  });

  it('stats: the last encoded size in bytes, and truncation when the set does not fit the budget', async () => {
    const { api, publisher } = setup({ budgetBytes: 64 });
    const many = Array.from({ length: 40 }, (_, i) => `target-${i}.example.io`);
    publisher.publish(many, EXPECTED);
    await settle();
    expect(publisher.stats()).toMatchObject({ truncated: true, servedCount: 40 });
    expect(decodeServedSet(annotationOf(api.stored), EXPECTED)).toEqual({
      kind: 'truncated',
      servedCount: 40,
    });
    publisher.publish(['a.x.io'], EXPECTED);
    await settle();
    const value = annotationOf(api.stored);
    expect(value).toBe(encodeServedSet(['a.x.io'], EXPECTED));
    expect(publisher.stats()).toMatchObject({
      truncated: false,
      lastEncodedBytes: Buffer.byteLength(value),
      publishes: 2,
    });
    await publisher.stop();
  });

  it('whenPublished: a waiter that gave up does not take another waiter with it', async () => {
    const { api, publisher } = setup();
    api.gate = deferred();
    publisher.publish(['a.x.io'], EXPECTED);
    const first = publisher.whenPublished();
    const giveUp = new AbortController();
    const impatient = publisher.whenPublished(giveUp.signal);
    await settle();
    api.gate.resolve();
    expect(await first).toBe(true);
    expect(await impatient).toBe(true);
    publisher.publish(['b.x.io'], EXPECTED);
    api.gate = deferred();
    const waiting = publisher.whenPublished();
    giveUp.abort();
    api.gate.resolve();
    expect(await waiting).toBe(true);
    await publisher.stop();
  });

  it('stop aborts the write in flight and resolves pending waiters with false', async () => {
    const { api, publisher } = setup();
    api.gate = deferred();
    publisher.publish(['a.x.io'], EXPECTED);
    const published = publisher.whenPublished();
    await settle();
    await publisher.stop();
    expect(await published).toBe(false);
    expect(api.inFlight, 'the write in flight was aborted').toBe(0);
    expect(api.stored).toBeUndefined();
    expect(publisher.stats().state).toBe('stopped');
  });
});
