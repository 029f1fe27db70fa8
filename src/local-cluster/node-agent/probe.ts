import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import type { V1Probe } from '@kubernetes/client-node';

/** Maps a probe's port (number or container-port name) to the loopback port the process listens on. */
export type PortResolver = (port: number | string) => number | undefined;

function httpProbe(probe: V1Probe, resolvePort: PortResolver, timeoutMs: number): Promise<boolean> {
  const get = probe.httpGet;
  if (!get) return Promise.resolve(false);
  const port = resolvePort(get.port as number | string);
  if (port === undefined) return Promise.resolve(false);
  const request = get.scheme === 'HTTPS' ? httpsRequest : httpRequest;
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: get.path ?? '/',
        method: 'GET',
        timeout: timeoutMs,
        // kubelet does not verify the serving certificate of a probe either.
        rejectUnauthorized: false,
        headers: Object.fromEntries((get.httpHeaders ?? []).map((h) => [h.name, h.value])),
      },
      (res) => {
        res.resume();
        const status = res.statusCode ?? 0;
        resolve(status >= 200 && status < 400);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

function tcpProbe(probe: V1Probe, resolvePort: PortResolver, timeoutMs: number): Promise<boolean> {
  const port = probe.tcpSocket ? resolvePort(probe.tcpSocket.port as number | string) : undefined;
  if (port === undefined) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, timeout: timeoutMs });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One probe attempt, as kubelet runs it; exec probes are not supported by the local agent. */
export function runProbe(probe: V1Probe, resolvePort: PortResolver): Promise<boolean> {
  const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
  if (probe.httpGet) return httpProbe(probe, resolvePort, timeoutMs);
  if (probe.tcpSocket) return tcpProbe(probe, resolvePort, timeoutMs);
  return Promise.resolve(false);
}
