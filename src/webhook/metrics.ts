// The webhook-server's Prometheus metrics (issue 12): what it converted and how fast, what it
// holds, what it publishes. prom-client keeps the registry and the text format; each replica has
// its own registry (tests run several in one process).
import { X509Certificate } from 'node:crypto';
import { Counter, collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import type { ViewLag } from '../bus/view-lag.ts';
import { registerBuildInfo } from '../metrics/build-info.ts';
import { HistogramFamily } from '../metrics/histogram-family.ts';
import { BucketCounts } from '../runtime/bucket-counts.ts';

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

const REVIEW_SECONDS_BOUNDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

export class WebhookMetrics {
  readonly registry = new Registry();
  private readonly reviewTally = new Tally<{ target: string; to_version: string; result: string }>();
  private readonly objectTally = new Tally<{ target: string }>();
  /** By result; observed on the path of every review, rendered at scrape time. */
  private readonly latency = new Map<string, BucketCounts>();
  private readonly plansHeld = new Gauge({
    name: 'switchyard_webhook_plans_held',
    help: 'Targets this replica holds a compiled plan for: those its Lease reports, and those draining or compiled for a review.',
    registers: [this.registry],
  });
  private readonly plansPending = new Gauge({
    name: 'switchyard_webhook_plans_pending_compile',
    help: 'Targets this replica should hold whose plan is not compiled yet: compiled in the background, or at once by a review; reported in the Lease only once compiled.',
    registers: [this.registry],
  });
  private readonly compileFailures = new Gauge({
    name: 'switchyard_webhook_compile_failures',
    help: 'Targets whose config does not compile now (a held one serves its last good plan).',
    registers: [this.registry],
  });
  private readonly certificateExpiry = new Gauge({
    name: 'switchyard_serving_certificate_expiry_timestamp_seconds',
    help: 'When the serving certificate this replica presents stops being valid (notAfter, Unix seconds); follows each reload of its Secret.',
    registers: [this.registry],
  });
  /** The Lease publisher counts its own writes; the metrics read them at each scrape. */
  private leaseStats: () => LeaseStats = () => ({ publishes: 0, renewals: 0, lastEncodedBytes: 0 });
  private viewFreshness: () => Pick<ViewLag, 'state' | 'confirmedAgoMs'> = () => ({
    state: 'unknown',
    confirmedAgoMs: undefined,
  });

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics) {
      collectDefaultMetrics({ register: this.registry });
      registerBuildInfo(this.registry);
    }
    const metrics = this;
    // The same names as a worker's (metrics/worker-metrics.ts): one alert covers every view.
    new Gauge({
      name: 'switchyard_view_current',
      help: 'Whether this replica’s view is current: 1 when confirmed to hold what the bus held within view.maxLagSeconds; 0 when behind or cannot tell (its Lease then says "cannot tell" and it drops no plan).',
      registers: [this.registry],
      collect() {
        this.set(metrics.viewFreshness().state === 'current' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'switchyard_view_unconfirmed_seconds',
      help: 'Seconds since this replica’s view was last confirmed to hold what the bus held (−1: never).',
      registers: [this.registry],
      collect() {
        const ago = metrics.viewFreshness().confirmedAgoMs;
        this.set(ago === undefined ? -1 : ago / 1000);
      },
    });
    new HistogramFamily(
      'switchyard_webhook_conversion_review_seconds',
      'Time from the request body read to the answer written, by result.',
      () => [...this.latency].map(([result, counts]) => ({ labels: { result }, counts })),
    ).register(this.registry);
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
  /** The certificate now served: its notAfter is what an expiry alert watches. */
  servingCertificate(certPem: string): void {
    this.certificateExpiry.set(Date.parse(new X509Certificate(certPem).validTo) / 1000);
  }

  review(target: string, toVersion: string, result: ReviewResult, seconds: number, objects = 0): void {
    this.reviewTally.add(
      `${target}\n${toVersion}\n${result}`,
      () => ({ target, to_version: toVersion, result }),
      1,
    );
    let latency = this.latency.get(result);
    if (!latency) {
      latency = new BucketCounts(REVIEW_SECONDS_BOUNDS);
      this.latency.set(result, latency);
    }
    latency.observe(seconds);
    if (result === 'success') this.objectTally.add(target, () => ({ target }), objects);
  }

  plans(held: number, failing: number, pending: number): void {
    this.plansHeld.set(held);
    this.compileFailures.set(failing);
    this.plansPending.set(pending);
  }

  /** Where the view's freshness comes from (ObjectView.freshness). */
  observeView(freshness: () => Pick<ViewLag, 'state' | 'confirmedAgoMs'>): void {
    this.viewFreshness = freshness;
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
