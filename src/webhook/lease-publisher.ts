// One webhook-server replica's served-set Lease (BRIEF §4): what this replica can serve, published
// where the control plane already watches, so that nothing ever has to call the Pod.
//
// Why a Lease per replica, written by the replica: a wedged Pod must not wedge the control plane,
// so readiness is published, not polled. The Lease `<prefix>-served-<pod>` lives in the
// instance's namespace, carries the instance and managed-by labels (the watchers record Leases by
// the managed-by label alone), and is owned by the Pod, so the garbage collector removes it with
// the Pod and no replica ever needs `delete`. The identity needs exactly get/create/update/patch
// on leases in that namespace (core/instances/render.ts renders that Role): no list, no watch.
//
// What is written, and when (`nextLeaseWrite`, pure, with the clock as a parameter):
//   publish  a server-side apply of the whole Lease (labels, owner, holder, duration, renewTime
//            and the encoded set): the first write, any change of the encoded value, and the
//            first write after any failure (the apply re-creates a Lease someone deleted and
//            takes back fields someone overwrote; it needs no read first);
//   renew    a merge patch of `spec.renewTime` alone, conditional on the resourceVersion of our
//            last write: a heartbeat the watchers see as nothing but a liveness refresh, and
//            a 409 (someone else wrote the Lease) or 404 (someone deleted it) turns the next
//            write into a publish;
//   wait     nothing changed and the heartbeat is not due: no write at all.
// A set change is published at once; changes that arrive while a write is in flight are
// coalesced into one write of the latest set, and the value is encoded once per write, in the
// loop, not per change. One loop per Lease is the only writer, so two writes of the same Lease
// are never in flight together.
//
// One exception to "at once": a set that only shrank, in the self-contained names form, within
// `shrinkCoalesceMs` (5 s) of the last publish waits for the end of that window, and goes with
// whatever else shrank meanwhile (`shrinkOnly`). Nothing waits for a shrink: a replica keeps
// the plan of a target that left until its Lease stops reporting it (plans.ts), so the longer
// report is still true, and the gate of a move waits for a destination's *additions*, which go
// at once. In a rebalance every repoint shrinks each source replica's set; published one by
// one, that was one Lease write per replica per move (issue 32). The first shrink after a quiet
// window goes at once, so a single move is reported as fast as before. The digest form is not
// held: a reader decodes it against the expected set it computes now, and a report encoded
// against an older one reads as "cannot tell" for the bucket that changed.
//
// Failures are retried with the project's backoff (runtime/backoff.ts): 409 and 404 quickly (the
// next write is an apply that cures them), anything else from 1 s doubling to 10 s — capped well
// below the Lease's duration, so that a recovered apiserver sees a renewal before readers give
// the replica up (the default duration is three heartbeats, 90 s).
//
// Shutdown (`withdraw`): the empty set is published first, so readers stop counting this replica's
// targets the moment it stops serving, not a lease duration later; then renewing stops and the
// Lease goes stale, to be collected with the Pod.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVED_SET_ANNOTATION,
  servedLeaseName,
  WEBHOOK_SERVER_LABEL,
} from '../api/constants.ts';
import { KINDS } from '../api/resources.ts';
import {
  type ExpectedSet,
  encodeServedSet,
  expectedSetOf,
  isNamesForm,
  isTruncationMarker,
  viewBehindMarker,
} from '../core/served-set-codec.ts';
import type { WritesClient } from '../kube/clients.ts';
import { isConflict, isNotFound, statusOf } from '../kube/errors.ts';
import { fieldManagerFor, KubeWriter } from '../kube/writer.ts';
import { type BackoffPolicy, DEFAULT_CONFLICT_BACKOFF, retryDelayMs } from '../runtime/backoff.ts';
import { type Clock, systemClock } from '../runtime/clock.ts';

/** BRIEF §4: renewTime is refreshed every 30 s by default. */
export const DEFAULT_RENEW_EVERY_MS = 30_000;
/**
 * The default lease duration is this many heartbeats: two may be lost (or delayed by a backoff)
 * before readers count the replica out, as a kubelet's node Lease tolerates (10 s renew, 40 s).
 */
export const LEASE_DURATION_HEARTBEATS = 3;
/**
 * Retries of a failed write other than 409/404: from 1 s, doubling, at most 10 s, so a retry
 * always lands well inside even a short lease duration.
 */
export const DEFAULT_WRITE_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 10_000 };
/**
 * How long after a publish a set that only shrank may wait (see the header): in a rebalance,
 * each source replica writes its Lease about once per window instead of once per move; a
 * target that left stays reported, and its plan held, that much longer.
 */
export const DEFAULT_SHRINK_COALESCE_MS = 5_000;
/** How long `withdraw` tries to publish the empty set by default: inside the Pod's termination grace. */
export const DEFAULT_WITHDRAW_TIMEOUT_MS = 10_000;

/** The field manager of every replica's Lease writes (managedFields, audit logs). */
export const WEBHOOK_SERVER_FIELD_MANAGER = fieldManagerFor('webhook-server');

/** What the publisher needs of a writer: `KubeWriter`, or a test's stand-in. */
export type LeaseWriter = Pick<KubeWriter, 'apply' | 'mergePatch'>;

/** The `writes` client's writer with the webhook-server's field manager. */
export function leaseWriterFor(writes: WritesClient): KubeWriter {
  return new KubeWriter(writes, WEBHOOK_SERVER_FIELD_MANAGER);
}

// ---------------------------------------------------------------------------------------------
// The Lease body (pure)

export interface ServedLease extends KubernetesObject {
  spec: { holderIdentity: string; leaseDurationSeconds: number; renewTime: string };
}

export interface ServedLeaseFacts {
  namespace: string;
  instance: string;
  /** The replica's Pod, from the downward API: holder and owner. */
  pod: PodRef;
  leaseDurationSeconds: number;
  /** The encoded served set (`encodeServedSet`). */
  value: string;
  /** Wall-clock ms. */
  renewTimeMs: number;
}

export interface PodRef {
  name: string;
  uid: string;
}

/**
 * A Lease's MicroTime: exactly six fractional digits, as the apiserver requires (a JS Date has
 * three; the typed client's Date would be rejected).
 */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace('Z', '000Z');
}

/** The whole Lease as this replica states it: what a publish applies. */
export function servedLeaseBody(facts: ServedLeaseFacts): ServedLease {
  const { namespace, instance, pod } = facts;
  return {
    apiVersion: KINDS.lease.apiVersion,
    kind: KINDS.lease.kind,
    metadata: {
      name: servedLeaseName(pod.name),
      namespace,
      labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [WEBHOOK_SERVER_LABEL]: instance },
      annotations: { [SERVED_SET_ANNOTATION]: facts.value },
      // No blockOwnerDeletion: it would need `delete`-level rights on the Pod (the
      // OwnerReferencesPermissionEnforcement admission), and nothing waits on this Lease.
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.name, uid: pod.uid }],
    },
    spec: {
      holderIdentity: pod.name,
      leaseDurationSeconds: facts.leaseDurationSeconds,
      renewTime: microTime(facts.renewTimeMs),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// What to write now (pure)

/** The Lease as this replica last wrote it successfully. */
export interface WrittenLease {
  /** The encoded set it holds. */
  value: string;
  /** From the write's response: the precondition of the next renewal. */
  resourceVersion: string;
  /** Monotonic ms at which that write's renewTime was taken. */
  renewedAtMs: number;
  /** Monotonic ms at which the value was last published (a renewal keeps it). */
  publishedAtMs: number;
}

export interface LeaseWriteState {
  /** The encoded set to publish now. */
  desired: string;
  /** Undefined before the first write and after any failed one: the Lease's content is unknown. */
  written: WrittenLease | undefined;
  /** Monotonic ms. */
  nowMs: number;
  renewEveryMs: number;
  /** `withdraw` was called: once the desired (empty) set is written, stop. */
  withdrawing: boolean;
  /**
   * Set when the desired set only shrank (`shrinkOnly`): the publish may wait until then
   * (monotonic ms), or until a heartbeat is due, whichever comes first.
   */
  shrinkHeldUntilMs?: number | undefined;
}

export type LeaseWrite =
  /** Apply the whole Lease with the desired set and a fresh renewTime. */
  | { kind: 'publish' }
  /** Patch renewTime alone, on the written resourceVersion. */
  | { kind: 'renew' }
  /** Nothing to write for `ms` (or until the set changes). */
  | { kind: 'wait'; ms: number }
  /** Withdrawn: the empty set is on the Lease; write nothing more. */
  | { kind: 'done' };

export function nextLeaseWrite(state: LeaseWriteState): LeaseWrite {
  const { written } = state;
  if (written === undefined || written.resourceVersion === '') return { kind: 'publish' };
  const dueInMs = written.renewedAtMs + state.renewEveryMs - state.nowMs;
  if (written.value !== state.desired) {
    const heldForMs = (state.shrinkHeldUntilMs ?? state.nowMs) - state.nowMs;
    // A heartbeat due meanwhile publishes instead: one write either way.
    if (state.withdrawing || heldForMs <= 0 || dueInMs <= 0) return { kind: 'publish' };
    return { kind: 'wait', ms: Math.min(heldForMs, dueInMs) };
  }
  if (state.withdrawing) return { kind: 'done' };
  return dueInMs <= 0 ? { kind: 'renew' } : { kind: 'wait', ms: dueInMs };
}

/** What a publish needs to know of the set it replaces: its input, as `publish` was given it. */
export interface ServedInput {
  served: ReadonlySet<string>;
  viewBehind: boolean;
  /** The encoded value. */
  value: string;
}

/**
 * Whether `next` only takes names out of `previous`, both in the self-contained names form: the
 * one change whose publish may wait (see the header). Anything added, a change of form, and
 * "view behind" either way is published at once.
 */
export function shrinkOnly(previous: ServedInput, next: ServedInput): boolean {
  if (previous.viewBehind || next.viewBehind) return false;
  if (!isNamesForm(previous.value) || !isNamesForm(next.value)) return false;
  if (next.served.size >= previous.served.size) return false;
  for (const name of next.served) if (!previous.served.has(name)) return false;
  return true;
}

export type WriteFailureKind = 'conflict' | 'not-found' | 'error';

export interface RetryPlan {
  kind: WriteFailureKind;
  delayMs: number;
}

/**
 * After the `attempt`-th failure in a row: 409 (someone else wrote the Lease) and 404 (someone
 * deleted it) retry on the short conflict backoff, since the next write is an apply that cures
 * both; anything else on `backoff`. Every failure leaves the Lease's content unknown, so the
 * caller's next write is always a publish.
 */
export function retryAfterFailure(
  err: unknown,
  attempt: number,
  backoff: BackoffPolicy,
  random: () => number = Math.random,
): RetryPlan {
  if (isConflict(err))
    return { kind: 'conflict', delayMs: retryDelayMs(attempt, DEFAULT_CONFLICT_BACKOFF, random) };
  if (isNotFound(err))
    return { kind: 'not-found', delayMs: retryDelayMs(attempt, DEFAULT_CONFLICT_BACKOFF, random) };
  return { kind: 'error', delayMs: retryDelayMs(attempt, backoff, random) };
}

// ---------------------------------------------------------------------------------------------
// Options

export interface LeasePublisherOptions {
  writer: LeaseWriter;
  /** The instance's namespace: where the Lease lives and the identity may write. */
  namespace: string;
  /** The ConversionWebhookServer this replica belongs to. */
  instance: string;
  /** This replica's Pod (downward API: metadata.name and metadata.uid). */
  pod: PodRef;
  log: Logger;
  clock?: Clock;
  /** Heartbeat period (default 30 s). */
  renewEveryMs?: number;
  /** Default: three heartbeats, rounded up to whole seconds. Must exceed one heartbeat. */
  leaseDurationSeconds?: number;
  /** Retries of failures other than 409/404 (default 1 s doubling to 10 s). */
  backoff?: BackoffPolicy;
  /** The annotation budget handed to the codec (default: the codec's). */
  budgetBytes?: number;
  /** Jitter source of the backoff (tests pin it). */
  random?: () => number;
  /** How long after a publish a set that only shrank may wait for more (default 5 s; 0: never). */
  shrinkCoalesceMs?: number;
}

interface Resolved {
  writer: LeaseWriter;
  namespace: string;
  instance: string;
  pod: PodRef;
  clock: Clock;
  renewEveryMs: number;
  leaseDurationSeconds: number;
  backoff: BackoffPolicy;
  budgetBytes: number | undefined;
  random: () => number;
  shrinkCoalesceMs: number;
}

/** Defaults and checks, once: a misconfiguration fails at start, not on the first heartbeat. */
export function resolveLeasePublisherOptions(options: LeasePublisherOptions): Resolved {
  const renewEveryMs = options.renewEveryMs ?? DEFAULT_RENEW_EVERY_MS;
  if (!(renewEveryMs > 0)) throw new Error(`renewEveryMs must be positive, got ${renewEveryMs}`);
  const leaseDurationSeconds =
    options.leaseDurationSeconds ?? Math.ceil((LEASE_DURATION_HEARTBEATS * renewEveryMs) / 1000);
  if (!Number.isInteger(leaseDurationSeconds) || leaseDurationSeconds * 1000 <= renewEveryMs)
    throw new Error(
      `leaseDurationSeconds (${leaseDurationSeconds}) must be a whole number of seconds longer than one ` +
        `heartbeat (${renewEveryMs} ms), or the Lease goes stale between renewals`,
    );
  for (const [field, value] of [
    ['namespace', options.namespace],
    ['instance', options.instance],
    ['pod.name', options.pod.name],
    ['pod.uid', options.pod.uid],
  ] as const)
    if (!value) throw new Error(`the served-set Lease needs ${field}`);
  return {
    writer: options.writer,
    namespace: options.namespace,
    instance: options.instance,
    pod: { name: options.pod.name, uid: options.pod.uid },
    clock: options.clock ?? systemClock,
    renewEveryMs,
    leaseDurationSeconds,
    backoff: options.backoff ?? DEFAULT_WRITE_BACKOFF,
    budgetBytes: options.budgetBytes,
    random: options.random ?? Math.random,
    shrinkCoalesceMs: options.shrinkCoalesceMs ?? DEFAULT_SHRINK_COALESCE_MS,
  };
}

// ---------------------------------------------------------------------------------------------
// The publisher (the one writer of one Lease)

export interface LeasePublisherStats {
  /** Successful whole-Lease applies (first write, set changes, recoveries, the withdrawal). */
  publishes: number;
  /** Successful renewTime-only heartbeats. */
  renewals: number;
  /** Failed writes of either kind. */
  failures: number;
  consecutiveFailures: number;
  /** UTF-8 bytes of the last published annotation value (0 before the first publish). */
  lastEncodedBytes: number;
  /** Whether the last published value is the codec's truncation marker. */
  truncated: boolean;
  /** Whether the last published value says the replica's view is behind the bus ("cannot tell"). */
  viewBehind: boolean;
  /** Names in the last published set. */
  servedCount: number;
  /** The renewTime of the last successful write of either kind. */
  lastRenewTime: string | undefined;
  state: 'idle' | 'publishing' | 'withdrawn' | 'stopped';
}

interface Input {
  version: number;
  served: ReadonlySet<string>;
  expected: ExpectedSet;
  viewBehind: boolean;
}

const NOTHING_EXPECTED = expectedSetOf([]);

export class LeasePublisher {
  /** The Lease's name: `servedLeaseName(pod)`. */
  readonly name: string;
  private readonly o: Resolved;
  private readonly log: Logger;
  private input: Input | undefined;
  private encoded: { version: number; value: string } | undefined;
  private written: WrittenLease | undefined;
  /** The input the last publish wrote, with its value: what a shrink is measured against. */
  private writtenInput: ServedInput | undefined;
  /** Input version whose encoding the Lease is known to hold. */
  private publishedVersion = -1;
  private readonly waiters: Array<{ version: number; resolve: (ok: boolean) => void }> = [];
  private withdrawing = false;
  private stopped = false;
  private loop: Promise<'done' | 'stopped'> | undefined;
  /** Aborted by a new set, withdraw and stop: ends an idle wait. */
  private changed = new AbortController();
  /** Aborted by withdraw and stop: also ends a backoff. */
  private hurry = new AbortController();
  /** Aborted by stop: ends everything, the write in flight included. */
  private readonly halt = new AbortController();
  private readonly counters = {
    publishes: 0,
    renewals: 0,
    failures: 0,
    consecutiveFailures: 0,
    lastEncodedBytes: 0,
    truncated: false,
    viewBehind: false,
    servedCount: 0,
    lastRenewTime: undefined as string | undefined,
  };

  constructor(options: LeasePublisherOptions) {
    this.o = resolveLeasePublisherOptions(options);
    this.name = servedLeaseName(this.o.pod.name);
    this.log = options.log.child({
      instance: this.o.instance,
      pod: this.o.pod.name,
      namespace: this.o.namespace,
      lease: this.name,
    });
  }

  /**
   * The set this replica can serve now (targets with a compiled, servable plan) against the
   * shared expected set; with `viewBehind`, the "cannot tell" marker instead (the replica's view
   * is behind the bus). The first call starts publishing; a later one that changes the encoded
   * value is published at once. Never blocks and never throws: the loop does the work.
   */
  publish(served: Iterable<string>, expected: ExpectedSet, opts: { viewBehind?: boolean } = {}): void {
    if (this.withdrawing || this.stopped) {
      this.log.debug('set given after withdraw or stop: not published');
      return;
    }
    const set = new Set(served);
    const viewBehind = opts.viewBehind === true;
    const current = this.input;
    if (
      current &&
      current.viewBehind === viewBehind &&
      current.expected === expected &&
      sameMembers(current.served, set)
    )
      return;
    this.input = { version: (current?.version ?? -1) + 1, served: set, expected, viewBehind };
    this.changed.abort();
    this.ensureLoop();
  }

  /**
   * Whether the Lease holds the set last given (nothing is on its way), or nothing was ever
   * written: either way a target missing from the last set is reported nowhere.
   */
  settled(): boolean {
    return this.counters.publishes === 0 || this.publishedVersion === this.input?.version;
  }

  /**
   * Resolves true once the Lease holds the set last given to `publish` (or a later one), false
   * if the publisher stops first or `signal` aborts.
   */
  whenPublished(signal?: AbortSignal): Promise<boolean> {
    const version = this.input?.version ?? 0;
    if (this.publishedVersion >= version) return Promise.resolve(true);
    if (this.stopped || signal?.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const waiter = { version, resolve };
      this.waiters.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.waiters.indexOf(waiter);
          if (at >= 0) this.waiters.splice(at, 1);
          resolve(false);
        },
        { once: true },
      );
    });
  }

  /**
   * Shutdown: publishes the empty set (cutting short any backoff), then stops renewing. True
   * once the empty set is on the Lease; false if that did not happen within `timeoutMs` (the
   * write in flight is aborted and nothing more is written; readers drop the replica when the
   * Lease goes stale).
   */
  async withdraw({ timeoutMs = DEFAULT_WITHDRAW_TIMEOUT_MS }: { timeoutMs?: number } = {}): Promise<boolean> {
    if (this.stopped) return false;
    if (!this.withdrawing) {
      this.withdrawing = true;
      this.input = {
        version: (this.input?.version ?? -1) + 1,
        served: new Set(),
        expected: NOTHING_EXPECTED,
        viewBehind: false,
      };
      this.log.info('withdrawing: publishing the empty set, then no more renewals');
      this.changed.abort();
      this.hurry.abort();
      this.ensureLoop();
    }
    const deadline = new AbortController();
    const loop = this.loop as Promise<'done' | 'stopped'>;
    const outcome = await Promise.race([
      loop,
      this.o.clock.sleep(timeoutMs, deadline.signal).then(() => 'timeout' as const),
    ]);
    deadline.abort();
    if (outcome === 'timeout') {
      this.log.error(
        { timeoutMs },
        'could not publish the empty set in time: stopping; the Lease will go stale',
      );
      await this.stop();
      return false;
    }
    return outcome === 'done';
  }

  /** Stops at once, aborting a write in flight and leaving the Lease as it is (it goes stale). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.halt.abort();
    this.changed.abort();
    this.hurry.abort();
    await this.loop;
    this.settleWaiters(false);
  }

  stats(): LeasePublisherStats {
    let state: LeasePublisherStats['state'] = 'idle';
    if (this.stopped) state = 'stopped';
    else if (this.withdrawing && this.publishedVersion === this.input?.version) state = 'withdrawn';
    else if (this.input !== undefined && this.publishedVersion !== this.input.version) state = 'publishing';
    return { ...this.counters, state };
  }

  private ensureLoop(): void {
    if (this.loop) return;
    this.loop = this.run().then(
      (end) => {
        this.settleWaiters(end === 'done');
        return end;
      },
      (err: unknown) => {
        // run() catches every write failure; reaching here is a bug, and the replica must know.
        this.log.fatal({ err }, 'served-set Lease loop died');
        this.stopped = true;
        this.settleWaiters(false);
        return 'stopped' as const;
      },
    );
  }

  private async run(): Promise<'done' | 'stopped'> {
    for (;;) {
      if (this.stopped) return 'stopped';
      if (this.changed.signal.aborted) this.changed = new AbortController();
      const input = this.input as Input;
      const desired = this.encode(input);
      const action = nextLeaseWrite({
        desired,
        written: this.written,
        nowMs: this.o.clock.monotonic(),
        renewEveryMs: this.o.renewEveryMs,
        withdrawing: this.withdrawing,
        shrinkHeldUntilMs: this.shrinkHeldUntilMs(input, desired),
      });
      // A held shrink is not on the Lease yet: settled() stays false, so no plan drains meanwhile.
      if (action.kind !== 'publish' && this.written?.value === desired) this.markPublished(input.version);
      if (action.kind === 'done') {
        this.log.info('withdrawn: the Lease holds the empty set and is no longer renewed');
        return 'done';
      }
      if (action.kind === 'wait') {
        await this.o.clock.sleep(action.ms, this.changed.signal);
        continue;
      }
      const withdrawingBefore = this.withdrawing;
      try {
        if (action.kind === 'publish') await this.apply(desired, input);
        else await this.renew();
        this.counters.consecutiveFailures = 0;
      } catch (err) {
        if (this.stopped) return 'stopped';
        // A write of the old set failed as the withdrawal began: the empty set goes at once.
        const skipDelay = this.withdrawing && !withdrawingBefore;
        await this.backOff(err, action.kind, skipDelay);
      }
    }
  }

  private shrinkHeldUntilMs(input: Input, value: string): number | undefined {
    const previous = this.writtenInput;
    if (this.written === undefined || previous === undefined || this.o.shrinkCoalesceMs <= 0)
      return undefined;
    if (!shrinkOnly(previous, { served: input.served, viewBehind: input.viewBehind, value }))
      return undefined;
    return this.written.publishedAtMs + this.o.shrinkCoalesceMs;
  }

  private encode(input: Input): string {
    if (this.encoded?.version !== input.version) {
      const value = input.viewBehind
        ? viewBehindMarker(input.served.size)
        : encodeServedSet(
            input.served,
            input.expected,
            this.o.budgetBytes === undefined ? {} : { budgetBytes: this.o.budgetBytes },
          );
      this.encoded = { version: input.version, value };
    }
    return this.encoded.value;
  }

  private async apply(value: string, input: Input): Promise<void> {
    const renewedAtMs = this.o.clock.monotonic();
    const body = servedLeaseBody({
      namespace: this.o.namespace,
      instance: this.o.instance,
      pod: this.o.pod,
      leaseDurationSeconds: this.o.leaseDurationSeconds,
      value,
      renewTimeMs: this.o.clock.now(),
    });
    const stored = await this.o.writer.apply(KINDS.lease, body, { signal: this.halt.signal });
    const first = this.counters.publishes === 0;
    this.written = {
      value,
      resourceVersion: stored.metadata?.resourceVersion ?? '',
      renewedAtMs,
      publishedAtMs: renewedAtMs,
    };
    this.writtenInput = { served: input.served, viewBehind: input.viewBehind, value };
    const truncated = isTruncationMarker(value);
    Object.assign(this.counters, {
      publishes: this.counters.publishes + 1,
      lastEncodedBytes: Buffer.byteLength(value),
      truncated,
      viewBehind: input.viewBehind,
      servedCount: input.served.size,
      lastRenewTime: body.spec.renewTime,
    });
    const fields = { served: input.served.size, bytes: Buffer.byteLength(value) };
    if (truncated)
      this.log.error(
        fields,
        'served set over the annotation budget: published as truncated (readers cannot tell)',
      );
    else if (first) this.log.info(fields, 'served-set Lease published');
    else this.log.debug(fields, 'served set republished');
  }

  private async renew(): Promise<void> {
    const written = this.written as WrittenLease;
    const renewedAtMs = this.o.clock.monotonic();
    const renewTime = microTime(this.o.clock.now());
    const stored = await this.o.writer.mergePatch(
      KINDS.lease,
      { namespace: this.o.namespace, name: this.name, resourceVersion: written.resourceVersion },
      { spec: { renewTime } },
      { signal: this.halt.signal },
    );
    this.written = { ...written, resourceVersion: stored.metadata?.resourceVersion ?? '', renewedAtMs };
    this.counters.renewals++;
    this.counters.lastRenewTime = renewTime;
  }

  private async backOff(err: unknown, write: 'publish' | 'renew', skipDelay: boolean): Promise<void> {
    const lastRenewedAtMs = this.written?.renewedAtMs;
    this.written = undefined;
    this.counters.failures++;
    const attempt = ++this.counters.consecutiveFailures;
    const plan = retryAfterFailure(err, attempt, this.o.backoff, this.o.random);
    const staleForMs =
      lastRenewedAtMs === undefined
        ? undefined
        : this.o.clock.monotonic() - lastRenewedAtMs - this.o.leaseDurationSeconds * 1000;
    const fields = {
      err,
      write,
      failure: plan.kind,
      status: statusOf(err),
      attempt,
      retryInMs: plan.delayMs,
    };
    if (plan.kind === 'error' && staleForMs !== undefined && staleForMs > 0)
      this.log.error(
        fields,
        'served-set Lease write failed and the Lease has gone stale: readers no longer count this replica',
      );
    else if (plan.kind === 'error') this.log.warn(fields, 'served-set Lease write failed; retrying');
    else this.log.info(fields, 'served-set Lease changed or deleted by someone else; republishing it whole');
    if (skipDelay || this.stopped) return;
    // withdraw() aborts this signal: a shutdown does not wait out a backoff begun before it.
    if (this.hurry.signal.aborted) this.hurry = new AbortController();
    await this.o.clock.sleep(plan.delayMs, this.hurry.signal);
  }

  private markPublished(version: number): void {
    if (version <= this.publishedVersion) return;
    this.publishedVersion = version;
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i] as (typeof this.waiters)[number];
      if (waiter.version <= version) {
        this.waiters.splice(i, 1);
        waiter.resolve(true);
      }
    }
  }

  private settleWaiters(ok: boolean): void {
    for (const waiter of this.waiters.splice(0))
      waiter.resolve(ok && this.publishedVersion >= waiter.version);
  }
}

function sameMembers(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const name of a) if (!b.has(name)) return false;
  return true;
}
