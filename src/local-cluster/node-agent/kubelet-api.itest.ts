// `kubectl logs`, `port-forward` and `exec` on the local stack: the apiserver reaches the node
// agent's kubelet API at the node's loopback address (no name resolved). The agent serves each
// container's log (the current run, the one before a restart, a tail, a follow that ends with
// the run), forwards a Pod's declared ports over SPDY, and runs a command with a container's
// environment. What it cannot serve is refused with a reason, and only the apiserver may call it.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, useLocalCluster } from '../../../test/support/local-cluster.ts';
import type { PortForward } from '../../kube/port-forward.ts';
import { startPortForward } from '../kubectl.ts';
import { waitFor } from '../wait.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
let namespace = '';
const POD = 'ticker';
const SERVER = 'hello';

beforeAll(async () => {
  namespace = await createNamespace(admin, 'kubelet-api');
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: POD },
      spec: {
        restartPolicy: 'Always',
        containers: [
          {
            name: 'main',
            image: 'switchyard:dev',
            command: ['test/fixtures/ticker.ts'],
            env: [{ name: 'TICKS', value: '5' }],
          },
        ],
      },
    },
  });
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: { name: SERVER },
      spec: {
        containers: [
          {
            name: 'main',
            image: 'switchyard:dev',
            command: ['test/fixtures/hello-server.ts'],
            env: [{ name: 'GREETING', value: 'from the pod spec' }],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          },
        ],
      },
    },
  });
  await waitFor(
    `${SERVER} ready`,
    async () => {
      const pod = await core.readNamespacedPod({ name: SERVER, namespace });
      return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')
        ? true
        : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}, 90_000);

afterAll(async () => {
  await core.deleteNamespace({ name: namespace });
});

const logs = (...args: string[]) =>
  cluster.kubectl(['-n', namespace, 'logs', POD, ...args], { timeoutMs: 30_000 });

/** The pid a run of the ticker started as, from its first line. */
const startedPid = (out: string) => /^started (\d+)$/m.exec(out)?.[1];

describe('kubectl logs on the local stack', () => {
  it('reads the current run, the run before a restart, and a tail', async () => {
    const previous = await waitFor(
      'a restart, and the run before it readable with --previous',
      async () => {
        const res = await logs('--previous');
        return res.code === 0 && res.stdout.includes('tick 5') ? res.stdout : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    const current = await logs();
    expect(current.code).toBe(0);
    expect(startedPid(previous)).toBeDefined();
    expect(startedPid(current.stdout)).toBeDefined();
    expect(startedPid(current.stdout), 'the current run is another process').not.toBe(startedPid(previous));
    expect(previous.split('\n').filter(Boolean)).toEqual([
      `started ${startedPid(previous)}`,
      ...[1, 2, 3, 4, 5].map((n) => `tick ${n} of ${startedPid(previous)}`),
    ]);
    const tail = await logs('--previous', '--tail=2');
    expect(tail.stdout).toBe(`tick 4 of ${startedPid(previous)}\ntick 5 of ${startedPid(previous)}\n`);
  }, 90_000);

  it('follows a run until it ends', async () => {
    const followed = await logs('-f');
    expect(followed.code).toBe(0);
    const pid = startedPid(followed.stdout);
    expect(followed.stdout).toContain(`tick 5 of ${pid}`);
  }, 60_000);

  it('says what a missing container is', async () => {
    const missing = await logs('-c', 'sidecar');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('sidecar');
  }, 60_000);

  it.each([
    ['a log', 'GET', `/containerLogs/NS/${POD}/main`, {}],
    [
      'a port-forward',
      'POST',
      `/portForward/NS/${SERVER}`,
      { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', 'X-Stream-Protocol-Version': 'portforward.k8s.io' },
    ],
  ])('answers only the apiserver: %s with a certificate of the same CA for another name is refused', async (_what, method, path, headers) => {
    const node = (await core.listNode()).items[0];
    const port = node?.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    expect(port).toBeGreaterThan(0);
    const pki = join(cluster.info.dir, 'pki');
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method,
          path: path.replace('NS', namespace),
          headers,
          ca: readFileSync(join(pki, 'switchyard-local-ca.crt')),
          cert: readFileSync(join(pki, 'kube-apiserver.crt')),
          key: readFileSync(join(pki, 'kube-apiserver.key')),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on('upgrade', (res, socket) => {
        socket.destroy();
        resolve(res.statusCode);
      });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});

/** An HTTP request through a forwarded port: the status and the body the Pod answered. */
async function post(port: number, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body });
  return { status: res.status, text: await res.text() };
}

describe('kubectl port-forward on the local stack', () => {
  let forward: PortForward | undefined;
  afterAll(() => forward?.stop());

  it('reaches the Pod’s declared port: requests in parallel, small and large, each answered whole', async () => {
    forward = await startPortForward(cluster.info.kubeConfigs.admin, [
      '-n',
      namespace,
      `pod/${SERVER}`,
      ':8080',
    ]);
    const large = 'x'.repeat(300_000);
    const answers = await Promise.all([
      post(forward.localPort, 'one'),
      post(forward.localPort, 'two'),
      post(forward.localPort, large),
    ]);
    const pid = /^hello from (\d+): /.exec(answers[0]?.text ?? '')?.[1];
    expect(pid).toBeDefined();
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(answers.map((a) => a.text)).toEqual([
      `hello from ${pid}: one`,
      `hello from ${pid}: two`,
      `hello from ${pid}: ${large}`,
    ]);
    // A connection after the first ones closed is forwarded as well.
    expect(await post(forward.localPort, 'again')).toEqual({ status: 200, text: `hello from ${pid}: again` });
  }, 60_000);

  it('says why a port the Pod does not declare cannot be reached', async () => {
    const undeclared = await startPortForward(cluster.info.kubeConfigs.admin, [
      '-n',
      namespace,
      `pod/${SERVER}`,
      ':9999',
    ]);
    try {
      const failed = await fetch(`http://127.0.0.1:${undeclared.localPort}/`).then(
        () => 'answered',
        () => 'failed',
      );
      expect(failed).toBe('failed');
      await waitFor('kubectl to print the node agent’s reason', async () =>
        undeclared.output().includes('9999 is not a containerPort of this pod') ? true : undefined,
      );
    } finally {
      undeclared.stop();
    }
  }, 60_000);
});

describe('kubectl exec on the local stack', () => {
  const exec = (args: string[], input?: string) =>
    cluster.kubectl(['-n', namespace, 'exec', ...args], {
      timeoutMs: 30_000,
      ...(input !== undefined && { input }),
    });

  it('runs a command with the container’s environment: its output, its error output and its exit code', async () => {
    const res = await exec([
      SERVER,
      '--',
      'node',
      '-e',
      'console.log(process.env.GREETING); console.error("to stderr"); process.exitCode = 3',
    ]);
    expect(res.stdout).toBe('from the pod spec\n');
    expect(res.stderr).toContain('to stderr');
    expect(res.code).toBe(3);
    const ok = await exec([
      SERVER,
      '--',
      'node',
      '-e',
      'console.log(process.env.SWITCHYARD_HOST_PORT_8080 !== undefined)',
    ]);
    expect(ok).toMatchObject({ code: 0, stdout: 'true\n' });
  }, 60_000);

  it('passes stdin through (-i) to the end', async () => {
    const res = await exec(
      ['-i', SERVER, '--', 'node', '-e', 'process.stdin.pipe(process.stdout)'],
      'line one\nline two\n',
    );
    expect(res).toMatchObject({ code: 0, stdout: 'line one\nline two\n' });
  }, 60_000);

  it('says what it cannot run: a missing command, a missing container', async () => {
    const missing = await exec([SERVER, '--', 'no-such-command-here']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('no-such-command-here');
    const noContainer = await exec([SERVER, '-c', 'sidecar', '--', 'true']);
    expect(noContainer.code).not.toBe(0);
    expect(noContainer.stderr).toContain('sidecar');
  }, 60_000);
});
