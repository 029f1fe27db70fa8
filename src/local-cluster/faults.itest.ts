// The faults the chaos suite injects, each shown to do what it says on a cluster of its own (the
// shared one must not lose its apiserver under other files): nats-server SIGKILLed comes back on
// its port with its streams, a frozen one answers nothing until thawed, kube-apiserver restarted
// keeps its port and its data, and a Pod's processes are stopped, resumed and killed, its object
// force-deleted and replaced by its controller at once.
import { readFileSync } from 'node:fs';
import { AppsV1Api, CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalCluster, startLocalCluster } from './cluster.ts';
import { isProcessAlive } from './managed-process.ts';
import { natsConnectOptions } from './nats-client.ts';
import { forceDeletePod, killPods, podsMatching, signalPods } from './pod-faults.ts';
import { waitFor } from './wait.ts';

let cluster: LocalCluster;
let admin: KubeConfig;
const NAMESPACE = 'faults';

beforeAll(async () => {
  cluster = await startLocalCluster();
  admin = cluster.kubeConfigFor('admin');
  await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
}, 180_000);

afterAll(async () => {
  await cluster?.stop();
});

/** The state letter of /proc/<pid>/stat: R running, S sleeping, T stopped. */
function processState(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
}

async function withNats<T>(use: (nc: NatsConnection) => Promise<T>): Promise<T> {
  const nc = await connect({
    ...natsConnectOptions(cluster),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 200,
  });
  try {
    return await use(nc);
  } finally {
    await nc.close();
  }
}

describe('nats-server faults', () => {
  it('SIGKILLed, it leaves no shutdown behind and comes back on the same port with its stream and messages', async () => {
    await withNats(async (nc) => {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.add({ name: 'FAULTS', subjects: ['faults.>'] });
      await jetstream(nc).publish('faults.one', 'kept');
      const pid = cluster.nats.pid;
      await cluster.nats.stop({ kill: true });
      expect(pid !== undefined && isProcessAlive(pid)).toBe(false);
      // A SIGTERM'd server logs its shutdown; a killed one cannot.
      expect(readFileSync(`${cluster.dir}/logs/nats-server.log`, 'utf8')).not.toContain('Server Exiting');
      await cluster.nats.launch();
      expect(cluster.nats.pid).not.toBe(pid);
      const info = await waitFor('the stream after the restart', () => jsm.streams.info('FAULTS'));
      expect(info.state.messages).toBe(1);
    });
  }, 60_000);

  it('frozen, it answers nothing until thawed, then serves as before', async () => {
    const pid = cluster.nats.pid as number;
    cluster.nats.freeze();
    try {
      await waitFor('the process to be stopped', () => (processState(pid) === 'T' ? true : undefined));
      const frozen = await fetch(`${cluster.natsMonitorUrl}/healthz`, {
        signal: AbortSignal.timeout(1_000),
      }).then(
        () => 'answered',
        () => 'no answer',
      );
      expect(frozen).toBe('no answer');
    } finally {
      cluster.nats.thaw();
    }
    const res = await fetch(`${cluster.natsMonitorUrl}/healthz`);
    expect(res.status).toBe(200);
    expect(processState(pid)).not.toBe('T');
  }, 30_000);
});

// Before the apiserver restart: after one, kube-controller-manager's reflectors relist on client-go's
// backoff (up to 30 s, doubled by jitter), and a loaded CI machine saw its ReplicaSet controller
// miss a Pod for over a minute. This test is about the Pod faults, not that recovery.
describe('Pod faults', () => {
  it("stops, resumes and kills a Pod's processes; a force-deleted Pod is gone at once and replaced", async () => {
    await admin.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'idle' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'idle' } },
          template: {
            metadata: { labels: { app: 'idle' } },
            spec: {
              terminationGracePeriodSeconds: 30,
              containers: [{ name: 'main', image: 'switchyard:dev', command: ['test/fixtures/idle.ts'] }],
            },
          },
        },
      },
    });
    const running = () =>
      cluster.nodeAgent.runningPods().filter((p) => p.namespace === NAMESPACE && p.pids.length > 0);
    const [first] = await waitFor('the Pod running', () => (running().length === 1 ? running() : undefined), {
      timeoutMs: 60_000,
    });
    const pod = { namespace: NAMESPACE, name: first?.name ?? '' };
    expect(await podsMatching(admin, NAMESPACE, 'app=idle')).toEqual([pod]);

    const [pid] = signalPods(cluster.nodeAgent, [pod], 'SIGSTOP');
    expect(pid).toBe(first?.pids[0]);
    await waitFor('stopped', () => (processState(pid as number) === 'T' ? true : undefined));
    signalPods(cluster.nodeAgent, [pod], 'SIGCONT');
    await waitFor('resumed', () => (processState(pid as number) !== 'T' ? true : undefined));

    const killed = await killPods(cluster.nodeAgent, admin, [pod]);
    expect(killed).toEqual([pid]);
    // Dead at once, but a zombie until the node agent reaps it on its next turn of the event loop.
    await waitFor('the killed process reaped', () => (isProcessAlive(pid as number) ? undefined : true), {
      timeoutMs: 10_000,
    });
    // Gone from the apiserver without the 30 s grace, and its ReplicaSet made another.
    const replacement = await waitFor(
      'a replacement Pod',
      async () => {
        const pods = await podsMatching(admin, NAMESPACE, 'app=idle');
        if (pods.length === 1 && pods[0]?.name !== pod.name) return pods[0];
        // Said on a timeout: what the ReplicaSet controller had done by then.
        const sets = await admin.makeApiClient(AppsV1Api).listNamespacedReplicaSet({ namespace: NAMESPACE });
        const status = sets.items.map((rs) => rs.status);
        throw new Error(`Pods ${JSON.stringify(pods)}, ReplicaSet status ${JSON.stringify(status)}`);
      },
      // The ReplicaSet's resync under a loaded machine: a clean-clone CI run saw more than 20 s.
      { timeoutMs: 60_000 },
    );
    expect(replacement?.name).not.toBe(pod.name);
    // Deleting what is already gone is no error.
    await forceDeletePod(admin, pod);
  }, 120_000);
});

describe('kube-apiserver restart', () => {
  it('comes back on the same URL with the same data, ready, after it was down', async () => {
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedConfigMap({ namespace: NAMESPACE, body: { metadata: { name: 'before' } } });
    const before = cluster.pids().find((p) => p.name === 'kube-apiserver')?.pid as number;
    const { stoppedAtMs, readyAtMs } = await cluster.restartApiServer({ downMs: 500 });
    expect(isProcessAlive(before)).toBe(false);
    expect(readyAtMs - stoppedAtMs).toBeGreaterThanOrEqual(500);
    const after = cluster.pids().find((p) => p.name === 'kube-apiserver')?.pid;
    expect(after).not.toBe(before);
    const kept = await core.readNamespacedConfigMap({ namespace: NAMESPACE, name: 'before' });
    expect(kept.metadata?.name).toBe('before');
  }, 120_000);
});
