// Who deploy/'s NetworkPolicies let in (issue 29), read from the rendered overlays the way a
// network plugin reads them: every policy that selects a Pod adds the peers and ports it allows.
// NATS takes clients from every workload of deploy/ that connects to it and from the
// webhook-server replicas of opted-in namespaces, and nothing on its monitoring port but KEDA's
// namespace with deploy/autoscaling and Prometheus with deploy/monitoring; a cluster's route port only from the servers; the admission
// webhook its serving port from anywhere. (test/deploy.itest.ts dry-runs every overlay, these
// policies included, against the apiserver.)
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import type { KubernetesObject } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { INSTANCE_NAMESPACE_LABEL, INSTANCE_NAMESPACE_OPTED_IN } from '../src/core/instance-admission.ts';
import { childLabels } from '../src/core/instances/children.ts';
import { PROJECT_ROOT } from '../src/local-cluster/cluster.ts';

const run = promisify(execFile);

type Labels = Record<string, string>;
interface Selector {
  matchLabels?: Labels;
}
interface Peer {
  podSelector?: Selector;
  namespaceSelector?: Selector;
}
interface Rule {
  from?: Peer[];
  ports?: { port: string | number }[];
}
interface Policy {
  kind: 'NetworkPolicy';
  metadata: { name: string };
  spec: { podSelector: Selector; policyTypes: string[]; ingress?: Rule[] };
}
interface Workload {
  kind: string;
  metadata: { name: string };
  spec: {
    template: {
      metadata: { labels: Labels };
      spec: { containers: { env?: { name: string }[]; ports?: { name: string; containerPort: number }[] }[] };
    };
  };
}

/** An overlay of deploy/ with the given components, rendered by kubectl's kustomize. */
async function render(overlay: string, components: string[] = []): Promise<KubernetesObject[]> {
  if (components.length === 0) {
    const { stdout } = await run('kubectl', ['kustomize', join(PROJECT_ROOT, 'deploy', overlay)]);
    return parsed(stdout);
  }
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-policies-'));
  try {
    await writeFile(
      join(dir, 'kustomization.yaml'),
      [
        'apiVersion: kustomize.config.k8s.io/v1beta1',
        'kind: Kustomization',
        'resources:',
        `  - ${relative(dir, join(PROJECT_ROOT, 'deploy', overlay))}`,
        'components:',
        ...components.map((c) => `  - ${relative(dir, join(PROJECT_ROOT, 'deploy', c))}`),
        '',
      ].join('\n'),
    );
    const { stdout } = await run('kubectl', ['kustomize', dir]);
    return parsed(stdout);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Plain objects as the manifests spell them (the client's typed models rename `from` to `_from`). */
const parsed = (text: string) => parseAllDocuments(text).map((d) => d.toJS() as KubernetesObject);

const matches = (selector: Selector | undefined, labels: Labels) =>
  Object.entries(selector?.matchLabels ?? {}).every(([k, v]) => labels[k] === v);

/**
 * The ports (by name or number, as the policies say them) a Pod with `labels` may be reached on
 * from a Pod with `from` labels in a namespace with `namespace` labels; `undefined`: every port
 * (the Pod is selected by no policy). A peer without a namespaceSelector is the policy's own
 * namespace (`ownNamespace`).
 */
function reachablePorts(
  policies: Policy[],
  target: Labels,
  from: { pod: Labels; namespace: Labels; ownNamespace: boolean },
): Set<string> | undefined {
  const selecting = policies.filter(
    (p) => p.spec.policyTypes.includes('Ingress') && matches(p.spec.podSelector, target),
  );
  if (selecting.length === 0) return undefined;
  const ports = new Set<string>();
  for (const rule of selecting.flatMap((p) => p.spec.ingress ?? [])) {
    const admitted =
      rule.from === undefined ||
      rule.from.some((peer) =>
        peer.namespaceSelector === undefined
          ? from.ownNamespace && matches(peer.podSelector, from.pod)
          : matches(peer.namespaceSelector, from.namespace) && matches(peer.podSelector, from.pod),
      );
    if (admitted) for (const p of rule.ports ?? [{ port: '*' }]) ports.add(String(p.port));
  }
  return ports;
}

const policiesOf = (objects: KubernetesObject[]) =>
  objects.filter((o) => o.kind === 'NetworkPolicy') as unknown as Policy[];
const natsPodOf = (objects: KubernetesObject[]) => {
  const nats = objects.find((o) => o.kind === 'StatefulSet') as unknown as Workload | undefined;
  if (!nats) throw new Error('no NATS StatefulSet rendered');
  return nats.spec.template.metadata.labels;
};
const usesNats = (w: Workload) =>
  w.spec.template.spec.containers.some((c) => (c.env ?? []).some((e) => e.name === 'SWITCHYARD_NATS_URL'));
const SYSTEM_NS = { 'kubernetes.io/metadata.name': 'switchyard-system' };
const OPTED_IN_NS = {
  'kubernetes.io/metadata.name': 'team-a',
  [INSTANCE_NAMESPACE_LABEL]: INSTANCE_NAMESPACE_OPTED_IN,
};
const OTHER_NS = { 'kubernetes.io/metadata.name': 'team-b' };

describe('the NetworkPolicies of deploy/', () => {
  it.each([
    'default',
    'nats-cluster',
  ])('%s: NATS takes clients from every workload that connects to it and from opted-in webhook-server replicas only; no Pod reaches its monitoring port', async (overlay) => {
    const objects = await render(overlay);
    const policies = policiesOf(objects);
    const nats = natsPodOf(objects);
    const workloads = (objects as unknown as Workload[]).filter(
      (o) => (o.kind === 'Deployment' || o.kind === 'Job') && usesNats(o),
    );
    expect(workloads.length, 'the seven worker kinds and the bus-setup Job').toBe(8);
    for (const w of workloads)
      expect(
        reachablePorts(policies, nats, {
          pod: w.spec.template.metadata.labels,
          namespace: SYSTEM_NS,
          ownNamespace: true,
        }),
        `${w.metadata.name} would be cut off from NATS`,
      ).toEqual(new Set(['client']));

    const replica = childLabels('blue');
    expect(
      reachablePorts(policies, nats, { pod: replica, namespace: OPTED_IN_NS, ownNamespace: false }),
      'a webhook-server replica of an opted-in namespace',
    ).toEqual(new Set(['client']));
    // The controls: the same replica where the namespace did not opt in, and another Pod in an
    // opted-in namespace, reach nothing; so does a Pod elsewhere in the cluster.
    for (const [what, from] of [
      ['a replica in a namespace that did not opt in', { pod: replica, namespace: OTHER_NS }],
      ['another Pod of an opted-in namespace', { pod: { app: 'x' }, namespace: OPTED_IN_NS }],
      ['a Pod of another namespace', { pod: { app: 'x' }, namespace: OTHER_NS }],
    ] as const)
      expect(reachablePorts(policies, nats, { ...from, ownNamespace: false }), what).toEqual(new Set());
    // Nothing anywhere names the monitoring port: it stays the node's (the kubelet's probes).
    const named = policies.flatMap((p) =>
      matches(p.spec.podSelector, nats)
        ? (p.spec.ingress ?? []).flatMap((r) => (r.ports ?? []).map((x) => String(x.port)))
        : [],
    );
    expect(named).not.toContain('monitor');
    expect(named).not.toContain('8222');
  });

  it('nats-cluster: only the servers reach each other’s route port', async () => {
    const objects = await render('nats-cluster');
    const policies = policiesOf(objects);
    const nats = natsPodOf(objects);
    expect(reachablePorts(policies, nats, { pod: nats, namespace: SYSTEM_NS, ownNamespace: true })).toEqual(
      new Set(['client', 'cluster']),
    );
    const watchers = (objects as unknown as Workload[]).find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'switchyard-watchers',
    );
    if (!watchers) throw new Error('no watchers Deployment rendered');
    expect(
      reachablePorts(policies, nats, {
        pod: watchers.spec.template.metadata.labels,
        namespace: SYSTEM_NS,
        ownNamespace: true,
      }),
    ).not.toContain('cluster');
  });

  it('autoscaling: KEDA’s namespace, and only it, reads the monitoring port', async () => {
    const objects = await render('default', ['autoscaling']);
    const policies = policiesOf(objects);
    const nats = natsPodOf(objects);
    const keda = { 'kubernetes.io/metadata.name': 'keda' };
    expect(
      reachablePorts(policies, nats, { pod: { app: 'keda-operator' }, namespace: keda, ownNamespace: false }),
    ).toEqual(new Set(['monitor']));
    expect(
      reachablePorts(policies, nats, { pod: { app: 'x' }, namespace: OTHER_NS, ownNamespace: false }),
    ).toEqual(new Set());
  });

  it.each([
    'default',
    'nats-cluster',
  ])('%s with monitoring: Prometheus’s Pods, and no other Pod of its namespace, scrape the monitoring port', async (overlay) => {
    const objects = await render(overlay, ['monitoring']);
    const policies = policiesOf(objects);
    const nats = natsPodOf(objects);
    const monitoring = { 'kubernetes.io/metadata.name': 'monitoring' };
    const prometheus = { 'app.kubernetes.io/name': 'prometheus', 'app.kubernetes.io/instance': 'k8s' };
    expect(
      reachablePorts(policies, nats, { pod: prometheus, namespace: monitoring, ownNamespace: false }),
    ).toEqual(new Set(['monitor']));
    for (const [pod, namespace] of [
      [{ 'app.kubernetes.io/name': 'grafana' }, monitoring],
      [prometheus, OTHER_NS],
    ] as const)
      expect(reachablePorts(policies, nats, { pod, namespace, ownNamespace: false })).toEqual(new Set());
  });

  it('the admission webhook takes its serving port from anywhere, and nothing else', async () => {
    const objects = await render('default');
    const admission = (objects as unknown as Workload[]).find(
      (o) => o.kind === 'Deployment' && o.metadata.name === 'switchyard-admission',
    );
    if (!admission) throw new Error('no admission Deployment rendered');
    const served = admission.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => p.name));
    expect(served).toEqual(['https']);
    expect(
      reachablePorts(policiesOf(objects), admission.spec.template.metadata.labels, {
        pod: {},
        namespace: {},
        ownNamespace: false,
      }),
    ).toEqual(new Set(['https']));
  });
});
