import type { NatsConnection } from '@nats-io/transport-node';

/**
 * Whether the connection is up right now, followed from its status events: false from a
 * `disconnect` until the client's own `reconnect`, and for good once the connection closed.
 * Nothing here reconnects; the client does (connect.ts: forever).
 */
export function followConnection(nc: NatsConnection): { connected(): boolean } {
  let connected = !nc.isClosed();
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') connected = false;
      else if (s.type === 'reconnect') connected = true;
    }
    connected = false;
  })();
  return { connected: () => connected && !nc.isClosed() };
}
