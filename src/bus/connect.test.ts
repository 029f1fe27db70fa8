import { describe, expect, it } from 'vitest';
import { natsServerList } from './connect.ts';

describe('natsServerList', () => {
  it('takes one URL as it is', () => {
    expect(natsServerList('nats://nats.switchyard-system.svc:4222')).toEqual([
      'nats://nats.switchyard-system.svc:4222',
    ]);
  });

  it("splits a cluster's comma-separated URLs, spaces and empty entries dropped", () => {
    expect(natsServerList('nats://a:4222, nats://b:4222,,nats://c:4222 ')).toEqual([
      'nats://a:4222',
      'nats://b:4222',
      'nats://c:4222',
    ]);
  });
});
