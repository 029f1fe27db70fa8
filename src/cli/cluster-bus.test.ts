import { describe, expect, it } from 'vitest';
import { clusterServiceOf, kubeConfigOf, namespaceOf } from './cluster-bus.ts';

describe('namespaceOf', () => {
  it('is the one -n names, else the one deploy/ installs into', () => {
    expect(namespaceOf({ namespace: 'sy' })).toBe('sy');
    expect(namespaceOf({})).toBe('switchyard-system');
  });
});

describe('kubeConfigOf', () => {
  it('finds none when no flag, KUBECONFIG or ~/.kube/config names one', () => {
    expect(kubeConfigOf({ namespace: 'x' }, { HOME: '/nonexistent' })).toBeUndefined();
    expect(kubeConfigOf({ namespace: 'x' }, {})).toBeUndefined();
  });
});

describe('clusterServiceOf', () => {
  it('names the Service behind an address only the cluster resolves', () => {
    expect(clusterServiceOf('nats://nats.switchyard-system.svc:4222')).toEqual({
      scheme: 'nats',
      host: 'nats.switchyard-system.svc',
      service: 'nats',
      namespace: 'switchyard-system',
      port: 4222,
    });
    expect(clusterServiceOf('tls://bus.team-a.svc.cluster.local')).toEqual({
      scheme: 'tls',
      host: 'bus.team-a.svc.cluster.local',
      service: 'bus',
      namespace: 'team-a',
      port: 4222,
    });
    // A list of Services: the first one.
    expect(clusterServiceOf('nats.a.svc:4223, nats.b.svc:4224')).toMatchObject({
      namespace: 'a',
      port: 4223,
    });
  });

  it('is undefined when a server resolves outside the cluster, or is not a Service’s name', () => {
    for (const url of [
      'nats://127.0.0.1:35397',
      'nats://nats.example.com:4222',
      'tls://127.0.0.1:4222,nats://nats.a.svc:4222',
      'nats://nats-0.nats-headless.a.svc:4222',
      'nats://a.svc:4222',
      'nats://nats.a.svc.example.com:4222',
      'nats://[::1]:4222',
      '',
      'nats://%zz:1',
    ])
      expect(clusterServiceOf(url), url).toBeUndefined();
  });
});
