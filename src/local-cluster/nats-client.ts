// How anything outside the stack (a test, a benchmark, the demo's CLI hints) connects to the local
// stack's NATS: its URLs and, when the server requires TLS, the CA its certificate chains to. One
// place, so no caller connects in clear or without verifying the server.
import { natsServerList } from '../bus/connect.ts';
import type { NatsClientTls, NatsTlsFiles } from '../bus/tls.ts';

/** Where the local stack's NATS is (`LocalClusterInfo` has both). */
export interface LocalNatsAddress {
  /** `nats.url`: one URL, or a cluster's comma-separated. */
  natsUrl: string;
  /** The CA the server's certificate chains to (`nats.tls.caFile`); absent when it serves no TLS. */
  natsCaFile?: string | undefined;
}

/** What `connect()` of @nats-io/transport-node takes for it; spread, then add the caller's options. */
export function natsConnectOptions(nats: LocalNatsAddress): { servers: string[]; tls?: NatsClientTls } {
  const servers = natsServerList(nats.natsUrl);
  return nats.natsCaFile ? { servers, tls: { caFile: nats.natsCaFile } } : { servers };
}

/** The same as `connectBus` takes it (`nats.tls`). */
export function natsTlsOf(nats: LocalNatsAddress): NatsTlsFiles | undefined {
  return nats.natsCaFile ? { caFile: nats.natsCaFile, certFile: '', keyFile: '' } : undefined;
}

/** The same for a `switchyard` command: its `--nats.url` and, with TLS, `--nats.tls.caFile`. */
export function natsFlags(nats: LocalNatsAddress): string[] {
  return [`--nats.url=${nats.natsUrl}`, ...(nats.natsCaFile ? [`--nats.tls.caFile=${nats.natsCaFile}`] : [])];
}
