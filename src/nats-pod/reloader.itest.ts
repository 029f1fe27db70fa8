// The reloader sidecar against a real nats-server: the server's TLS files in a directory laid out
// as the kubelet lays out a Secret volume (each file a symlink through `..data` to a timestamped
// directory), `switchyard nats-reloader` run as its own process beside it, and the certificate
// renewed the kubelet's way (a new timestamped directory, `..data` swapped by a rename). A new
// client connection then sees the new certificate, a connection made before stays up, and a
// renewal whose key does not match its certificate is never signalled. Process backend only: the
// sidecar signals the server's pid, as it does in the Pod's shared process namespace.
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createConnection, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KeyPair } from '../core/instances/serving-cert.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { childEnv } from '../local-cluster/control-plane.ts';
import { freePort } from '../local-cluster/free-port.ts';
import { ManagedProcess } from '../local-cluster/managed-process.ts';
import { natsServerBinary } from '../local-cluster/nats.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { checkServingPair, type TlsFileName } from './certificate-reload.ts';

type Files = Record<TlsFileName, string>;
const log = pino({ level: process.env.LOG_LEVEL ?? 'warn', name: 'reloader-itest' });
const issuer = x509Issuer();
const DAY = 86_400_000;
let dir: string;
let ca: KeyPair;
let port: number;
let server: ManagedProcess;
let reloader: ManagedProcess;
let volume: SecretVolume;
let existing: NatsConnection;
const disconnects: string[] = [];

/**
 * A Secret volume as the kubelet writes it (its AtomicWriter): each version in a new directory
 * `..<timestamp>`, `..data` pointing at it, each key a symlink `<key> → ..data/<key>`. A new
 * version is written whole, then `..data_tmp` is renamed over `..data` in one step, then the old
 * directory is removed.
 */
class SecretVolume {
  private version = 0;
  private current: string | undefined;
  readonly dir: string;
  constructor(dir: string) {
    this.dir = dir;
  }

  async write(files: Files): Promise<void> {
    const name = `..2026_01_01_00_00_0${this.version++}.${process.pid}`;
    await mkdir(join(this.dir, name), { recursive: true });
    for (const [key, text] of Object.entries(files))
      await writeFile(join(this.dir, name, key), text, { mode: 0o440 });
    await symlink(name, join(this.dir, '..data_tmp'));
    await rename(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (this.current === undefined)
      for (const key of Object.keys(files)) await symlink(join('..data', key), join(this.dir, key));
    else await rm(join(this.dir, this.current), { recursive: true });
    this.current = name;
  }
}

async function pair(): Promise<Files> {
  const now = Date.now();
  const leaf = await issuer.issueServing({
    ca,
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    notBeforeMs: now - 60_000,
    notAfterMs: now + 365 * DAY,
  });
  return { 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem, 'ca.crt': ca.certPem };
}

const fingerprintOf = (files: Files) => {
  const check = checkServingPair(files);
  if (!check.ok) throw new Error(check.reason);
  return check.fingerprint;
};

/** The fingerprint of the certificate the server presents to a new connection, verified against the CA. */
async function servedFingerprint(): Promise<string> {
  const socket: Socket = createConnection(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    let info = '';
    while (!info.includes('\r\n')) info += ((await once(socket, 'data')) as [Buffer])[0].toString('utf8');
    const secure = tlsConnect({ socket, ca: ca.certPem, servername: 'localhost' });
    await once(secure, 'secureConnect');
    const fingerprint = secure.getPeerCertificate().fingerprint256;
    secure.destroy();
    return fingerprint;
  } finally {
    socket.destroy();
  }
}

async function logLines(file: string): Promise<string[]> {
  return (await readFile(file, 'utf8').catch(() => '')).split('\n').filter((l) => l !== '');
}

/** The reloader's structured log entries with message `msg`. */
async function reloaderEntries(msg: RegExp): Promise<Record<string, unknown>[]> {
  return (await logLines(reloader.logFile))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => msg.test(String(e.msg)));
}

/** How many reloads the server reports, applied and failed. */
async function serverReloads(): Promise<{ applied: number; failed: number }> {
  const lines = await logLines(server.logFile);
  return {
    applied: lines.filter((l) => l.includes('Reloaded server configuration')).length,
    failed: lines.filter((l) => /[Ff]ailed to reload/.test(l)).length,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-reloader-'));
  const now = Date.now();
  ca = await issuer.createCa({
    commonName: 'reloader itest CA',
    notBeforeMs: now - 60_000,
    notAfterMs: now + 3650 * DAY,
  });
  volume = new SecretVolume(join(dir, 'nats-tls'));
  await volume.write(await pair());
  port = await freePort();
  const monitor = await freePort();
  const tls = (f: string) => join(volume.dir, f);
  await writeFile(
    join(dir, 'nats.conf'),
    [
      `listen: "127.0.0.1:${port}"`,
      `http: "127.0.0.1:${monitor}"`,
      'server_name: reloader-itest',
      `pid_file: "${join(dir, 'nats.pid')}"`,
      `tls { cert_file: "${tls('tls.crt')}", key_file: "${tls('tls.key')}", ca_file: "${tls('ca.crt')}", verify: false, timeout: 2 }`,
    ].join('\n'),
  );
  server = new ManagedProcess(
    {
      name: 'nats-server',
      command: natsServerBinary(),
      args: ['-c', join(dir, 'nats.conf')],
      env: childEnv(),
      logFile: join(dir, 'nats-server.log'),
    },
    log,
  );
  await waitFor('nats-server healthy', async () => {
    if (!server.running) throw new Error(`nats-server exited: see ${server.logFile}`);
    const res = await fetch(`http://127.0.0.1:${monitor}/healthz`).catch(() => undefined);
    return res?.ok ? true : undefined;
  });
  reloader = new ManagedProcess(
    {
      name: 'nats-reloader',
      command: process.execPath,
      args: [
        join(PROJECT_ROOT, 'src/cli/main.ts'),
        'nats-reloader',
        `--tls-dir=${volume.dir}`,
        `--pid-file=${join(dir, 'nats.pid')}`,
        '--interval-seconds=0.2',
      ],
      env: childEnv(),
      logFile: join(dir, 'nats-reloader.log'),
    },
    log,
  );
  await waitFor('the reloader watching', async () => {
    if (!reloader.running) throw new Error(`nats-reloader exited: see ${reloader.logFile}`);
    return (await reloaderEntries(/^watching/)).length > 0 ? true : undefined;
  });
  existing = await connect({ servers: `nats://127.0.0.1:${port}`, tls: { ca: ca.certPem } });
  void (async () => {
    for await (const s of existing.status())
      if (s.type === 'disconnect' || s.type === 'reconnect') disconnects.push(s.type);
  })();
});

afterAll(async () => {
  await existing?.close().catch(() => undefined);
  await reloader?.stop();
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('switchyard nats-reloader', () => {
  it('serves a certificate renewed the kubelet’s way without a restart, and a connection made before stays up', async () => {
    const clientId = existing.info?.client_id;
    const before = await serverReloads();
    const renewed = await pair();
    expect(await servedFingerprint()).not.toBe(fingerprintOf(renewed));
    await volume.write(renewed);
    await waitFor('the renewed certificate served to a new connection', async () =>
      (await servedFingerprint()) === fingerprintOf(renewed) ? true : undefined,
    );
    const [sent] = await reloaderEntries(/reload sent/);
    expect(sent, 'the reloader logs the reload').toMatchObject({
      changed: ['tls.crt', 'tls.key'],
      fingerprint: { to: fingerprintOf(renewed) },
      pid: server.pid,
    });
    expect(await serverReloads()).toEqual({ applied: before.applied + 1, failed: 0 });
    // The connection made before: the same one (no reconnect), still answering.
    await existing.flush();
    expect(existing.isClosed()).toBe(false);
    expect(existing.info?.client_id).toBe(clientId);
    expect(disconnects).toEqual([]);
    expect(server.running).toBe(true);
  });

  it('never signals a renewal whose key is not its certificate’s, and signals once the pair is whole', async () => {
    const served = await servedFingerprint();
    const before = await serverReloads();
    const next = await pair();
    const other = await pair();
    await volume.write({ ...next, 'tls.key': other['tls.key'] });
    await waitFor('the mismatch logged', async () =>
      (await reloaderEntries(/would not serve/)).length > 0 ? true : undefined,
    );
    const [refused] = await reloaderEntries(/would not serve/);
    expect(refused).toMatchObject({ reason: expect.stringMatching(/not the key of the certificate/) });
    // Several polls later: still no signal, the server still serves the last good certificate.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await serverReloads()).toEqual(before);
    expect(await servedFingerprint()).toBe(served);
    expect(await reloaderEntries(/would not serve/)).toHaveLength(1);

    await volume.write(next);
    await waitFor('the whole pair served', async () =>
      (await servedFingerprint()) === fingerprintOf(next) ? true : undefined,
    );
    expect(await serverReloads()).toEqual({ applied: before.applied + 1, failed: 0 });
    expect(existing.isClosed()).toBe(false);
    expect(disconnects).toEqual([]);
  });
});
