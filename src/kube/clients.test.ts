// The client contract against a loopback HTTP server (no cluster): User-Agent on
// API calls and watches, one connection pool per client, the writes limiter.
// clients.itest.ts checks the same from the real apiserver's audit log.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { CoreV1Api, type KubeConfig, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../config/schema.ts';
import { workerRegistry } from '../metrics/worker-metrics.ts';
import { createKubeClients, WATCH_INACTIVITY_TIMEOUT_MS } from './clients.ts';
import { closeLoopbackServer, listenForKubeClients } from './test-support.ts';

interface Seen {
  userAgent: string;
  path: string;
  socket: unknown;
}

let server: Server;
let kubeConfig: KubeConfig;
const seen: Seen[] = [];

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    seen.push({ userAgent: req.headers['user-agent'] ?? '', path: req.url ?? '', socket: req.socket });
    res.setHeader('content-type', 'application/json');
    if (req.url?.includes('missing')) {
      res.statusCode = 404;
      res.end(JSON.stringify({ kind: 'Status', code: 404, message: 'not found' }));
      return;
    }
    if (req.url?.includes('hang-up')) {
      req.socket.destroy();
      return;
    }
    if (req.url?.includes('watch=true')) {
      res.end(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
      return;
    }
    res.end(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'default' } }));
  });
  kubeConfig = await listenForKubeClients(server);
});

afterAll(() => closeLoopbackServer(server));

function since(mark: number) {
  return seen.slice(mark);
}

async function watchOnce(watch: Watch): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    void watch.watch(
      '/api/v1/namespaces',
      {},
      () => {},
      (err) => (err ? reject(err) : resolve()),
    );
  });
}

describe('createKubeClients', () => {
  it('each client sends switchyard/<component>/<client> on API calls and on watches', async () => {
    const clients = createKubeClients({
      kubeConfig,
      component: 'ua-unit',
      kubernetes: defaultConfig().kubernetes,
    });
    const mark = seen.length;
    await clients.writes.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
    await clients.events.kubeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
    await watchOnce(new Watch(clients.informers.kubeConfig));
    await watchOnce(clients.informers.newWatch());
    expect(since(mark).map((s) => s.userAgent)).toEqual([
      'switchyard/ua-unit/writes',
      'switchyard/ua-unit/events',
      'switchyard/ua-unit/informers',
      'switchyard/ua-unit/informers',
    ]);
    await clients.close();
  });

  it('counts every answer by client, method and status code, and a request with no answer as an error', async () => {
    const clients = createKubeClients({
      kubeConfig,
      component: 'count-unit',
      kubernetes: defaultConfig().kubernetes,
    });
    const count = async (client: string, method: string, code: string) =>
      (await workerRegistry.getSingleMetricAsString('switchyard_kube_requests_total'))
        .split('\n')
        .find((l) =>
          l.startsWith(
            `switchyard_kube_requests_total{client="${client}",method="${method}",code="${code}"}`,
          ),
        )
        ?.split(' ')[1] ?? '0';
    const before = {
      ok: Number(await count('writes', 'GET', '200')),
      missing: Number(await count('writes', 'GET', '404')),
      watch: Number(await count('informers', 'GET', '200')),
      error: Number(await count('events', 'GET', 'error')),
    };
    const core = (kc: KubeConfig) => kc.makeApiClient(CoreV1Api);
    await core(clients.writes.kubeConfig).readNamespace({ name: 'default' });
    await expect(core(clients.writes.kubeConfig).readNamespace({ name: 'missing' })).rejects.toThrow();
    await watchOnce(clients.informers.newWatch());
    await expect(core(clients.events.kubeConfig).readNamespace({ name: 'hang-up' })).rejects.toThrow();
    expect(Number(await count('writes', 'GET', '200'))).toBe(before.ok + 1);
    expect(Number(await count('writes', 'GET', '404'))).toBe(before.missing + 1);
    expect(Number(await count('informers', 'GET', '200'))).toBe(before.watch + 1);
    expect(Number(await count('events', 'GET', 'error'))).toBe(before.error + 1);
    await clients.close();
  });

  it('reuses one connection pool per client instead of a connection per request', async () => {
    const clients = createKubeClients({
      kubeConfig,
      component: 'pool',
      kubernetes: defaultConfig().kubernetes,
    });
    const writes = clients.writes.kubeConfig.makeApiClient(CoreV1Api);
    const mark = seen.length;
    for (let i = 0; i < 20; i++) await writes.readNamespace({ name: 'default' });
    for (let i = 0; i < 5; i++) await watchOnce(clients.informers.newWatch());
    const sockets = (client: string) =>
      new Set(
        since(mark)
          .filter((s) => s.userAgent.endsWith(client))
          .map((s) => s.socket),
      ).size;
    // undici may open a second connection when a request is sent in the same
    // tick the previous one completes; it then alternates between the two.
    expect(sockets('/writes'), '20 sequential writes').toBeLessThanOrEqual(2);
    expect(sockets('/informers'), '5 sequential watches').toBeLessThanOrEqual(2);
    await clients.close();
  });

  it('baseline: the library alone opens a connection per request (what the pool fixes)', async () => {
    const mark = seen.length;
    const core = kubeConfig.makeApiClient(CoreV1Api);
    for (let i = 0; i < 5; i++) await core.readNamespace({ name: 'default' });
    expect(new Set(since(mark).map((s) => s.socket)).size).toBe(5);
  });

  it('writes are unlimited by default and paced by the opt-in kubernetes.qps/burst', async () => {
    const timeSix = async (qps: number, burst: number) => {
      const kubernetes = { ...defaultConfig().kubernetes, qps, burst };
      const clients = createKubeClients({ kubeConfig, component: 'limit', kubernetes });
      const core = clients.writes.kubeConfig.makeApiClient(CoreV1Api);
      const started = performance.now();
      await Promise.all(Array.from({ length: 6 }, () => core.readNamespace({ name: 'default' })));
      const elapsed = performance.now() - started;
      await clients.close();
      return { elapsed, limiter: clients.writes.limiter.description };
    };
    const unlimited = await timeSix(0, 0);
    expect(unlimited.limiter).toBe('unlimited');
    const limited = await timeSix(20, 1); // 1 at once, then one per 50 ms: the 6th leaves at 250 ms
    expect(limited.limiter).toBe('20/s burst 1');
    expect(limited.elapsed).toBeGreaterThanOrEqual(240);
    expect(unlimited.elapsed).toBeLessThan(limited.elapsed);
  });

  it('the informers client raises client-node’s 30 s watch inactivity timeout', () => {
    // Guards the private field name we set: if client-node renames it, this fails.
    expect(Object.getOwnPropertyDescriptor(new Watch(kubeConfig), 'requestTimeoutMs')?.value).toBe(30_000);
    const clients = createKubeClients({ kubeConfig, component: 'w', kubernetes: defaultConfig().kubernetes });
    expect(Reflect.get(clients.informers.newWatch(), 'requestTimeoutMs')).toBe(WATCH_INACTIVITY_TIMEOUT_MS);
    void clients.close();
  });
});
