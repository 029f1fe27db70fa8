// `switchyard nats-monitor-gate`: the sidecar that answers on the NATS Pod's monitoring port
// (8222, `monitor`) in place of the server, which binds its own monitoring to 127.0.0.1:8223. Each
// request is decided by monitor-gate-decision.ts: passed through as it is, answered with `/varz`
// reduced to what KEDA reads, answered by the gate itself (/metrics: the JetStream stores' fill from
// the server's /jsz, gate-metrics.ts), or refused (401, 405). What is passed goes upstream under
// the path the decision saw (parsed and normalised once), never the raw request line.
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { z } from 'zod';
import { loadConfig } from '../config/load.ts';
import { createLogger } from '../runtime/logger.ts';
import { GateMetrics } from './gate-metrics.ts';
import { jetstreamStorageOf } from './jetstream-storage.ts';
import { credentialsOf, decideMonitorRequest, MONITOR_USER, reduceVarz } from './monitor-gate-decision.ts';

export const gateOptionsSchema = z.object({
  /** The Pod's monitoring port (deploy/nats: 8222, named `monitor`); 0: any free port. */
  port: z.coerce.number().int().min(0).max(65535).default(8222),
  /** Every address when unset (the Pod's, IPv4 or IPv6). */
  host: z.string().min(1).optional(),
  /** The server's own monitoring, on loopback (deploy/nats's nats.conf: `http: 127.0.0.1:8223`). */
  upstream: z.url().default('http://127.0.0.1:8223'),
  /** The `monitor` key of the credentials Secret, mounted alone; read at each request that brings credentials. */
  passwordFile: z.string().min(1).default('/etc/nats-monitor/password'),
});
export type GateOptions = z.infer<typeof gateOptionsSchema>;

/** How long an upstream answer may take: the probes' own timeout is shorter. */
const UPSTREAM_TIMEOUT_MS = 10_000;

async function readPassword(file: string): Promise<string | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  return text?.replace(/\r?\n$/, '') || undefined;
}

function answer(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers }).end(`${text}\n`);
}

/** GET `target` upstream; the response, unread. */
function upstreamGet(target: URL): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request(target, { method: 'GET', timeout: UPSTREAM_TIMEOUT_MS }, resolve);
    req.on('timeout', () => req.destroy(new Error(`no answer within ${UPSTREAM_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

async function bodyOf(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function pass(target: URL, res: ServerResponse): Promise<void> {
  const up = await upstreamGet(target);
  const contentType = up.headers['content-type'];
  res.writeHead(up.statusCode ?? 502, contentType ? { 'content-type': contentType } : {});
  for await (const chunk of up) res.write(chunk);
  res.end();
}

async function reducedVarz(target: URL, res: ServerResponse): Promise<void> {
  const up = await upstreamGet(target);
  const body = await bodyOf(up);
  if (up.statusCode !== 200) return answer(res, 502, `NATS monitoring answered ${up.statusCode}`);
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify(reduceVarz(JSON.parse(body) as unknown)));
}

/** The stores' fill as `/jsz` says it now; a server that cannot say fails the scrape (502), which Prometheus shows as `up` 0. */
async function serveMetrics(options: GateOptions, metrics: GateMetrics, res: ServerResponse): Promise<void> {
  const up = await upstreamGet(new URL('/jsz', options.upstream));
  const body = await bodyOf(up);
  if (up.statusCode !== 200) return answer(res, 502, `NATS monitoring answered /jsz with ${up.statusCode}`);
  let jsz: unknown;
  try {
    jsz = JSON.parse(body);
  } catch {
    return answer(res, 502, 'NATS monitoring answered /jsz with something other than JSON');
  }
  const reading = jetstreamStorageOf(jsz);
  if (!reading.ok) return answer(res, 502, reading.reason);
  metrics.observe(reading.stores);
  res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(await metrics.registry.metrics());
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  options: GateOptions,
  metrics: GateMetrics,
  log: Logger,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://gate');
  const authorization = req.headers.authorization;
  const credentials = credentialsOf(
    authorization,
    authorization ? await readPassword(options.passwordFile) : undefined,
  );
  const decision = decideMonitorRequest(req.method ?? '', url.pathname, credentials);
  const target = new URL(`${url.pathname}${url.search}`, options.upstream);
  switch (decision.kind) {
    case 'method-not-allowed':
      return answer(res, 405, 'only GET', { allow: 'GET' });
    case 'unauthorized':
      // A wrong password is worth a line; a request without any is the ordinary refusal.
      log[decision.credentials === 'invalid' ? 'info' : 'debug'](
        { path: url.pathname, credentials: decision.credentials, remote: req.socket.remoteAddress },
        'monitoring request refused',
      );
      return answer(res, 401, `credentials required (HTTP Basic, user ${MONITOR_USER})`, {
        'www-authenticate': 'Basic realm="nats-monitor", charset="UTF-8"',
      });
    case 'reduce-varz':
      return reducedVarz(target, res);
    case 'metrics':
      return serveMetrics(options, metrics, res);
    case 'pass':
      return pass(target, res);
  }
}

export interface MonitorGate {
  readonly port: number;
  close(): Promise<void>;
}

export async function startMonitorGate(options: GateOptions, log: Logger): Promise<MonitorGate> {
  const metrics = new GateMetrics();
  const server: Server = createServer((req, res) => {
    handle(req, res, options, metrics, log).catch((err: unknown) => {
      log.warn({ err, path: req.url }, 'NATS monitoring unreachable');
      if (!res.headersSent) answer(res, 502, 'NATS monitoring unreachable');
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** `switchyard nats-monitor-gate [--port=…] [--host=…] [--upstream=…] [--password-file=…]` (and `--log.level`). */
export async function runNatsMonitorGate(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const { values } = parseArgs({
    args: rest,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      upstream: { type: 'string' },
      'password-file': { type: 'string' },
    },
    strict: true,
  });
  const options = gateOptionsSchema.parse({
    port: values.port,
    host: values.host,
    upstream: values.upstream,
    passwordFile: values['password-file'],
  });
  const log = createLogger(config.log, 'nats-monitor-gate');
  const gate = await startMonitorGate(options, log);
  log.info(
    { port: gate.port, upstream: options.upstream, passwordFile: options.passwordFile },
    'gating the NATS monitoring port',
  );
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  await gate.close();
  log.info('stopped');
}
