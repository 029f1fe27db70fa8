// TLS to NATS (issue 29): against a nats-server of our own with a `tls {}` block and the local
// stack's users, certificates from the project's issuer as the local stack's NATS has them. A
// component that trusts the server's CA connects over TLS as its user; one that trusts another CA,
// or none, is refused with the certificate named; a client that does not speak TLS gets nothing
// from the server; a client told to use TLS refuses a server without it; and a new certificate is
// served after a reload while the connections made before it stay up. Runs on either NATS backend.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type OwnNatsServer,
  startOwnNats,
  unrelatedNatsCaFile,
  type WithNatsUsers,
} from '../../test/support/nats.ts';
import { waitFor } from '../../test/support/wait.ts';
import { type Bus, connectBus } from './connect.ts';
import type { NatsTlsFiles } from './tls.ts';

const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'tls-itest' });
const USER = 'bus-setup';
let nats: OwnNatsServer & WithNatsUsers;
let trusted: NatsTlsFiles;
const open: Bus[] = [];

beforeAll(async () => {
  nats = await startOwnNats('nats-tls', log, { users: true, tls: true });
  if (!nats.server.tls) throw new Error('the server was started without its TLS files');
  trusted = { caFile: nats.server.tls.paths.caFile, certFile: '', keyFile: '' };
});

afterAll(async () => {
  for (const bus of open) await bus.close().catch(() => undefined);
  await nats?.stop();
});

function connectAs(url: string, tls: NatsTlsFiles | undefined): Promise<Bus> {
  return connectBus({
    servers: url,
    credentials: { user: USER, passwordFile: join(nats.users.dir, USER) },
    tls,
    name: 'tls-itest',
    log,
    mode: 'none',
  }).then((bus) => {
    open.push(bus);
    return bus;
  });
}

interface MonitoredConnection {
  cid: number;
  name?: string;
  authorized_user?: string;
  tls_version?: string;
}

async function connections(): Promise<MonitoredConnection[]> {
  const res = await fetch(`${nats.server.monitorUrl}/connz?auth=true`);
  return ((await res.json()) as { connections: MonitoredConnection[] }).connections;
}

/** Reads the server's INFO line in clear, as every NATS client does first. */
async function readInfo(socket: Socket): Promise<{ tls_required?: boolean }> {
  let text = '';
  while (!text.includes('\r\n')) {
    const [chunk] = (await once(socket, 'data')) as [Buffer];
    text += chunk.toString('utf8');
  }
  const line = text.slice(0, text.indexOf('\r\n'));
  return JSON.parse(line.replace(/^INFO /, '')) as { tls_required?: boolean };
}

/** The serial number of the certificate the server presents to a new connection, verified against `caPem`. */
async function servedSerial(caPem: string): Promise<string> {
  const { port } = new URL(nats.server.url);
  const socket = createConnection(Number(port), '127.0.0.1');
  try {
    await once(socket, 'connect');
    await readInfo(socket);
    const secure = tlsConnect({ socket, ca: caPem });
    await once(secure, 'secureConnect');
    const serial = secure.getPeerCertificate().serialNumber;
    secure.destroy();
    return serial;
  } finally {
    socket.destroy();
  }
}

describe('TLS to NATS', () => {
  it('a component trusting the server CA connects over TLS, as its user', async () => {
    const bus = await connectAs(nats.server.url, trusted);
    expect(bus.nc.info?.tls_required).toBe(true);
    await bus.nc.flush();
    const mine = (await connections()).find((c) => c.name === 'tls-itest');
    expect(mine, 'the server lists the connection').toBeDefined();
    expect(mine?.authorized_user, 'the user and password still authenticate it').toBe(USER);
    expect(mine?.tls_version, 'the server reports it encrypted').toMatch(/^1\.[23]$/);
  });

  it('a client trusting another CA is refused, the certificate verification named', async () => {
    const otherCaFile = await unrelatedNatsCaFile(join(nats.dir, 'other-ca'));
    await expect(connectAs(nats.server.url, { ...trusted, caFile: otherCaFile })).rejects.toThrow(
      /certificate was refused \(UNABLE_TO_VERIFY_LEAF_SIGNATURE\): it must chain to nats.tls.caFile .*other-ca/,
    );
  });

  it('a client without a CA verifies against the system CAs, which do not know the server', async () => {
    await expect(connectAs(nats.server.url, undefined)).rejects.toThrow(
      /certificate was refused \(\w+\): it must chain to the system’s CAs/,
    );
  });

  it('a missing CA file is named before any connection', async () => {
    await expect(
      connectAs(nats.server.url, { ...trusted, caFile: join(nats.dir, 'missing.crt') }),
    ).rejects.toThrow(/cannot read nats.tls.caFile .*missing.crt: ENOENT/);
  });

  it('a client that does not speak TLS gets no answer: the server closes the connection', async () => {
    const { port } = new URL(nats.server.url);
    const socket = createConnection(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    expect((await readInfo(socket)).tls_required).toBe(true);
    const password = nats.users.passwords[USER];
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
    });
    socket.write(`CONNECT {"verbose":false,"user":"${USER}","pass":"${password}"}\r\nPING\r\n`);
    await once(socket, 'close');
    expect(answer, 'no PONG in clear').not.toContain('PONG');
  });

  it('a client configured with a CA refuses a server without TLS', async () => {
    const plain = await startOwnNats('nats-plain', log, { users: nats.users });
    try {
      await expect(connectAs(plain.server.url, trusted)).rejects.toThrow(/server does not support 'tls'/);
    } finally {
      await plain.stop();
    }
  });

  it('a rotated certificate is served after a reload, without a restart; connections made before stay up', async () => {
    if (!nats.server.tls) throw new Error('no TLS files');
    const before = await connectAs(nats.server.url, trusted);
    const statuses: string[] = [];
    void (async () => {
      for await (const s of before.nc.status()) statuses.push(s.type);
    })();
    const pid = nats.server.pid;
    const oldSerial = await servedSerial(nats.server.tls.caPem);

    const certPem = await nats.server.rotateCertificate();
    const newSerial = new X509Certificate(certPem).serialNumber;
    expect(newSerial).not.toBe(oldSerial);
    await waitFor(
      'new connections to be served the rotated certificate',
      async () => ((await servedSerial(nats.server.tls?.caPem ?? '')) === newSerial ? true : undefined),
      { timeoutMs: 15_000 },
    );

    const after = await connectAs(nats.server.url, trusted);
    await after.nc.flush();
    await before.nc.flush();
    expect(before.nc.isClosed(), 'the connection made before the rotation is open').toBe(false);
    expect(
      statuses.filter((s) => s === 'disconnect' || s === 'reconnect'),
      'it never dropped',
    ).toEqual([]);
    expect(nats.server.pid, 'the same server process (no restart)').toBe(pid);
    expect(nats.server.running).toBe(true);
  });
});
