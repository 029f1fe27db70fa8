import type { V1EndpointSlice, V1Pod, V1Service } from '@kubernetes/client-node';

export const ENDPOINT_SLICE_MANAGER = 'local-node-agent.switchyard.dev';
const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
const MANAGED_BY_LABEL = 'endpointslice.kubernetes.io/managed-by';

export interface ReadyLocalPod {
  pod: V1Pod;
  /** containerPort → loopback port */
  hostPorts: ReadonlyMap<number, number>;
}

function selects(service: V1Service, pod: V1Pod): boolean {
  const selector = service.spec?.selector;
  if (!selector || Object.keys(selector).length === 0) return false;
  const labels = pod.metadata?.labels ?? {};
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

function containerPortFor(
  pod: V1Pod,
  targetPort: number | string | undefined,
  port: number,
): number | undefined {
  if (targetPort === undefined) return port;
  if (typeof targetPort === 'number') return targetPort;
  if (/^\d+$/.test(targetPort)) return Number(targetPort);
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === targetPort) return p.containerPort;
  }
  return undefined;
}

function sliceName(service: V1Service, pod: V1Pod): string {
  return `${service.metadata?.name}-local-${pod.metadata?.uid?.slice(0, 8)}`.slice(0, 63);
}

/**
 * The EndpointSlices the node agent publishes for one Service: one FQDN-type
 * slice per ready selected pod, address 127.0.0.1 and that pod's own loopback
 * port. One pod per slice because the port lives on the slice, not the
 * endpoint. IPv4 slices may not hold loopback addresses; FQDN slices are only
 * checked as domain names, and the apiserver's endpoint resolver uses
 * `addresses[0]` and the slice's port whatever the address type.
 */
export function desiredEndpointSlices(
  service: V1Service,
  readyPods: readonly ReadyLocalPod[],
): V1EndpointSlice[] {
  const name = service.metadata?.name ?? '';
  const namespace = service.metadata?.namespace ?? '';
  const slices: V1EndpointSlice[] = [];
  for (const { pod, hostPorts } of readyPods) {
    if (!selects(service, pod)) continue;
    const ports = (service.spec?.ports ?? []).flatMap((sp) => {
      const containerPort = containerPortFor(pod, sp.targetPort as number | string | undefined, sp.port);
      const hostPort = containerPort === undefined ? undefined : hostPorts.get(containerPort);
      return hostPort === undefined
        ? []
        : [{ name: sp.name ?? '', port: hostPort, protocol: sp.protocol ?? 'TCP' }];
    });
    if (ports.length === 0) continue;
    slices.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: sliceName(service, pod),
        namespace,
        // The Service's own labels first, as the EndpointSlice controller copies them (the
        // watchers find an instance's slices by the managed-by label its Service carries).
        labels: {
          ...service.metadata?.labels,
          [SERVICE_NAME_LABEL]: name,
          [MANAGED_BY_LABEL]: ENDPOINT_SLICE_MANAGER,
        },
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Service', name, uid: service.metadata?.uid ?? '', controller: true },
        ],
      },
      addressType: 'FQDN',
      endpoints: [
        {
          addresses: ['127.0.0.1'],
          conditions: { ready: true, serving: true, terminating: false },
          targetRef: { kind: 'Pod', name: pod.metadata?.name, namespace, uid: pod.metadata?.uid },
        },
      ],
      ports,
    });
  }
  return slices.sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
}

export const managedSliceSelector = `${MANAGED_BY_LABEL}=${ENDPOINT_SLICE_MANAGER}`;
