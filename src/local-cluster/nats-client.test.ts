import { describe, expect, it } from 'vitest';
import { natsConnectOptions, natsFlags } from './nats-client.ts';

describe('connecting to the local stack’s NATS', () => {
  it('with TLS: every URL of a cluster, and the CA the server is verified against', () => {
    const nats = { natsUrl: 'nats://127.0.0.1:1, nats://127.0.0.1:2', natsCaFile: '/d/tls/ca.crt' };
    expect(natsConnectOptions(nats)).toEqual({
      servers: ['nats://127.0.0.1:1', 'nats://127.0.0.1:2'],
      tls: { caFile: '/d/tls/ca.crt' },
    });
    expect(natsFlags(nats)).toEqual([`--nats.url=${nats.natsUrl}`, '--nats.tls.caFile=/d/tls/ca.crt']);
  });

  it('without: no tls option at all, so the client does not require TLS of a server in clear', () => {
    const nats = { natsUrl: 'nats://127.0.0.1:1' };
    expect(natsConnectOptions(nats)).toEqual({ servers: ['nats://127.0.0.1:1'] });
    expect(natsFlags(nats)).toEqual(['--nats.url=nats://127.0.0.1:1']);
  });
});
