// One webhook-server replica's state: the plans it holds, kept in line with its bus view, and
// what it publishes about them. No HTTP here (server.ts asks `lookup`), no Kubernetes writes
// (the publisher does them): this decides when.
//
// Every change the view applies schedules one sync (changes arriving together make one); so does
// a change of the view's freshness, the end of a drain and the Lease catching up with a
// withdrawal. A sync brings the plans in line with the world, and publishes the servable set
// whenever it, or the expected set it is encoded against, changed: a reader decodes against the
// expected set it computes itself, so a replica that kept an old encoding would read as "cannot
// tell". While the view is not current (bus/view-lag.ts) the replica publishes "view behind"
// instead of a set, drops nothing, and goes on serving every plan it holds: its readiness does
// not change, because a NATS restart puts every replica of every instance behind at once, and
// unready replicas would leave the apiserver no endpoint to convert with.
import type { Logger } from 'pino';
import type { ObjectView } from '../bus/view.ts';
import type { ExpectedSet } from '../core/served-set-codec.ts';
import { type Clock, systemClock } from '../runtime/clock.ts';
import { readExpectedSets } from '../views/view-reads.ts';
import type { WebhookMetrics } from './metrics.ts';
import { HeldPlans, type PlanLookup } from './plans.ts';
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

export type ReplicaView = Pick<
  ObjectView,
  'list' | 'record' | 'renewTime' | 'onChange' | 'freshness' | 'onFreshnessChange'
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
  private readonly clock: Clock;
  private drainTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void)[] = [];
  private viewState: string | undefined;
  private synced = false;

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
  }) {
    this.view = opts.view;
    this.instance = opts.instance;
    this.sink = opts.sink;
    this.metrics = opts.metrics;
    this.log = opts.log;
    this.clock = opts.clock ?? systemClock;
    this.plans = new HeldPlans(opts.instance, {
      drainMs: opts.drainMs,
      holdWhileNamed: opts.holdWhileNamed ?? true,
    });
  }

  /** Call once the view holds everything recorded before the start: compiles, publishes, follows. */
  start(): void {
    this.unsubscribe = [
      this.view.onChange(() => this.schedule()),
      // A change of freshness turns evidence on or off; while a plan drains, each check may end it.
      this.view.onFreshnessChange((lag) => {
        if (lag.state !== this.viewState || this.plans.draining()) this.schedule();
      }),
    ];
    this.sync();
    this.synced = true;
  }

  stop(): void {
    for (const unsubscribe of this.unsubscribe) unsubscribe();
    clearTimeout(this.drainTimer);
  }

  /** Ready once the first full sync compiled everything it should hold (a failing config does not hold it back). */
  get ready(): boolean {
    return this.synced;
  }

  /**
   * Ready stays ready while the view is behind (it serves every plan it holds, and compiles on
   * demand), so the note says so for whoever reads /readyz.
   */
  readinessNote(): string {
    const lag = this.view.freshness();
    return lag.state === 'current'
      ? 'ok'
      : `ok: serving the ${this.plans.held().size} plans held; view ${lag.state}: ${lag.reason}; the Lease says "cannot tell"`;
  }

  lookup(target: string): PlanLookup {
    return this.plans.lookup(target, this.clock.monotonic());
  }

  /** What the replica holds and why not, and how current its view is, for the debug view. */
  describe(): {
    instance: string;
    servable: string[];
    draining: string[];
    failures: Record<string, readonly string[]>;
    view: ReturnType<ReplicaView['freshness']>;
  } {
    const servable = this.plans.servable();
    return {
      instance: this.instance,
      servable: [...servable].sort(),
      draining: [...this.plans.held()].filter((t) => !servable.has(t)).sort(),
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
    setImmediate(() => {
      this.scheduled = false;
      this.sync();
    });
  }

  private sync(): void {
    const lag = this.view.freshness();
    this.viewState = lag.state;
    const viewCurrent = lag.state === 'current';
    const result = this.plans.sync(planWorldOf(this.view), {
      nowMs: this.clock.monotonic(),
      viewCurrent,
      leaseSettled: this.sink.settled(),
    });
    this.scheduleDrainEnd();
    const servable = this.plans.servable();
    this.metrics.plans(this.plans.held().size, this.plans.failures().size);
    if (result.added.length + result.removed.length + result.failed.length + result.draining.length > 0)
      this.log.info(
        { instance: this.instance, ...result, reported: servable.size, held: this.plans.held().size },
        'plans changed',
      );
    const expected = readExpectedSets(this.view)(this.instance);
    const viewBehind = !viewCurrent;
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
