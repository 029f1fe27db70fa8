import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  CoreV1Api,
  DiscoveryV1Api,
  type Informer,
  type KubeConfig,
  makeInformer,
  type ObjectCache,
  PatchStrategy,
  setHeaderOptions,
  type V1EndpointSlice,
  type V1Pod,
  type V1Secret,
  type V1Service,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { isConflict } from '../../kube/errors.ts';
import { type ClusterEndpoint, writeKubeConfig } from '../kubeconfig.ts';
import { desiredEndpointSlices, managedSliceSelector, type ReadyLocalPod } from './endpoint-slices.ts';
import { type ContainerLogs, type PodStreams, startKubeletServer } from './kubelet-server.ts';
import { PodRunner } from './pod-runner.ts';
import { SerialQueues } from './serial-queues.ts';

export interface NodeAgentOptions {
  kubeConfig: KubeConfig;
  endpoint: ClusterEndpoint;
  nodeName: string;
  projectRoot: string;
  dir: string;
  log: Logger;
  /** The kubelet API's serving certificate and key, and the CA its callers' certificates chain to (PEM). */
  kubeletTls: { cert: string; key: string; ca: string };
}

const MAX_GRACE_MS = 30_000;

/**
 * A kubelet and kube-proxy stand-in for one local node. It binds pending Pods
 * to its node (there is no scheduler), runs the project's own image as local
 * processes, reports their status and readiness, publishes ready endpoints for
 * the Services that select them, and finishes the deletion of its Pods. It serves the kubelet
 * API on loopback, so `kubectl logs`, `port-forward` and `exec` work (kubelet-server.ts).
 */
export class NodeAgent {
  private readonly core: CoreV1Api;
  private readonly discovery: DiscoveryV1Api;
  private readonly runners = new Map<string, PodRunner>();
  private readonly queues: SerialQueues;
  private pods!: Informer<V1Pod>;
  private services!: Informer<V1Service> & ObjectCache<V1Service>;
  private secrets!: Informer<V1Secret> & ObjectCache<V1Secret>;
  private stopped = false;
  private kubelet: { port: number; close(): Promise<void> } | undefined;

  private readonly opts: NodeAgentOptions;

  constructor(opts: NodeAgentOptions) {
    this.opts = opts;
    this.queues = new SerialQueues((key, err) => opts.log.error({ err, key }, 'node agent task failed'));
    this.core = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.discovery = opts.kubeConfig.makeApiClient(DiscoveryV1Api);
  }

  async start(): Promise<void> {
    this.kubelet = await startKubeletServer({
      ...this.opts.kubeletTls,
      logs: this.containerLogs(),
      streams: this.podStreams(),
      log: this.opts.log,
    });
    await this.registerNode(this.kubelet.port);
    this.services = makeInformer(this.opts.kubeConfig, '/api/v1/services', () =>
      this.core.listServiceForAllNamespaces(),
    );
    this.secrets = makeInformer(this.opts.kubeConfig, '/api/v1/secrets', () =>
      this.core.listSecretForAllNamespaces(),
    );
    this.pods = makeInformer(this.opts.kubeConfig, '/api/v1/pods', () => this.core.listPodForAllNamespaces());
    for (const informer of [this.services, this.secrets, this.pods] as Informer<
      V1Service | V1Secret | V1Pod
    >[]) {
      informer.on('error', (err) => {
        if (this.stopped) return;
        this.opts.log.warn({ err }, 'informer stopped; restarting');
        setTimeout(() => void informer.start(), 1000).unref();
      });
    }
    const onService = (svc: V1Service) => void this.syncEndpoints(svc.metadata?.namespace ?? '');
    this.services.on('add', onService);
    this.services.on('update', onService);
    const onSecret = (secret: V1Secret) => this.onSecret(secret);
    this.secrets.on('add', onSecret);
    this.secrets.on('update', onSecret);
    this.pods.on('add', (pod) => this.onPod(pod));
    this.pods.on('update', (pod) => this.onPod(pod));
    this.pods.on('delete', (pod) => this.onPodGone(pod));
    await this.services.start();
    await this.secrets.start();
    await this.pods.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.allSettled([
      this.pods?.stop(),
      this.services?.stop(),
      this.secrets?.stop(),
      this.kubelet?.close(),
    ]);
    await Promise.all([...this.runners.values()].map((r) => r.stop(2_000)));
    this.runners.clear();
  }

  /** Pods this agent runs, with their process ids (for tests and the demo). */
  runningPods(): { namespace: string; name: string; uid: string; ready: boolean; pids: number[] }[] {
    return [...this.runners.values()].map((r) => ({
      namespace: r.pod.metadata?.namespace ?? '',
      name: r.pod.metadata?.name ?? '',
      uid: r.uid,
      ready: r.ready,
      pids: r.pids,
    }));
  }

  private runnerOf(namespace: string, pod: string): PodRunner | undefined {
    return [...this.runners.values()].find(
      (r) => r.pod.metadata?.namespace === namespace && r.pod.metadata?.name === pod,
    );
  }

  private notHere(namespace: string, pod: string): { missing: string } {
    return { missing: `pod ${namespace}/${pod} does not run on ${this.opts.nodeName}` };
  }

  /** What port-forward and exec reach in the Pods this agent runs. */
  private podStreams(): PodStreams {
    return {
      ports: (namespace, pod) => {
        const runner = this.runnerOf(namespace, pod);
        return runner ? (port) => runner.hostPortOf(port) : this.notHere(namespace, pod);
      },
      execIn: (namespace, pod, container) => {
        const runner = this.runnerOf(namespace, pod);
        return runner ? () => runner.execEnvironment(container) : this.notHere(namespace, pod);
      },
    };
  }

  /** The logs of the Pods this agent runs, by namespace, Pod and container name. */
  private containerLogs(): ContainerLogs {
    const runnerOf = (namespace: string, pod: string) => this.runnerOf(namespace, pod);
    return {
      logFile: (namespace, pod, container, previous) => {
        const runner = runnerOf(namespace, pod);
        if (!runner) return this.notHere(namespace, pod);
        const file = runner.logFileOf(container, previous);
        if (!file) return { missing: `container ${container} is not in pod ${namespace}/${pod}` };
        if (!existsSync(file))
          return {
            missing: previous
              ? `previous terminated container "${container}" in pod "${pod}" not found`
              : `container "${container}" in pod "${pod}" has not started`,
          };
        return file;
      },
      running: (namespace, pod, container) => runnerOf(namespace, pod)?.isRunning(container) ?? false,
    };
  }

  private async registerNode(kubeletPort: number): Promise<void> {
    const name = this.opts.nodeName;
    try {
      await this.core.createNode({
        body: { metadata: { name, labels: { 'kubernetes.io/hostname': name } } },
      });
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
    const now = new Date();
    await this.core.patchNodeStatus(
      {
        name,
        body: {
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'LocalNodeAgentReady',
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              },
            ],
            // The apiserver reaches the kubelet API at the InternalIP (it prefers it:
            // --kubelet-preferred-address-types), never by resolving the node's name.
            addresses: [
              { type: 'InternalIP', address: '127.0.0.1' },
              { type: 'Hostname', address: name },
            ],
            daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } },
            capacity: { cpu: '2', memory: '24Gi', pods: '1000' },
            allocatable: { cpu: '2', memory: '24Gi', pods: '1000' },
          },
        },
      },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
  }

  private onPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.queues.run(uid, async () => {
      if (this.stopped) return;
      if (!pod.spec?.nodeName) {
        if (!pod.metadata?.deletionTimestamp) await this.bind(pod);
        return;
      }
      if (pod.spec.nodeName !== this.opts.nodeName) return;
      if (pod.metadata?.deletionTimestamp) {
        await this.terminate(pod);
        return;
      }
      if (this.runners.has(uid) || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')
        return;
      await this.run(pod);
    });
  }

  /** Secret volumes follow their Secret, and a pod waiting for a Secret starts when it appears. */
  private onSecret(secret: V1Secret): void {
    const { name = '', namespace = '' } = secret.metadata ?? {};
    for (const runner of this.runners.values()) {
      if (runner.pod.metadata?.namespace !== namespace) continue;
      this.queues.run(runner.uid, () => runner.secretChanged(name));
    }
  }

  private onPodGone(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.queues.run(uid, async () => {
      const runner = this.runners.get(uid);
      if (!runner) return;
      this.runners.delete(uid);
      void this.syncEndpoints(pod.metadata?.namespace ?? '');
      await runner.stop(0);
    });
  }

  private async bind(pod: V1Pod): Promise<void> {
    const { name = '', namespace = '' } = pod.metadata ?? {};
    try {
      await this.core.createNamespacedPodBinding({
        name,
        namespace,
        body: {
          metadata: { name, namespace },
          target: { apiVersion: 'v1', kind: 'Node', name: this.opts.nodeName },
        },
      });
    } catch (err) {
      // 409: already bound (a previous event of the same pod).
      if (!isConflict(err)) this.opts.log.warn({ err, pod: name, namespace }, 'bind failed');
    }
  }

  private async run(pod: V1Pod): Promise<void> {
    const { name = '', namespace = '', uid = '' } = pod.metadata ?? {};
    const log = this.opts.log.child({ pod: name, namespace });
    const runner = new PodRunner(pod, {
      log,
      projectRoot: this.opts.projectRoot,
      podDir: join(this.opts.dir, 'pods', `${namespace}_${name}_${uid.slice(0, 8)}`),
      nodeName: this.opts.nodeName,
      provisionCredentials: (p, dir) => this.provisionCredentials(p, dir),
      secret: (ns, secretName) => this.secrets.get(secretName, ns),
      onChange: () => this.reportStatus(runner),
    });
    this.runners.set(uid, runner);
    await runner.start();
  }

  /** Deletion as kubelet does it: unpublish the endpoints, stop the processes, then remove the object. */
  private async terminate(pod: V1Pod): Promise<void> {
    const { name = '', namespace = '', uid = '' } = pod.metadata ?? {};
    const runner = this.runners.get(uid);
    this.runners.delete(uid);
    if (runner) {
      await this.syncEndpoints(namespace);
      const graceMs = Math.min(MAX_GRACE_MS, (pod.metadata?.deletionGracePeriodSeconds ?? 30) * 1000);
      await runner.stop(graceMs);
    }
    try {
      // With a body, the apiserver reads the delete options from it alone: the
      // grace period has to be there, not in the query.
      await this.core.deleteNamespacedPod({
        name,
        namespace,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
    } catch (err) {
      const code = (err as { code?: number }).code;
      // 404: already gone; 409: the uid precondition failed, a new pod took the name.
      if (code !== 404 && code !== 409) this.opts.log.warn({ err, pod: name }, 'final pod delete failed');
    }
  }

  private async provisionCredentials(pod: V1Pod, dir: string): Promise<string | undefined> {
    if (pod.spec?.automountServiceAccountToken === false) return undefined;
    const { name = '', namespace = '', uid = '' } = pod.metadata ?? {};
    const serviceAccount = pod.spec?.serviceAccountName ?? 'default';
    const tokenRequest = await this.core.createNamespacedServiceAccountToken({
      name: serviceAccount,
      namespace,
      body: {
        spec: {
          audiences: [],
          expirationSeconds: 24 * 3600,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name, uid },
        },
      },
    });
    const path = join(dir, 'kubeconfig');
    const user = `system:serviceaccount:${namespace}:${serviceAccount}`;
    await writeKubeConfig(path, this.opts.endpoint, user, tokenRequest.status?.token ?? '');
    return path;
  }

  private reportStatus(runner: PodRunner): void {
    const { name = '', namespace = '' } = runner.pod.metadata ?? {};
    this.queues.run(`status/${runner.uid}`, async () => {
      if (this.stopped || this.runners.get(runner.uid) !== runner) return;
      try {
        await this.core.patchNamespacedPodStatus(
          { name, namespace, body: { status: runner.status() } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code !== 404) this.opts.log.warn({ err, pod: name }, 'status update failed');
      }
      void this.syncEndpoints(namespace);
    });
  }

  /** Queues a reconcile of the namespace's endpoints; resolves when it has run. */
  private syncEndpoints(namespace: string): Promise<void> {
    return this.queues.run(`endpoints/${namespace}`, () => this.reconcileEndpoints(namespace));
  }

  private async reconcileEndpoints(namespace: string): Promise<void> {
    if (this.stopped) return;
    const ready: ReadyLocalPod[] = [...this.runners.values()]
      .filter((r) => r.ready && r.pod.metadata?.namespace === namespace)
      .map((r) => ({ pod: r.pod, hostPorts: r.hostPorts }));
    const services = this.services.list(namespace);
    const desired = new Map<string, V1EndpointSlice>();
    for (const svc of services) {
      for (const slice of desiredEndpointSlices(svc, ready)) desired.set(slice.metadata?.name ?? '', slice);
    }
    try {
      const existing = await this.discovery.listNamespacedEndpointSlice({
        namespace,
        labelSelector: managedSliceSelector,
      });
      for (const slice of existing.items) {
        const name = slice.metadata?.name ?? '';
        if (!desired.has(name)) await this.discovery.deleteNamespacedEndpointSlice({ name, namespace });
      }
      const existingNames = new Set(existing.items.map((s) => s.metadata?.name));
      for (const [name, slice] of desired) {
        if (!existingNames.has(name))
          await this.discovery.createNamespacedEndpointSlice({ namespace, body: slice });
      }
    } catch (err) {
      this.opts.log.warn({ err, namespace }, 'endpoint slice sync failed; retrying');
      setTimeout(() => void this.syncEndpoints(namespace), 1000).unref();
    }
  }
}
