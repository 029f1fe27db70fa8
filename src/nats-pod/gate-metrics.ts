// What the monitoring gate serves on /metrics: the JetStream stores' fill (jetstream-storage.ts),
// read from the server's /jsz at each scrape, beside the gate's own process metrics and
// `switchyard_build_info`. The server's own monitoring has no Prometheus format; the gate already
// reads it on loopback, so a NATS Pod needs no exporter of its own for the storage alert.
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { registerBuildInfo } from '../metrics/build-info.ts';
import type { StoreUsage } from './jetstream-storage.ts';

export class GateMetrics {
  readonly registry = new Registry();
  private readonly used = new Gauge({
    name: 'switchyard_nats_jetstream_store_used_bytes',
    help: 'Bytes the JetStream store holds on this NATS server (/jsz storage, memory), read at the scrape.',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });
  private readonly limit = new Gauge({
    name: 'switchyard_nats_jetstream_store_limit_bytes',
    help: 'The NATS server’s limit for the JetStream store (/jsz config.max_storage, max_memory); absent when it states none.',
    labelNames: ['store'] as const,
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    registerBuildInfo(this.registry);
  }

  /** The stores as the last read of /jsz says them; a limit no longer stated is no longer served. */
  observe(stores: readonly StoreUsage[]): void {
    for (const { store, usedBytes, limitBytes } of stores) {
      this.used.set({ store }, usedBytes);
      if (limitBytes === undefined) this.limit.remove({ store });
      else this.limit.set({ store }, limitBytes);
    }
  }
}
