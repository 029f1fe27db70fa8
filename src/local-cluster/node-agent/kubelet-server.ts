// The part of the kubelet API the apiserver calls for `kubectl logs`, `kubectl port-forward` and
// `kubectl exec`: GET /containerLogs/<namespace>/<pod>/<container> (follow, previous, tailLines,
// limitBytes), and the SPDY/3.1 upgrades POST /portForward/<namespace>/<pod> and
// /exec/<namespace>/<pod>/<container>. HTTPS on loopback, and only the apiserver may call it: the
// client certificate must chain to the cluster's CA and name the apiserver's kubelet client.
// Attach needs a container's own stdio, which a plain process does not keep open: it is refused
// with a message that says so, not a bare 404.
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { type IncomingMessage, type ServerResponse, STATUS_CODES } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { EXEC_PROTOCOL, type ExecResolver, execHandler, parseExecQuery } from './exec.ts';
import { PORT_FORWARD_PROTOCOL, type PortResolver, portForwardHandler } from './port-forward.ts';
import { SPDY_PROTOCOL, SpdyConnection, type SpdyStream } from './spdy.ts';

/** The common name of the client certificate the apiserver presents to kubelets (`--kubelet-client-certificate`). */
export const APISERVER_KUBELET_CLIENT = 'kube-apiserver-kubelet-client';

/** Where a container's log is, as the node agent keeps it. */
export interface ContainerLogs {
  /** The file of its current run (`previous`: the run before), or why there is none. */
  logFile(namespace: string, pod: string, container: string, previous: boolean): string | { missing: string };
  /** Whether the container's current run is still going: a follow ends with it. */
  running(namespace: string, pod: string, container: string): boolean;
}

/** What port-forward and exec reach in a Pod on this node. */
export interface PodStreams {
  /** Where a Pod's container ports are on this machine, or why the Pod has none. */
  ports(namespace: string, pod: string): PortResolver | { missing: string };
  /** How a command runs in a container (its environment and directory), or why it cannot. */
  execIn(namespace: string, pod: string, container: string): ExecResolver | { missing: string };
}

export interface KubeletServerOptions {
  cert: string;
  key: string;
  /** The cluster CA: client certificates must chain to it. */
  ca: string;
  logs: ContainerLogs;
  streams: PodStreams;
  log: Logger;
  /** How often a follow looks for more output. */
  followPollMs?: number;
}

/** What `kubectl logs` asked for, from the query the apiserver passes on. */
export interface LogQuery {
  follow: boolean;
  previous: boolean;
  tailLines: number | undefined;
  limitBytes: number | undefined;
}

/** The query as kubelet reads it; a parameter this agent cannot honour is an error, not ignored. */
export function parseLogQuery(params: URLSearchParams): LogQuery | { error: string } {
  for (const unsupported of ['timestamps', 'sinceSeconds', 'sinceTime']) {
    const value = params.get(unsupported);
    if (value !== null && value !== 'false')
      return { error: `${unsupported}: the local node agent does not record when each line was written` };
  }
  const count = (name: string): number | undefined | { error: string } => {
    const value = params.get(name);
    if (value === null) return undefined;
    const n = Number(value);
    return Number.isInteger(n) && n >= 0 ? n : { error: `${name} must be a whole number ≥ 0, got ${value}` };
  };
  const tailLines = count('tailLines');
  const limitBytes = count('limitBytes');
  if (typeof tailLines === 'object') return tailLines;
  if (typeof limitBytes === 'object') return limitBytes;
  return {
    follow: params.get('follow') === 'true',
    previous: params.get('previous') === 'true',
    tailLines,
    limitBytes,
  };
}

/** The byte offset where the last `lines` lines of `text` start (a trailing newline ends the last line). */
export function tailOffset(text: Buffer, lines: number): number {
  let end = text.length;
  if (end > 0 && text[end - 1] === 0x0a) end--;
  let seen = 0;
  for (let i = end - 1; i >= 0; i--) {
    if (text[i] === 0x0a && ++seen === lines) return i + 1;
  }
  return lines === 0 ? text.length : 0;
}

export async function startKubeletServer(
  opts: KubeletServerOptions,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer(
    { cert: opts.cert, key: opts.key, ca: opts.ca, requestCert: true, rejectUnauthorized: true },
    (req, res) => void serve(req, res, opts).catch((err: unknown) => fail(res, 500, (err as Error).message)),
  );
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) =>
    upgrade(req, socket, head, opts),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('the kubelet server has no port');
  return {
    port: address.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${message}\n`);
}

const ONLY_THE_APISERVER = `only the apiserver (${APISERVER_KUBELET_CLIENT}) may call this node agent`;

function isApiserver(req: IncomingMessage): boolean {
  return (req.socket as TLSSocket).getPeerCertificate().subject?.CN === APISERVER_KUBELET_CLIENT;
}

/** The route and its path segments: /<route>/<namespace>/<pod>[/<uid>][/<container>]. */
function routeOf(req: IncomingMessage): { route: string; segments: string[]; url: URL } {
  const url = new URL(req.url ?? '/', 'https://node');
  const [route = '', ...segments] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  return { route, segments, url };
}

const STREAMING_NEEDS_UPGRADE = new Set(['exec', 'portForward']);
const NOT_SERVED_STREAMING = new Set(['attach', 'run']);

async function serve(req: IncomingMessage, res: ServerResponse, opts: KubeletServerOptions): Promise<void> {
  if (!isApiserver(req)) {
    fail(res, 403, ONLY_THE_APISERVER);
    return;
  }
  const { route, segments, url } = routeOf(req);
  const [namespace, pod, container] = segments;
  if (req.method === 'GET' && route === 'healthz') {
    res.writeHead(200).end('ok');
    return;
  }
  if (STREAMING_NEEDS_UPGRADE.has(route)) {
    fail(res, 400, `${route} is served as a ${SPDY_PROTOCOL} upgrade only`);
    return;
  }
  if (req.method !== 'GET' || route !== 'containerLogs' || !namespace || !pod || !container) {
    const streaming = NOT_SERVED_STREAMING.has(route);
    fail(
      res,
      streaming ? 501 : 404,
      streaming
        ? `${route}: the local node agent runs Pods as plain processes, whose stdio is their log file; use kubectl logs -f, exec or port-forward`
        : `${url.pathname}: not served by the local node agent (it serves /containerLogs, /portForward and /exec)`,
    );
    return;
  }
  const query = parseLogQuery(url.searchParams);
  if ('error' in query) {
    fail(res, 400, query.error);
    return;
  }
  const file = opts.logs.logFile(namespace, pod, container, query.previous);
  if (typeof file !== 'string') {
    fail(res, 404, file.missing);
    return;
  }
  await streamLog(
    file,
    query,
    res,
    () => !query.previous && opts.logs.running(namespace, pod, container),
    opts,
  );
}

/** Refuses an upgrade in plain HTTP/1.1, the only thing the socket has spoken so far. */
function refuseUpgrade(
  socket: Duplex,
  status: number,
  message: string,
  extra: Record<string, string> = {},
): void {
  const body = `${message}\n`;
  const headers = {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
    ...extra,
  };
  const head = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${head}\r\n${body}`);
}

/** The protocols the client offers in X-Stream-Protocol-Version (repeated or comma-joined). */
function offeredProtocols(req: IncomingMessage): string[] {
  return (req.headers['x-stream-protocol-version'] ?? '')
    .toString()
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

/** The stream handler for an upgrade request and the protocol it speaks, or the refusal to send. */
function streamingHandler(
  req: IncomingMessage,
  opts: KubeletServerOptions,
): { protocol: string; onStream: (stream: SpdyStream) => void } | { status: number; message: string } {
  const { route, segments, url } = routeOf(req);
  if (route === 'portForward' && segments.length >= 2 && segments.length <= 3) {
    const [namespace, pod] = segments as [string, string];
    const ports = opts.streams.ports(namespace, pod);
    if ('missing' in ports) return { status: 404, message: ports.missing };
    return {
      protocol: PORT_FORWARD_PROTOCOL,
      onStream: portForwardHandler(`${namespace}/${pod}`, ports, opts.log),
    };
  }
  if (route === 'exec' && segments.length >= 3 && segments.length <= 4) {
    const [namespace, pod] = segments as [string, string];
    const container = segments[segments.length - 1] as string;
    const request = parseExecQuery(url.searchParams);
    if ('error' in request) return { status: 400, message: request.error };
    const execIn = opts.streams.execIn(namespace, pod, container);
    if ('missing' in execIn) return { status: 404, message: execIn.missing };
    return {
      protocol: EXEC_PROTOCOL,
      onStream: execHandler(`${namespace}/${pod}/${container}`, request, execIn, opts.log),
    };
  }
  return {
    status: NOT_SERVED_STREAMING.has(route) ? 501 : 404,
    message: `${url.pathname}: no ${SPDY_PROTOCOL} upgrade is served there (only /portForward and /exec)`,
  };
}

/** A SPDY/3.1 upgrade for port-forward or exec, as kubelet accepts it. */
function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, opts: KubeletServerOptions): void {
  socket.on('error', () => socket.destroy());
  if (!isApiserver(req)) {
    refuseUpgrade(socket, 403, ONLY_THE_APISERVER);
    return;
  }
  if ((req.headers.upgrade ?? '').toLowerCase() !== SPDY_PROTOCOL.toLowerCase()) {
    refuseUpgrade(socket, 400, `only ${SPDY_PROTOCOL} upgrades are served, not ${req.headers.upgrade}`);
    return;
  }
  const handler = streamingHandler(req, opts);
  if ('status' in handler) {
    refuseUpgrade(socket, handler.status, handler.message);
    return;
  }
  if (!offeredProtocols(req).includes(handler.protocol)) {
    refuseUpgrade(socket, 403, `the client must offer ${handler.protocol} in X-Stream-Protocol-Version`, {
      'X-Accepted-Stream-Protocol-Versions': handler.protocol,
    });
    return;
  }
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n' +
      `Upgrade: ${SPDY_PROTOCOL}\r\nX-Stream-Protocol-Version: ${handler.protocol}\r\n\r\n`,
  );
  new SpdyConnection(socket, head, handler.onStream);
}

/** The file from the tail the query asks for, then (follow) what the container appends, until it stops. */
async function streamLog(
  file: string,
  query: LogQuery,
  res: ServerResponse,
  stillRunning: () => boolean,
  opts: KubeletServerOptions,
): Promise<void> {
  const size = (await stat(file)).size;
  let start = 0;
  if (query.tailLines !== undefined) {
    const handle = await open(file, 'r');
    try {
      const { buffer } = await handle.read({ buffer: Buffer.alloc(size), position: 0 });
      start = tailOffset(buffer, query.tailLines);
    } finally {
      await handle.close();
    }
  }
  let budget = query.limitBytes ?? Number.POSITIVE_INFINITY;
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'transfer-encoding': 'chunked' });
  const send = async (from: number, to: number): Promise<number> => {
    const end = Math.min(to, from + budget);
    if (end <= from) return from;
    for await (const chunk of createReadStream(file, { start: from, end: end - 1 })) {
      if (!res.write(chunk)) await new Promise((resolve) => res.once('drain', resolve));
    }
    budget -= end - from;
    return end;
  };
  let sent = await send(start, size);
  if (query.follow) {
    let closed = false;
    res.once('close', () => {
      closed = true;
    });
    const pollMs = opts.followPollMs ?? 250;
    while (!closed && budget > 0) {
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      const now = (await stat(file).catch(() => undefined))?.size;
      // A restart moves the file aside: the run being followed is over.
      if (now === undefined || now < sent) break;
      sent = await send(sent, now);
      if (!stillRunning() && now === (await stat(file)).size) break;
    }
  }
  res.end();
}
