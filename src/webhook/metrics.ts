// The webhook-server's Prometheus metrics (issue 12): what it converted and how fast, what it
// holds, what it publishes. prom-client keeps the registry and the text format; each replica has
// its own registry (tests run several in one process).
import { Counter, collectDefaultMetrics, Gauge, type Metric, Registry } from 'prom-client';

export type ReviewResult = 'success' | 'failure' | 'rejected';

export interface LeaseStats {
  publishes: number;
  renewals: number;
  lastEncodedBytes: number;
}

/**
 * Counts by label set, added to their counters when Prometheus scrapes. Counting a review is on
 * the path of every conversion; prom-client's `inc` hashes and validates its labels each call,
 * a Map lookup here does not.
 */
class Tally<Labels extends Record<string, string>> {
  private readonly pending = new Map<string, { labels: Labels; count: number }>();

  add(key: string, labels: () => Labels, count: number): void {
    const entry = this.pending.get(key);
    if (entry) entry.count += count;
    else this.pending.set(key, { labels: labels(), count });
  }

  flushInto(counter: { inc(labels: Labels, value: number): void }): void {
    for (const entry of this.pending.values()) {
      if (entry.count > 0) counter.inc(entry.labels, entry.count);
      entry.count = 0;
    }
  }
}

/**
 * A histogram by one label, `result`, observed on the path of every review: a bucket index and
 * three additions, where prom-client's `observe` validates and hashes its labels each call.
 * Registered as a custom metric (prom-client renders what `get` returns).
 */
class ResultHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly byResult = new Map<string, { buckets: number[]; sum: number; count: number }>();
  readonly name: string;
  readonly help: string;
  private readonly bounds: readonly number[];

  constructor(name: string, help: string, bounds: readonly number[]) {
    this.name = name;
    this.help = help;
    this.bounds = bounds;
  }

  observe(result: string, seconds: number): void {
    let entry = this.byResult.get(result);
    if (!entry) {
      entry = { buckets: this.bounds.map(() => 0), sum: 0, count: 0 };
      this.byResult.set(result, entry);
    }
    const bucket = this.bounds.findIndex((bound) => seconds <= bound);
    if (bucket >= 0) entry.buckets[bucket] = (entry.buckets[bucket] ?? 0) + 1;
    entry.sum += seconds;
    entry.count += 1;
  }

  async get() {
    const values: { metricName: string; labels: Record<string, string | number>; value: number }[] = [];
    for (const [result, { buckets, sum, count }] of this.byResult) {
      let cumulative = 0;
      this.bounds.forEach((bound, i) => {
        cumulative += buckets[i] ?? 0;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, result }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_bucket`, labels: { le: '+Inf', result }, value: count });
      values.push({ metricName: `${this.name}_sum`, labels: { result }, value: sum });
      values.push({ metricName: `${this.name}_count`, labels: { result }, value: count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.byResult.clear();
  }
}

export class WebhookMetrics {
  readonly registry = new Registry();
  private readonly reviewTally = new Tally<{ target: string; to_version: string; result: string }>();
  private readonly objectTally = new Tally<{ target: string }>();
  private readonly latency = new ResultHistogram(
    'switchyard_webhook_conversion_review_seconds',
    'Time from the request body read to the answer written, by result.',
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
  );
  private readonly plansHeld = new Gauge({
    name: 'switchyard_webhook_plans_held',
    help: 'Targets this replica holds a compiled plan for (what its Lease reports).',
    registers: [this.registry],
  });
  private readonly compileFailures = new Gauge({
    name: 'switchyard_webhook_compile_failures',
    help: 'Targets whose config does not compile now (a held one serves its last good plan).',
    registers: [this.registry],
  });
  /** The Lease publisher counts its own writes; the metrics read them at each scrape. */
  private leaseStats: () => LeaseStats = () => ({ publishes: 0, renewals: 0, lastEncodedBytes: 0 });

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
    this.registry.registerMetric(this.latency as unknown as Metric);
    const metrics = this;
    new Counter({
      name: 'switchyard_webhook_conversion_reviews_total',
      help: 'ConversionReviews answered, by target, desired version and result (rejected: not a readable review).',
      labelNames: ['target', 'to_version', 'result'] as const,
      registers: [this.registry],
      collect() {
        metrics.reviewTally.flushInto(this);
      },
    });
    new Counter({
      name: 'switchyard_webhook_converted_objects_total',
      help: 'Objects converted in successful reviews, by target.',
      labelNames: ['target'] as const,
      registers: [this.registry],
      collect() {
        metrics.objectTally.flushInto(this);
      },
    });
    new Counter({
      name: 'switchyard_webhook_lease_publishes_total',
      help: 'Writes of this replica’s served-set Lease, by kind (set: the whole Lease, on a change or a recovery; renew: a heartbeat).',
      labelNames: ['kind'] as const,
      registers: [this.registry],
      collect() {
        const stats = metrics.leaseStats();
        this.reset();
        this.inc({ kind: 'set' }, stats.publishes);
        this.inc({ kind: 'renew' }, stats.renewals);
      },
    });
    new Gauge({
      name: 'switchyard_webhook_lease_served_set_bytes',
      help: 'Size of the served-set annotation last written.',
      registers: [this.registry],
      collect() {
        this.set(metrics.leaseStats().lastEncodedBytes);
      },
    });
  }

  review(target: string, toVersion: string, result: ReviewResult, seconds: number, objects = 0): void {
    this.reviewTally.add(
      `${target}\n${toVersion}\n${result}`,
      () => ({ target, to_version: toVersion, result }),
      1,
    );
    this.latency.observe(result, seconds);
    if (result === 'success') this.objectTally.add(target, () => ({ target }), objects);
  }

  plans(held: number, failing: number): void {
    this.plansHeld.set(held);
    this.compileFailures.set(failing);
  }

  /** Where the Lease figures come from (LeasePublisher.stats). */
  observeLease(stats: () => LeaseStats): void {
    this.leaseStats = stats;
  }

  /** The Prometheus text exposition, and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
