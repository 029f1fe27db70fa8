// The part of the kubelet API the apiserver calls for `kubectl logs`: GET
// /containerLogs/<namespace>/<pod>/<container>, with follow, previous, tailLines and limitBytes.
// HTTPS on loopback, and only the apiserver may call it: the client certificate must chain to
// the cluster's CA and name the apiserver's kubelet client. Exec, attach and port-forward need a
// container runtime's streams (SPDY) that the local node agent does not have: they are refused
// with a message that says so, not a bare 404.
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';

/** The common name of the client certificate the apiserver presents to kubelets (`--kubelet-client-certificate`). */
export const APISERVER_KUBELET_CLIENT = 'kube-apiserver-kubelet-client';

/** Where a container's log is, as the node agent keeps it. */
export interface ContainerLogs {
  /** The file of its current run (`previous`: the run before), or why there is none. */
  logFile(namespace: string, pod: string, container: string, previous: boolean): string | { missing: string };
  /** Whether the container's current run is still going: a follow ends with it. */
  running(namespace: string, pod: string, container: string): boolean;
}

export interface KubeletServerOptions {
  cert: string;
  key: string;
  /** The cluster CA: client certificates must chain to it. */
  ca: string;
  logs: ContainerLogs;
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

async function serve(req: IncomingMessage, res: ServerResponse, opts: KubeletServerOptions): Promise<void> {
  const peer = (req.socket as TLSSocket).getPeerCertificate();
  if (peer.subject?.CN !== APISERVER_KUBELET_CLIENT) {
    fail(res, 403, `only the apiserver (${APISERVER_KUBELET_CLIENT}) may call this node agent`);
    return;
  }
  const url = new URL(req.url ?? '/', 'https://node');
  const [route, namespace, pod, container] = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (req.method === 'GET' && route === 'healthz') {
    res.writeHead(200).end('ok');
    return;
  }
  if (req.method !== 'GET' || route !== 'containerLogs' || !namespace || !pod || !container) {
    const streaming = ['exec', 'attach', 'portForward', 'run'].includes(route ?? '');
    fail(
      res,
      streaming ? 501 : 404,
      streaming
        ? `${route}: the local node agent runs Pods as plain processes, with no container runtime to stream from; use the Pod's log (kubectl logs) or its loopback port`
        : `${url.pathname}: not served by the local node agent (it serves /containerLogs)`,
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
