// Histograms whose counts are kept by the code that observes them (runtime/bucket-counts.ts) and
// rendered here when Prometheus scrapes.
import type { Metric, Registry } from 'prom-client';
import type { BucketCounts, BucketSnapshot } from '../runtime/bucket-counts.ts';

interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

/** The sample lines of one histogram series under `labels`, in the text format's order. */
export function histogramSamples(
  name: string,
  labels: Record<string, string>,
  counts: BucketSnapshot,
): Sample[] {
  let cumulative = 0;
  const out: Sample[] = counts.bounds.map((bound, i) => {
    cumulative += counts.perBound[i] ?? 0;
    return { metricName: `${name}_bucket`, labels: { le: bound, ...labels }, value: cumulative };
  });
  out.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...labels }, value: counts.count });
  out.push({ metricName: `${name}_sum`, labels, value: counts.sum });
  out.push({ metricName: `${name}_count`, labels, value: counts.count });
  return out;
}

/**
 * One histogram metric whose series are counts kept elsewhere: `series()` lists them, with
 * their labels, at each scrape. Registered as a custom metric (prom-client renders what `get`
 * returns).
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
    for (const { labels, counts } of this.series())
      values.push(...histogramSamples(this.name, labels, counts.snapshot()));
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {}
}
