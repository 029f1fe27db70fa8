import { describe, expect, it } from 'vitest';
import { isClusterOnlyAddress, kubeConfigOf, takeClusterFlags } from './cluster-bus.ts';

describe('takeClusterFlags', () => {
  it("takes kubectl's flags out, in either form, and leaves the command's own", () => {
    expect(
      takeClusterFlags([
        'widgets.example.com',
        '--kubeconfig=/k',
        '--context',
        'prod',
        '-n',
        'sy',
        '-o',
        'json',
      ]),
    ).toEqual({
      cluster: { kubeconfig: '/k', context: 'prod', namespace: 'sy' },
      rest: ['widgets.example.com', '-o', 'json'],
    });
    expect(takeClusterFlags(['--namespace=other', '--nats.url=nats://x:4222'])).toEqual({
      cluster: { namespace: 'other' },
      rest: ['--nats.url=nats://x:4222'],
    });
    expect(takeClusterFlags([]).cluster).toEqual({ namespace: 'switchyard-system' });
  });

  it('refuses a flag without its value', () => {
    expect(() => takeClusterFlags(['-n'])).toThrow('-n needs a value');
    expect(() => takeClusterFlags(['--kubeconfig='])).toThrow('--kubeconfig needs a value');
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
