import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';

/** Where a pod's process finds the node-agent-specific values it is given. */
export interface PodRuntimeFacts {
  podIP: string;
  nodeName: string;
  kubeConfigPath: string | undefined;
  hostPorts: ReadonlyMap<number, number>;
}

/** Environment variable naming the loopback port that stands in for a container port. */
export function hostPortVariable(containerPort: number): string {
  return `SWITCHYARD_HOST_PORT_${containerPort}`;
}

function fieldRefValue(pod: V1Pod, fieldPath: string, facts: PodRuntimeFacts): string {
  switch (fieldPath) {
    case 'metadata.name':
      return pod.metadata?.name ?? '';
    case 'metadata.namespace':
      return pod.metadata?.namespace ?? '';
    case 'metadata.uid':
      return pod.metadata?.uid ?? '';
    case 'spec.nodeName':
      return facts.nodeName;
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? 'default';
    case 'status.podIP':
    case 'status.hostIP':
      return facts.podIP;
    default:
      throw new Error(`unsupported downward API field ${fieldPath}`);
  }
}

function envVarValue(pod: V1Pod, v: V1EnvVar, facts: PodRuntimeFacts): string {
  if (v.value !== undefined) return v.value;
  const fieldPath = v.valueFrom?.fieldRef?.fieldPath;
  if (fieldPath) return fieldRefValue(pod, fieldPath, facts);
  if (v.valueFrom)
    throw new Error(`env ${v.name}: only value and fieldRef are supported by the local node agent`);
  return '';
}

/**
 * The environment of one container's process: the container's own `env`
 * (values and downward-API fields), where to reach the apiserver as the pod's
 * ServiceAccount, and the loopback port standing in for each container port
 * (every pod shares the host's network here, so two replicas cannot both listen
 * on 9443).
 */
export function containerEnv(
  pod: V1Pod,
  container: V1Container,
  facts: PodRuntimeFacts,
): Record<string, string> {
  const env: Record<string, string> = {};
  if (facts.kubeConfigPath) env.KUBECONFIG = facts.kubeConfigPath;
  for (const [containerPort, hostPort] of facts.hostPorts)
    env[hostPortVariable(containerPort)] = String(hostPort);
  for (const v of container.env ?? []) env[v.name] = envVarValue(pod, v, facts);
  return env;
}
