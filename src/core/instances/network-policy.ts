// Who may connect to an instance's webhook-server replicas: a NetworkPolicy rendered beside the
// Deployment, derived from it, so it cannot drift from what the replicas serve.
//
//   podSelector  the Deployment's own selector: exactly the Pods it runs (the same labels select
//                them for the Service, the budget and the topology spread);
//   ingress      the ports the replicas' containers declare, from any source, and nothing else.
//                The one declared port is the webhook's TLS port, which also answers the probes
//                and /metrics (src/webhook/server.ts): the apiserver calls it, and the apiserver's
//                source address (a host, a load balancer, a managed control plane outside the Pod
//                network) is not something a NetworkPolicy can select. Every port is TLS-only;
//   egress       not restricted (policyTypes is Ingress alone): a replica dials the apiserver and
//                NATS, and neither address is known to Switchyard (NATS may be outside the
//                cluster, the apiserver's endpoints are the cluster's own business), so a rule
//                would either be guessed or allow everything.
//
// Enforced only where the cluster's network plugin enforces NetworkPolicy; elsewhere it is inert.
import type {
  V1Deployment,
  V1NetworkPolicy,
  V1NetworkPolicyPort,
  V1ObjectMeta,
} from '@kubernetes/client-node';

/** The replicas' NetworkPolicy: ingress on their declared ports only. */
export function replicaNetworkPolicy(metadata: V1ObjectMeta, deployment: V1Deployment): V1NetworkPolicy {
  const ports = servedPorts(deployment);
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata,
    spec: {
      podSelector: { matchLabels: { ...deployment.spec?.selector.matchLabels } },
      policyTypes: ['Ingress'],
      // No `from`: any source may reach these ports (see above); a port not listed is closed. A
      // rule with no ports would open every port, so no declared port means no rule: nothing in.
      ingress: ports.length === 0 ? [] : [{ ports }],
    },
  };
}

/** Every port any container of the Pod declares, by number and protocol, in declaration order. */
function servedPorts(deployment: V1Deployment): V1NetworkPolicyPort[] {
  const containers = deployment.spec?.template.spec?.containers ?? [];
  return containers.flatMap((c) =>
    (c.ports ?? []).map((p) => ({ port: p.containerPort, protocol: p.protocol ?? 'TCP' })),
  );
}
