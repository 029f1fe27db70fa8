// The probes of a worker process (watchers, router, every handler): plain HTTP on its own port,
// apart from anything the process serves, so kubelet can tell "alive" from "able to work".
//
// - `/healthz`: the process answers. A worker that lost NATS or the apiserver keeps retrying on
//   its own, and a restart would not bring either back, so liveness asks nothing more.
// - `/readyz`: every readiness check passes; the answer names the ones that do not.
// - `/metrics`: the process's Prometheus metrics (metrics/worker-metrics.ts), on the same port so
//   that one Service and one ServiceMonitor reach every worker (deploy/monitoring).
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { listenPort } from './listen-port.ts';

/** The container port every worker's probes use (`health` in deploy/). */
export const HEALTH_PORT = 8081;

/** One readiness check: undefined when ready, else why not, in a few words. */
export type ReadinessCheck = () => string | undefined;

export interface HealthServer {
  readonly port: number;
  /** Adds a check; the process is ready once every check passes. */
  require(name: string, check: ReadinessCheck): void;
  close(): Promise<void>;
}

/** Why the process is not ready, one line per failing check; empty when ready. */
export function notReadyReasons(checks: ReadonlyMap<string, ReadinessCheck>): string[] {
  const reasons: string[] = [];
  for (const [name, check] of checks) {
    let why: string | undefined;
    try {
      why = check();
    } catch (err) {
      why = `check failed: ${(err as Error).message}`;
    }
    if (why !== undefined) reasons.push(`${name}: ${why}`);
  }
  return reasons;
}

async function serveMetrics(registry: Registry, res: ServerResponse, log: Logger): Promise<void> {
  try {
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType }).end(body);
  } catch (err) {
    log.warn({ err }, 'collecting metrics failed');
    res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n');
  }
}

export async function startHealthServer(opts: {
  log: Logger;
  /** Defaults to HEALTH_PORT, or the port the local node agent hands this Pod for it. */
  port?: number;
  host?: string;
  /** Served at /metrics when given. */
  metrics?: Registry;
}): Promise<HealthServer> {
  const checks = new Map<string, ReadinessCheck>();
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    if (path === '/readyz') {
      const reasons = notReadyReasons(checks);
      res
        .writeHead(reasons.length === 0 ? 200 : 503, { 'content-type': 'text/plain' })
        .end(reasons.length === 0 ? 'ok\n' : `not ready:\n${reasons.join('\n')}\n`);
      return;
    }
    if (path === '/metrics' && opts.metrics) {
      void serveMetrics(opts.metrics, res, opts.log);
      return;
    }
    res
      .writeHead(404, { 'content-type': 'text/plain' })
      .end(`not found: /healthz, /readyz${opts.metrics ? ' and /metrics' : ''} are served here\n`);
  });
  const port = opts.port ?? listenPort(HEALTH_PORT);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  opts.log.info(
    { port: bound },
    opts.metrics
      ? 'probes served on /healthz and /readyz, metrics on /metrics'
      : 'probes served on /healthz and /readyz',
  );
  return {
    port: bound,
    require(name, check) {
      checks.set(name, check);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
