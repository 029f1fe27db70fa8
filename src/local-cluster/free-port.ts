import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** Lowest port handed out: above the well-known and the common registered ones. */
const LOWEST_PORT = 10_000;
const ATTEMPTS = 100;
/** Ports this process has handed out: a server may take seconds to bind one, and must not be given it twice. */
const handedOut = new Set<number>();

/**
 * A free TCP port on `host` for a server the caller starts next, chosen below the kernel's
 * ephemeral range. A port the kernel hands out for `listen(0)` comes from that range, and so does
 * the local port of every outgoing connection on the machine: between the probe and the server's
 * own bind, any client (a test's, the apiserver's, nats-server's routes) may take it, and the
 * server exits with "address already in use". Below the range only another server's choice
 * collides, and a random pick out of thousands makes that rare.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [ephemeralLow] = ephemeralPortRange();
  if (ephemeralLow - LOWEST_PORT < 1_000) return kernelChosenPort(host);
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const port = LOWEST_PORT + Math.floor(Math.random() * (ephemeralLow - LOWEST_PORT));
    if (handedOut.has(port) || !(await canListen(port, host))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port below ${ephemeralLow} on ${host} after ${ATTEMPTS} random tries`);
}

/** The kernel's ephemeral port range (Linux); the common default where it cannot be read. */
function ephemeralPortRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low as number, high as number];
  } catch {
    // Not Linux: fall through to the default.
  }
  return [32_768, 60_999];
}

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

function kernelChosenPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not read the port of a probe listener'));
      });
    });
  });
}
