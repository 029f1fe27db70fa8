// What every chaos file sets up and waits on: the worker kinds deploy/ installs, the load on a
// target at its non-storage version, a target B loses beside A at weight 1 and wins at some
// weight, and the wait for a whole system before a case starts.
import { AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { JetStreamManager } from '@nats-io/jetstream';
import { webhookServiceName } from '../../../src/api/constants.ts';
import { SWITCHYARD_NAMESPACE } from '../../../src/local-cluster/install.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';
import { ConversionLoad, type LoadOptions, type LoadTarget } from '../../../src/scenario/conversion-load.ts';
import { configStatus, handoverReady, SERVED_FIELD } from '../../../src/scenario/fleet.ts';
import type { InstalledCluster } from '../../e2e/support/installed-cluster.ts';
import { auditLogFromNow } from '../../support/audit-log.ts';
import type { Subject } from './chaos-case.ts';
import { poolWeights } from './moves.ts';

/** The load every chaos file runs on its target: four clients, twelve objects, 40 ms between requests. */
export const CHAOS_LOAD: Omit<LoadOptions, 'run'> = { workers: 4, objectsPerWorker: 3, pauseMs: 40 };

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

/**
 * What the cases move and watch, with the load on the target started: `config` serves `target`
 * (a Widget CRD, objects in `namespace`) on one of `instances`. The audit log is read from now.
 */
export async function loadedSubject(opts: {
  installed: InstalledCluster;
  jsm: JetStreamManager;
  run: string;
  config: string;
  target: string;
  namespace: string;
  instances: readonly string[];
}): Promise<Subject> {
  const { admin, cluster, witness } = opts.installed;
  // Before its first apply the target converts nothing (conversion None): a read at the other
  // version then misses the renamed field, which is the cluster before Switchyard, not a fault.
  await waitFor(
    `${opts.target} first applied (${opts.config} HandoverReady)`,
    async () => (handoverReady(await configStatus(admin, opts.config))?.status === 'True' ? true : undefined),
    { timeoutMs: 120_000, intervalMs: 250 },
  );
  const audit = await auditLogFromNow(cluster.auditLog);
  const load = new ConversionLoad(loadTarget(admin, opts.target, 'Widget', opts.namespace), {
    run: opts.run,
    ...CHAOS_LOAD,
  });
  await load.start();
  return {
    admin,
    config: opts.config,
    target: opts.target,
    instances: opts.instances,
    load,
    witness,
    jsm: opts.jsm,
    audit: () => audit.all(),
    handoverUser: HANDOVER_USER,
  };
}
