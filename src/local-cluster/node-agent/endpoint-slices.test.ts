import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { desiredEndpointSlices } from './endpoint-slices.ts';

const service: V1Service = {
  metadata: {
    name: 'a-webhook-server',
    namespace: 'ns',
    uid: 'svc-uid',
    labels: { 'app.kubernetes.io/managed-by': 'switchyard', 'kubernetes.io/service-name': 'spoofed' },
  },
  spec: { selector: { app: 'a' }, ports: [{ name: 'https', port: 443, targetPort: 'https' }] },
};
const pod = (name: string, app: string): V1Pod => ({
  metadata: { name, namespace: 'ns', uid: `${name}-uid-123`, labels: { app } },
  spec: { containers: [{ name: 'c', ports: [{ name: 'https', containerPort: 9443 }] }] },
});

describe('desiredEndpointSlices', () => {
  const slices = desiredEndpointSlices(service, [
    { pod: pod('a-1', 'a'), hostPorts: new Map([[9443, 40001]]) },
    { pod: pod('b-1', 'b'), hostPorts: new Map([[9443, 40002]]) },
  ]);

  it('publishes one slice per ready selected Pod, naming it in targetRef, on its loopback port', () => {
    expect(slices).toHaveLength(1);
    expect(slices[0]?.endpoints?.[0]?.targetRef?.name).toBe('a-1');
    expect(slices[0]?.ports).toEqual([{ name: 'https', port: 40001, protocol: 'TCP' }]);
  });

  it('carries the Service’s labels, as the EndpointSlice controller does, keeping its own service-name label', () => {
    expect(slices[0]?.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'switchyard',
      'kubernetes.io/service-name': 'a-webhook-server',
    });
  });
});
