// One webhook-server replica's state: the plans it holds, kept in line with its bus view, and
// what it publishes about them. No HTTP here (server.ts asks `lookup`), no Kubernetes writes
// (the publisher does them): this decides when.
//
// Every change the view applies schedules one sync (changes arriving together make one); a sync
// brings the plans in line with the world, and publishes the servable set whenever it, or the
// expected set it is encoded against, changed: a reader decodes against the expected set it
// computes itself, so a replica that kept an old encoding would read as "cannot tell".
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
  publish(served: ReadonlySet<string>, expected: ExpectedSet): void;
}

export type ReplicaView = Pick<ObjectView, 'list' | 'record' | 'renewTime' | 'onChange'>;

export class Replica {
  private readonly plans: HeldPlans;
  private readonly view: ReplicaView;
  private readonly instance: string;
  private readonly sink: ServedSetSink;
  private readonly metrics: WebhookMetrics;
  private readonly log: Logger;
  private published: { served: ReadonlySet<string>; expected: ExpectedSet } | undefined;
  private scheduled = false;
  private readonly clock: Clock;
  private drainTimer: NodeJS.Timeout | undefined;
  private unsubscribe: (() => void) | undefined;
  private synced = false;

  constructor(opts: {
    view: ReplicaView;
    instance: string;
    sink: ServedSetSink;
    metrics: WebhookMetrics;
    log: Logger;
    /** How long a plan outlives its last reason to be held (config webhook.drainSeconds). */
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
    this.unsubscribe = this.view.onChange(() => this.schedule());
    this.sync();
    this.synced = true;
  }

  stop(): void {
    this.unsubscribe?.();
    clearTimeout(this.drainTimer);
  }

  /** Ready once the first full sync compiled everything it should hold (a failing config does not hold it back). */
  get ready(): boolean {
    return this.synced;
  }

  lookup(target: string): PlanLookup {
    return this.plans.lookup(target);
  }

  /** What the replica holds and why not, for the debug view. */
  describe(): { instance: string; servable: string[]; failures: Record<string, readonly string[]> } {
    return {
      instance: this.instance,
      servable: [...this.plans.servable()].sort(),
      failures: Object.fromEntries(this.plans.failures()),
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
    const result = this.plans.sync(planWorldOf(this.view), this.clock.monotonic());
    this.scheduleDrainEnd();
    const servable = this.plans.servable();
    this.metrics.plans(servable.size, this.plans.failures().size);
    if (result.added.length + result.removed.length + result.failed.length + result.draining.length > 0)
      this.log.info({ instance: this.instance, ...result, held: servable.size }, 'plans changed');
    const expected = readExpectedSets(this.view)(this.instance);
    if (this.published && sameSet(this.published.served, servable) && this.published.expected === expected)
      return;
    this.published = { served: servable, expected };
    this.sink.publish(servable, expected);
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  return a.size === b.size && [...a].every((x) => b.has(x));
}
