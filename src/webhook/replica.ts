// One webhook-server replica's state: the plans it holds, kept in line with its bus view, and
// what it publishes about them. No HTTP here (server.ts asks `lookup`), no Kubernetes writes
// (the publisher does them): this decides when.
//
// Every change the view applies schedules one sync (changes arriving together make one); so does
// a change of the view's freshness, the end of a drain and the Lease catching up with a
// withdrawal. Syncs are at least `SYNC_INTERVAL_MS` apart: a sync reads the whole view (every
// config and target), and every replica of every instance sees every change, so in a rebalance
// of 1,000 targets the eight source replicas spent ~18 CPU-seconds syncing once per change
// batch, on the two cores the apiserver needed (issue 32). The first sync after a quiet
// interval runs at once; nothing a review needs waits for one (a review compiles its own plan). A sync brings the plans in line with the world, and publishes the servable set
// whenever it, or the expected set it is encoded against, changed: a reader decodes against the
// expected set it computes itself, so a replica that kept an old encoding would read as "cannot
// tell". While the view is not current (bus/view-lag.ts) the replica publishes "view behind"
// instead of a set, drops nothing, and goes on serving every plan it holds: its readiness does
// not change, because a NATS restart puts every replica of every instance behind at once, and
// unready replicas would leave the apiserver no endpoint to convert with.
//
// A sync decides what to hold and compiles nothing (plans.ts): the replica is ready after its
// first sync, and compiles the pending plans in the background, a slice of at most
// `COMPILE_SLICE_MS` at a time, yielding to the event loop between slices so reviews and the
// Lease's heartbeats are not held up. After each slice it publishes the servable set, which
// holds compiled plans only; the publisher coalesces the sets given while a write is in flight.
// A sync that leaves plans to compile leaves its publish to the first slice, one turn later, so
// a change and its compile make one write, not two. A review for a target with no plan yet
// compiles it at once (`HeldPlans.lookup`): ready before compiled costs no failed conversion. A
// review for a target whose plan is held is served with it at once, a recompile queued or not.
//
// The view keeps configs without their rules and targets without their schemas
// (views/projection.ts): a compile reads both whole from the bus first, `READ_BATCH` targets at
// a time in the background, and a review's own at once. When the bus does not answer, the
// background compile waits `READ_RETRY_MS` and tries again; the plans held serve meanwhile.
import type { Logger } from 'pino';
import type { ObjectView } from '../bus/view.ts';
import type { ViewLag } from '../bus/view-lag.ts';
import type { ExpectedSet } from '../core/served-set-codec.ts';
import { type Clock, systemClock } from '../runtime/clock.ts';
import { type ConfigSources, readConfigSources } from '../views/config-sources.ts';
import { readExpectedSets } from '../views/view-reads.ts';
import type { WebhookMetrics } from './metrics.ts';
import { HeldPlans, type PlanLookup, sameRevisions, type Wanted } from './plans.ts';
import { planWorldOf } from './world.ts';

/** Where a replica's servable set goes: its Lease (lease-publisher.ts). */
export interface ServedSetSink {
  /** `viewBehind`: publish "cannot tell" (how many plans are held) instead of the set. */
  publish(served: ReadonlySet<string>, expected: ExpectedSet, opts?: { viewBehind?: boolean }): void;
  /** Whether every set given is on the Lease, or none ever was: a target left out is reported nowhere. */
  settled(): boolean;
  /** Resolves once the last set given is on the Lease (true), or never will be (false). */
  whenPublished(): Promise<boolean>;
}

/**
 * The longest a background compile holds the event loop before yielding: what a review arriving
 * meanwhile waits at most. About 25 of bench/webhook.ts's 50-leaf plans (377 ms for 1,000);
 * yielding costs a few microseconds a slice.
 */
export const COMPILE_SLICE_MS = 10;

/** Targets whose config and target the background compile reads from the bus at once (two gets each). */
export const READ_BATCH = 32;

/** How long the background compile waits before reading again after the bus did not answer. */
export const READ_RETRY_MS = 1_000;

/** The least time between two syncs: changes meanwhile make one sync at its end. */
export const SYNC_INTERVAL_MS = 200;

export type ReplicaView = Pick<
  ObjectView,
  'list' | 'record' | 'renewTime' | 'onChange' | 'freshness' | 'onFreshnessChange' | 'whole'
>;

export class Replica {
  private readonly plans: HeldPlans;
  private readonly view: ReplicaView;
  private readonly instance: string;
  private readonly sink: ServedSetSink;
  private readonly metrics: WebhookMetrics;
  private readonly log: Logger;
  private published: { served: ReadonlySet<string>; expected: ExpectedSet; viewBehind: boolean } | undefined;
  private scheduled = false;
  private syncTimer: NodeJS.Timeout | undefined;
  /** Monotonic ms of the last sync. */
  private lastSyncAtMs: number | undefined;
  private readonly syncIntervalMs: number;
  private readonly clock: Clock;
  private drainTimer: NodeJS.Timeout | undefined;
  private readRetryTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void)[] = [];
  private synced = false;
  private stopped = false;
  /** What the last sync saw, which the slices between syncs publish against. */
  private seen: { lag: ViewLag; expected: ExpectedSet } | undefined;
  private compileScheduled = false;
  /** The current run of background compiles: since when, and what it compiled. */
  private compiling: { sinceMs: number; added: number; failed: Set<string> } | undefined;
  private whenCompiledWaiters: (() => void)[] = [];

  constructor(opts: {
    view: ReplicaView;
    instance: string;
    sink: ServedSetSink;
    metrics: WebhookMetrics;
    log: Logger;
    /** How long the evidence that a target left must hold before its plan is dropped (config webhook.drainSeconds). */
    drainMs: number;
    /** false only for the negative control of test/e2e (config webhook.unsafeDropPlanOnReassign). */
    holdWhileNamed?: boolean;
    clock?: Clock;
    /** The least time between two syncs (default `SYNC_INTERVAL_MS`). */
    syncIntervalMs?: number;
  }) {
    this.view = opts.view;
    this.instance = opts.instance;
    this.sink = opts.sink;
    this.metrics = opts.metrics;
    this.log = opts.log;
    this.clock = opts.clock ?? systemClock;
    this.syncIntervalMs = opts.syncIntervalMs ?? SYNC_INTERVAL_MS;
    this.plans = new HeldPlans(opts.instance, {
      drainMs: opts.drainMs,
      holdWhileNamed: opts.holdWhileNamed ?? true,
    });
  }

  /**
   * Call once the view holds everything recorded before the start: decides what to hold,
   * publishes, follows, and compiles in the background (ready before it is done).
   */
  start(): void {
    this.unsubscribe = [
      this.view.onChange(() => this.schedule()),
      // A change of freshness turns evidence on or off; while a plan drains, each check may end it.
      this.view.onFreshnessChange((lag) => {
        if (lag.state !== this.seen?.lag.state || this.plans.draining()) this.schedule();
      }),
    ];
    this.sync();
    this.synced = true;
  }

  stop(): void {
    this.stopped = true;
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    clearTimeout(this.drainTimer);
    clearTimeout(this.readRetryTimer);
    clearTimeout(this.syncTimer);
  }

  /**
   * Ready once the view has caught up and the first sync decided what to hold: a plan not
   * compiled yet is compiled by the review that needs it, and reported once compiled.
   */
  get ready(): boolean {
    return this.synced;
  }

  /**
   * Ready stays ready while the view is behind (it serves every plan it holds, and compiles on
   * demand) and while plans compile in the background, so the note says so for whoever reads
   * /readyz.
   */
  readinessNote(): string {
    const lag = this.view.freshness();
    const notes: string[] = [];
    if (lag.state !== 'current')
      notes.push(
        `serving the ${this.plans.held().size} plans held; view ${lag.state}: ${lag.reason}; the Lease says "cannot tell"`,
      );
    const pending = this.plans.pendingCount();
    if (pending > 0)
      notes.push(
        `${pending} plans still compiling in the background (a review compiles its own at once; the Lease reports each once compiled)`,
      );
    return notes.length === 0 ? 'ok' : `ok: ${notes.join('; ')}`;
  }

  /** Resolves once no plan waits for a compile (at once if none does): every plan held is reported. */
  whenCompiled(): Promise<void> {
    if (this.plans.pendingCount() === 0) return Promise.resolve();
    return new Promise((resolve) => this.whenCompiledWaiters.push(resolve));
  }

  /** The plan for a review of `target`, its config and target read from the bus first when it compiles one. */
  async lookup(target: string): Promise<PlanLookup> {
    const want = this.plans.wantOf(target);
    let unread: string | undefined;
    const sources =
      want &&
      (await this.readSources(want).catch((err: unknown) => {
        unread = err instanceof Error ? err.message : String(err);
        this.log.warn(
          { instance: this.instance, target, err },
          'could not read what the review needs compiled',
        );
        return undefined;
      }));
    const held = this.plans.holds(target);
    const found = this.plans.lookup(target, this.clock.monotonic(), (t, w) =>
      t === target && want !== undefined && sameRevisions(w, want) ? sources : undefined,
    );
    // The review compiled a FailClosed config's new revision and it failed: the plan is gone,
    // and the Lease must stop reporting it now, not at the next sync.
    if (held && !this.plans.holds(target)) {
      this.logFailClosed([target]);
      this.report();
    }
    // Say the bus, not "no config": the config is there, its rules could not be read to compile.
    if (found.kind === 'none' && unread !== undefined)
      return {
        kind: 'none',
        why: `its config and target could not be read from the bus to compile: ${unread}`,
      };
    return found;
  }

  private logFailClosed(targets: readonly string[]): void {
    const failures = this.plans.failures();
    this.log.warn(
      {
        instance: this.instance,
        targets,
        errors: Object.fromEntries(targets.map((t) => [t, failures.get(t)])),
      },
      'plans dropped: their configs no longer compile and their driftPolicy is FailClosed; their conversions are refused',
    );
  }

  /** What the replica holds and why not, and how current its view is, for the debug view. */
  describe(): {
    instance: string;
    servable: string[];
    draining: string[];
    compiling: string[];
    failures: Record<string, readonly string[]>;
    view: ReturnType<ReplicaView['freshness']>;
  } {
    const servable = this.plans.servable();
    return {
      instance: this.instance,
      servable: [...servable].sort(),
      draining: [...this.plans.held()].filter((t) => !servable.has(t)).sort(),
      compiling: this.plans.pendingTargets().sort(),
      failures: Object.fromEntries(this.plans.failures()),
      view: this.view.freshness(),
    };
  }

  private scheduleDrainEnd(): void {
    clearTimeout(this.drainTimer);
    const end = this.plans.nextDrainEndMs();
    if (end === undefined) return;
    // Nothing recorded on the bus wakes a sync when a drain ends: a timer does.
    this.drainTimer = setTimeout(() => this.schedule(), Math.max(0, end - this.clock.monotonic())).unref();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.syncTimer = undefined;
      this.scheduled = false;
      if (!this.stopped) this.sync();
    };
    const sinceMs = this.lastSyncAtMs === undefined ? Infinity : this.clock.monotonic() - this.lastSyncAtMs;
    if (sinceMs >= this.syncIntervalMs) setImmediate(run);
    else this.syncTimer = setTimeout(run, this.syncIntervalMs - sinceMs).unref();
  }

  private sync(): void {
    this.lastSyncAtMs = this.clock.monotonic();
    const lag = this.view.freshness();
    const result = this.plans.sync(planWorldOf(this.view), {
      nowMs: this.clock.monotonic(),
      viewCurrent: lag.state === 'current',
      leaseSettled: this.sink.settled(),
    });
    this.seen = { lag, expected: readExpectedSets(this.view)(this.instance) };
    this.scheduleDrainEnd();
    if (result.removed.length + result.draining.length > 0)
      this.log.info(
        {
          instance: this.instance,
          ...result,
          reported: this.plans.servable().size,
          held: this.plans.held().size,
        },
        'plans changed',
      );
    // With plans to compile, the first slice publishes: one write for a change and its compile.
    if (this.plans.pendingCount() > 0) {
      this.updateMetrics();
      this.scheduleCompile();
    } else this.report();
  }

  private updateMetrics(): void {
    this.metrics.plans(this.plans.held().size, this.plans.failures().size, this.plans.pendingCount());
  }

  private scheduleCompile(): void {
    if (this.compileScheduled || this.readRetryTimer !== undefined || this.plans.pendingCount() === 0) return;
    this.compileScheduled = true;
    this.compiling ??= { sinceMs: this.clock.monotonic(), added: 0, failed: new Set() };
    setImmediate(() => {
      if (this.stopped) return;
      void this.compileSlice().catch((err: unknown) => {
        this.compileScheduled = false;
        this.log.warn(
          { instance: this.instance, err, pending: this.plans.pendingCount(), retryInMs: READ_RETRY_MS },
          'could not read what the pending plans compile from; the plans held serve meanwhile',
        );
        this.readRetryTimer = setTimeout(() => {
          this.readRetryTimer = undefined;
          this.scheduleCompile();
        }, READ_RETRY_MS).unref();
      });
    });
  }

  private readSources(want: Wanted): Promise<ConfigSources> {
    return readConfigSources(this.view, want.config);
  }

  /**
   * One slice of the background compile: the next pending targets' sources read from the bus, as
   * many compiled as the slice allows, then the servable set it grew published; the next slice
   * after a yield.
   */
  private async compileSlice(): Promise<void> {
    const batch = this.plans.pendingWants().slice(0, READ_BATCH);
    const read = new Map<string, { want: Wanted; sources: ConfigSources }>();
    await Promise.all(
      batch.map(async ([target, want]) => read.set(target, { want, sources: await this.readSources(want) })),
    );
    if (this.stopped) return;
    const end = this.clock.monotonic() + COMPILE_SLICE_MS;
    // Sources stand for the revisions they were read for: a sync meanwhile may have queued newer
    // ones (read next time), and re-queues the same ones under new objects at every change.
    const { added, failed, dropped } = this.plans.compilePending(
      (target, want) => {
        const r = read.get(target);
        return r && sameRevisions(r.want, want) ? r.sources : undefined;
      },
      () => this.clock.monotonic() < end,
    );
    this.compileScheduled = false;
    if (dropped.length > 0) this.logFailClosed(dropped);
    const run = this.compiling;
    if (run) {
      run.added += added.length;
      for (const target of failed) run.failed.add(target);
    }
    if (this.plans.pendingCount() > 0) {
      this.scheduleCompile();
      this.report();
      return;
    }
    // Compiled by reviews meanwhile, or here: what is compiled now is reported now.
    this.compiling = undefined;
    this.report();
    if (run)
      this.log.info(
        {
          instance: this.instance,
          added: run.added,
          failed: [...run.failed].sort(),
          ms: Math.round(this.clock.monotonic() - run.sinceMs),
          reported: this.plans.servable().size,
          held: this.plans.held().size,
        },
        'plans compiled',
      );
    for (const resolve of this.whenCompiledWaiters.splice(0)) resolve();
  }

  /**
   * Publishes the servable set when it, or the expected set, changed since the last publish,
   * against what the last sync saw: a slice between syncs publishes what it compiled, nothing more.
   */
  private report(): void {
    if (this.seen === undefined) return;
    const { lag, expected } = this.seen;
    const servable = this.plans.servable();
    this.updateMetrics();
    const viewBehind = lag.state !== 'current';
    const last = this.published;
    if (
      last &&
      last.viewBehind === viewBehind &&
      sameSet(last.served, servable) &&
      (viewBehind || last.expected === expected)
    )
      return;
    if (viewBehind !== (last?.viewBehind ?? false))
      this.log.warn(
        { instance: this.instance, view: lag.state, reason: lag.reason, held: this.plans.held().size },
        viewBehind
          ? 'view not current: the Lease says "cannot tell", every plan is kept and served'
          : 'view current again: the Lease reports the served set',
      );
    this.published = { served: servable, expected, viewBehind };
    this.sink.publish(servable, expected, { viewBehind });
    // A withdrawn target's drain waits for the Lease to stop reporting it.
    if (this.plans.draining()) void this.sink.whenPublished().then(() => this.schedule());
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
