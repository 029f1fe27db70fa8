// kubelet's port-forward protocol (portforward.k8s.io) over a SPDY connection: for each forwarded
// connection the client opens an `error` and a `data` stream with the same requestID and the
// Pod's port. The agent connects to the host port that stands for that container port (Pods run
// as processes on loopback) and copies both ways; a failure is written to the error stream, as
// kubelet does, so kubectl prints it.
import { connect } from 'node:net';
import type { Logger } from 'pino';
import type { SpdyStream } from './spdy.ts';

export const PORT_FORWARD_PROTOCOL = 'portforward.k8s.io';

/** How long the second stream of a pair may take after the first: kubelet's own limit. */
const PAIR_TIMEOUT_MS = 30_000;

/** Where a Pod's container port is on this machine, or why it cannot be reached. */
export type PortResolver = (containerPort: number) => number | { error: string };

/** What a forwarded stream's headers name, or why they are unusable. */
export function parseForwardHeaders(
  stream: Pick<SpdyStream, 'header'>,
): { type: 'error' | 'data'; requestId: string; port: number } | { error: string } {
  const type = stream.header('streamType');
  if (type !== 'error' && type !== 'data')
    return { error: `streamType ${type ?? '(none)'} is not error or data` };
  const requestId = stream.header('requestID');
  if (requestId === undefined) return { error: 'a forwarded stream has no requestID' };
  const port = Number(stream.header('port'));
  if (!Number.isInteger(port) || port < 1 || port > 65_535)
    return { error: `port ${stream.header('port') ?? '(none)'} is not a port number` };
  return { type, requestId, port };
}

/** Handles the streams of one port-forward connection to one Pod. */
export function portForwardHandler(
  pod: string,
  resolve: PortResolver,
  log: Logger,
): (stream: SpdyStream) => void {
  const pending = new Map<string, { error?: SpdyStream; data?: SpdyStream; timer: NodeJS.Timeout }>();
  return (stream) => {
    const parsed = parseForwardHeaders(stream);
    if ('error' in parsed) {
      log.warn({ pod, reason: parsed.error }, 'port-forward stream refused');
      stream.destroy();
      return;
    }
    const pair = pending.get(parsed.requestId) ?? {
      timer: setTimeout(() => {
        pending.delete(parsed.requestId);
        pair.error?.destroy();
        pair.data?.destroy();
      }, PAIR_TIMEOUT_MS).unref(),
    };
    pending.set(parsed.requestId, pair);
    pair[parsed.type] = stream;
    if (pair.error && pair.data) {
      clearTimeout(pair.timer);
      pending.delete(parsed.requestId);
      forward(pod, parsed.port, pair.error, pair.data, resolve, log);
    }
  };
}

function forward(
  pod: string,
  port: number,
  errorStream: SpdyStream,
  dataStream: SpdyStream,
  resolve: PortResolver,
  log: Logger,
): void {
  // The client never writes on the error stream; reading it lets the stream close when both ends are done.
  errorStream.resume();
  const fail = (message: string) => {
    log.info({ pod, port, reason: message }, 'port-forward connection failed');
    errorStream.end(`error forwarding port ${port} to pod ${pod}: ${message}`);
    dataStream.end();
  };
  const hostPort = resolve(port);
  if (typeof hostPort !== 'number') {
    fail(hostPort.error);
    return;
  }
  const socket = connect({ host: '127.0.0.1', port: hostPort });
  socket.once('connect', () => {
    socket.pipe(dataStream);
    dataStream.pipe(socket);
  });
  socket.once('error', (err) => fail(err.message));
  socket.once('close', () => {
    if (!errorStream.writableEnded) errorStream.end();
  });
  // The client reset the stream (its local connection went away): drop the Pod side too.
  dataStream.once('close', () => {
    if (!dataStream.writableFinished) socket.destroy();
  });
}
