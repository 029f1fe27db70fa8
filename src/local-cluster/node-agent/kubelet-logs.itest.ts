// `kubectl logs` on the local stack: the apiserver reaches the node agent's kubelet API at the
// node's loopback address (no name resolved), and the agent serves each container's log: the
// current run, the one before a restart, a tail, and a follow that ends with the run. What it
// cannot serve (exec, port-forward) is refused with a reason, and only the apiserver may call it.
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, useLocalCluster } from '../../../test/support/local-cluster.ts';
import { waitFor } from '../wait.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const core = admin.makeApiClient(CoreV1Api);
let namespace = '';
const POD = 'ticker';

beforeAll(async () => {
  namespace = await createNamespace(admin, 'kubelet-logs');
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
}, 60_000);

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

  it('says why it cannot exec, and what a missing container is', async () => {
    const exec = await cluster.kubectl(['-n', namespace, 'exec', POD, '--', 'true'], { timeoutMs: 30_000 });
    expect(exec.code).not.toBe(0);
    expect(exec.stderr).toMatch(/no container runtime|not.*supported|501|upgrade/i);
    const missing = await logs('-c', 'sidecar');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('sidecar');
  }, 60_000);

  it('answers only the apiserver: a certificate of the same CA for another name is refused', async () => {
    const node = (await core.listNode()).items[0];
    const port = node?.status?.daemonEndpoints?.kubeletEndpoint?.Port;
    expect(port).toBeGreaterThan(0);
    const pki = join(cluster.info.dir, 'pki');
    const status = await new Promise<number | undefined>((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: `/containerLogs/${namespace}/${POD}/main`,
          ca: readFileSync(join(pki, 'switchyard-local-ca.crt')),
          cert: readFileSync(join(pki, 'kube-apiserver.crt')),
          key: readFileSync(join(pki, 'kube-apiserver.key')),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});
