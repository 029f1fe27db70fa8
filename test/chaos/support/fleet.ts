// What every chaos file sets up and waits on: the worker kinds deploy/ installs, the load on a
// target at its non-storage version, a target B loses beside A at weight 1 and wins at some
// weight, and the wait for a whole system before a case starts.
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { webhookServiceName } from '../../../src/api/constants.ts';
import { SWITCHYARD_NAMESPACE } from '../../../src/local-cluster/install.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';
import type { LoadTarget } from '../../../src/scenario/conversion-load.ts';
import { SERVED_FIELD } from '../../../src/scenario/fleet.ts';
import { poolWeights } from './moves.ts';

export const WORKER_KINDS = [
  'watchers',
  'router',
  'assign',
  'lease-aggregate',
  'handover',
  'config-status',
  'instances',
] as const;

export const HANDOVER_USER = `system:serviceaccount:${SWITCHYARD_NAMESPACE}:switchyard-handover`;

/** The load's view of `<plural>.<group>`: objects of kind `kind` read and written at v2. */
export function loadTarget(kc: KubeConfig, target: string, kind: string, namespace: string): LoadTarget {
  const [plural = '', ...group] = target.split('.');
  return { kc, group: group.join('.'), version: 'v2', plural, kind, namespace, field: SERVED_FIELD };
}

/** The first of a few plurals in `group` whose target B (beside A at weight 1) loses, and wins at some weight. */
export function pickTarget(
  group: string,
  a: string,
  b: string,
): { target: string; weights: { win: number; lose: number } } {
  for (const plural of ['widgets', 'sprockets', 'valves', 'levers', 'pulleys', 'bolts', 'springs', 'dials']) {
    const target = `${plural}.${group}`;
    const weights = poolWeights(target, a, b);
    if (weights) return { target, weights };
  }
  throw new Error('no candidate target that B loses at weight 1 and wins at a higher weight');
}

export function pick<T>(items: readonly T[], random: () => number): T {
  if (items.length === 0) throw new Error('nothing to pick from');
  return items[Math.floor(random() * items.length)] as T;
}

/**
 * Every worker Deployment and the instances' Deployments have all their replicas ready and no
 * other Pod (a case starts from a whole system, whatever the previous one killed); how long it
 * had to wait.
 */
export async function waitHealthy(admin: KubeConfig, instances: readonly string[]): Promise<number> {
  const started = Date.now();
  const apps = admin.makeApiClient(AppsV1Api);
  const names = [...WORKER_KINDS.map((k) => `switchyard-${k}`), ...instances.map(webhookServiceName)];
  await waitFor(
    `${names.join(', ')} ready`,
    async () => {
      const list = await apps.listNamespacedDeployment({ namespace: SWITCHYARD_NAMESPACE });
      const ok = names.every((name) => {
        const d = list.items.find((item) => item.metadata?.name === name);
        const want = d?.spec?.replicas ?? -1;
        return (
          d !== undefined &&
          d.status?.readyReplicas === want &&
          d.status?.updatedReplicas === want &&
          d.status?.replicas === want
        );
      });
      return ok ? true : undefined;
    },
    { timeoutMs: 240_000, intervalMs: 500 },
  );
  return Date.now() - started;
}
