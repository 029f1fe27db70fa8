import { describe, expect, it } from 'vitest';
import { isClusterOnlyAddress, kubeConfigOf, namespaceOf } from './cluster-bus.ts';

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

describe('isClusterOnlyAddress', () => {
  it("tells a Service's name from an address reachable from outside", () => {
    expect(isClusterOnlyAddress('nats://nats.switchyard-system.svc:4222')).toBe(true);
    expect(isClusterOnlyAddress('nats://nats.switchyard-system.svc.cluster.local:4222')).toBe(true);
    expect(isClusterOnlyAddress('tls://127.0.0.1:4222,nats://a.svc:4222')).toBe(true);
    expect(isClusterOnlyAddress('nats://127.0.0.1:35397')).toBe(false);
    expect(isClusterOnlyAddress('nats://nats.example.com:4222')).toBe(false);
  });
});
