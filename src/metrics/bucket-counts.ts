// A histogram's data without a registry: a bucket index and three additions per observation.
// Hot paths (every review, every handler attempt) count here and a `HistogramFamily` renders
// the counts when Prometheus scrapes, where prom-client's own `observe` would validate and hash
// its labels on every call.
import type { Metric, Registry } from 'prom-client';

export class BucketCounts {
  /** Per bound, not cumulative: `samples` sums them up at scrape time (Prometheus' `le`). */
  private readonly counts: number[];
  private sum = 0;
  private count = 0;
  readonly bounds: readonly number[];

  constructor(bounds: readonly number[]) {
    this.bounds = bounds;
    for (let i = 1; i < bounds.length; i++)
      if (!((bounds[i] as number) > (bounds[i - 1] as number)))
        throw new Error(`histogram bounds must ascend: ${bounds.join(', ')}`);
    this.counts = bounds.map(() => 0);
  }

  observe(value: number): void {
    const bucket = this.bounds.findIndex((bound) => value <= bound);
    if (bucket >= 0) this.counts[bucket] = (this.counts[bucket] ?? 0) + 1;
    this.sum += value;
    this.count += 1;
  }

  /** The sample lines of this histogram under `labels`, in the text format's order. */
  samples(name: string, labels: Record<string, string>): Sample[] {
    let cumulative = 0;
    const out: Sample[] = this.bounds.map((bound, i) => {
      cumulative += this.counts[i] ?? 0;
      return { metricName: `${name}_bucket`, labels: { le: bound, ...labels }, value: cumulative };
    });
    out.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...labels }, value: this.count });
    out.push({ metricName: `${name}_sum`, labels, value: this.sum });
    out.push({ metricName: `${name}_count`, labels, value: this.count });
    return out;
  }
}

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/**
 * One histogram metric whose series are `BucketCounts` kept elsewhere: `series()` lists them,
 * with their labels, at each scrape. Registered as a custom metric (prom-client renders what
 * `get` returns).
 */
export class HistogramFamily {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  readonly name: string;
  readonly help: string;
  private readonly series: () => Iterable<{ labels: Record<string, string>; counts: BucketCounts }>;

  constructor(
    name: string,
    help: string,
    series: () => Iterable<{ labels: Record<string, string>; counts: BucketCounts }>,
  ) {
    this.name = name;
    this.help = help;
    this.series = series;
  }

  register(registry: Registry): this {
    registry.registerMetric(this as unknown as Metric);
    return this;
  }

  async get() {
    const values: Sample[] = [];
    for (const { labels, counts } of this.series()) values.push(...counts.samples(this.name, labels));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}
