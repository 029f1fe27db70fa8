// Faults a test injects into the Pods the local node agent runs: a signal to a Pod's processes
// (SIGKILL: the container dies with no goodbye; SIGSTOP: it is alive, holds its sockets and
// answers nothing; SIGCONT: it resumes), and a force-delete through the apiserver, which removes
// the Pod object at once, as `kubectl delete pod --grace-period=0 --force` does, so its
// controller makes a replacement without waiting for the old one to stop. `killPods` is both,
// in that order: what a node lost with its Pods looks like to the rest of the cluster.
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isNotFound } from '../kube/errors.ts';
import type { NodeAgent } from './node-agent/agent.ts';

export interface PodRef {
  namespace: string;
  name: string;
}

/** The Pods matching `labelSelector` in `namespace`, by name, whatever their phase. */
export async function podsMatching(
  kc: KubeConfig,
  namespace: string,
  labelSelector: string,
): Promise<PodRef[]> {
  const pods = await kc.makeApiClient(CoreV1Api).listNamespacedPod({ namespace, labelSelector });
  return pods.items
    .filter((pod) => pod.metadata?.deletionTimestamp === undefined)
    .map((pod) => ({ namespace, name: pod.metadata?.name ?? '' }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Sends `signal` to every running process of each Pod; returns the pids signalled. A Pod the
 * agent does not run (not started yet, or gone) has none: it is left out, not an error.
 */
export function signalPods(agent: NodeAgent, pods: readonly PodRef[], signal: NodeJS.Signals): number[] {
  const wanted = new Set(pods.map((p) => `${p.namespace}/${p.name}`));
  const pids = agent
    .runningPods()
    .filter((p) => wanted.has(`${p.namespace}/${p.name}`))
    .flatMap((p) => p.pids);
  for (const pid of pids) process.kill(pid, signal);
  return pids;
}

/** Deletes the Pod object with a grace period of 0: gone from the apiserver at once. */
export async function forceDeletePod(kc: KubeConfig, pod: PodRef): Promise<void> {
  try {
    await kc.makeApiClient(CoreV1Api).deleteNamespacedPod({
      name: pod.name,
      namespace: pod.namespace,
      body: { gracePeriodSeconds: 0 },
    });
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/** SIGKILL every process of each Pod, then force-delete them all; returns the pids killed. */
export async function killPods(agent: NodeAgent, kc: KubeConfig, pods: readonly PodRef[]): Promise<number[]> {
  const pids = signalPods(agent, pods, 'SIGKILL');
  await Promise.all(pods.map((pod) => forceDeletePod(kc, pod)));
  return pids;
}
