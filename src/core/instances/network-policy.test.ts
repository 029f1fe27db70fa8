import type { V1Deployment } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { replicaNetworkPolicy } from './network-policy.ts';

function deploymentWith(ports: { containerPort: number; protocol?: string }[][]): V1Deployment {
  return {
    spec: {
      selector: { matchLabels: { app: 'x' } },
      template: { spec: { containers: ports.map((p, i) => ({ name: `c${i}`, ports: p })) } },
    },
  };
}

describe('replicaNetworkPolicy', () => {
  it('opens every port of every container, TCP unless said otherwise', () => {
    const policy = replicaNetworkPolicy(
      { name: 'x' },
      deploymentWith([[{ containerPort: 9443 }], [{ containerPort: 9090, protocol: 'UDP' }]]),
    );
    expect(policy.spec?.ingress).toEqual([
      {
        ports: [
          { port: 9443, protocol: 'TCP' },
          { port: 9090, protocol: 'UDP' },
        ],
      },
    ]);
  });

  it('with no declared port, lets nothing in: a rule without ports would open every port', () => {
    const policy = replicaNetworkPolicy({ name: 'x' }, deploymentWith([[]]));
    expect(policy.spec?.ingress).toEqual([]);
    expect(policy.spec?.policyTypes).toEqual(['Ingress']);
  });

  it('copies the selector: changing the policy later cannot change the Deployment', () => {
    const deployment = deploymentWith([[{ containerPort: 1 }]]);
    const policy = replicaNetworkPolicy({ name: 'x' }, deployment);
    expect(policy.spec?.podSelector?.matchLabels).toEqual({ app: 'x' });
    expect(policy.spec?.podSelector?.matchLabels).not.toBe(deployment.spec?.selector.matchLabels);
  });
});
