// A histogram's data without a registry: a bucket index and three additions per observation.
// Hot paths (every review, every handler attempt) count here, and the metrics render the counts
// when Prometheus scrapes (metrics/histogram-family.ts), where prom-client's own `observe` would
// validate and hash its labels on every call. Here, not in src/metrics, so that what counts
// (the handler runtime, the webhook) does not import the metrics that read it.

/** What a `BucketCounts` holds at one moment. */
export interface BucketSnapshot {
  bounds: readonly number[];
  /** Per bound, not cumulative: the renderer sums them up (Prometheus' `le`). */
  perBound: readonly number[];
  sum: number;
  count: number;
}

export class BucketCounts {
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

  snapshot(): BucketSnapshot {
    return { bounds: this.bounds, perBound: [...this.counts], sum: this.sum, count: this.count };
  }
}
