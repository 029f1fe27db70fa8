// NATS for a test: a connection to the run's shared server, and servers or a 3-node cluster of
// the test's own, each in a temporary directory, for tests that restart NATS, change how it is
// configured (TLS, users, a cluster) or must share it with nothing.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConnectionOptions, connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { freePort } from '../../src/local-cluster/free-port.ts';
import { NatsServer } from '../../src/local-cluster/nats.ts';
import { type LocalNatsAddress, natsConnectOptions } from '../../src/local-cluster/nats-client.ts';
import { NatsCluster } from '../../src/local-cluster/nats-cluster.ts';
import {
  type LocalNatsCredentials,
  makeLocalNatsCredentials,
} from '../../src/local-cluster/nats-credentials.ts';
import { LocalNatsTls } from '../../src/local-cluster/nats-tls.ts';

/** A connection to `nats` (the run's: `LocalClusterInfo`), verifying its certificate when it serves TLS. */
export function connectNats(nats: LocalNatsAddress, opts: ConnectionOptions = {}): Promise<NatsConnection> {
  return connect({ ...natsConnectOptions(nats), ...opts });
}

/** A NATS URL nothing listens on (a port that was free a moment ago): a bus that cannot be reached. */
export async function unreachableNatsUrl(): Promise<string> {
  return `nats://127.0.0.1:${await freePort()}`;
}

/**
 * A CA made as the local stack's NATS CA is, in `dir`, that no server's certificate chains to;
 * resolves to its certificate file (what `nats.tls.caFile` names).
 */
export async function unrelatedNatsCaFile(dir: string): Promise<string> {
  return (await LocalNatsTls.create(dir, Date.now())).paths.caFile;
}

interface OwnDir {
  /** The temporary directory, removed by `stop()`: processes the test starts beside NATS may log there. */
  dir: string;
  /**
   * Stops NATS, then removes the directory; resolves to every request it refused a user for its
   * permissions, read from its complete log.
   */
  stop(): Promise<string[]>;
}

export interface OwnNatsServer extends OwnDir {
  server: NatsServer;
}

export interface OwnNatsCluster extends OwnDir {
  cluster: NatsCluster;
}

/**
 * The local stack's NATS users (one per component, with its cluster permissions, and passwords in
 * `users.dir`), which the server declares; a client without credentials acts as `admin`.
 */
export interface WithNatsUsers {
  users: LocalNatsCredentials;
}

/** Users for the server: the local stack's made afresh in its directory (`true`), or another own server's. */
type UsersOption = true | LocalNatsCredentials;

export interface OwnNatsServerOptions {
  /** Clients must use TLS, with a certificate of a CA of the server's own (`server.tls`). */
  tls?: boolean;
  /** Appended to the server's configuration. */
  config?: string;
}

/**
 * A nats-server of the test's own with JetStream, in a temporary directory named after `name`;
 * without users unless asked for, so every client may do everything.
 */
export function startOwnNats(
  name: string,
  log: Logger,
  opts: OwnNatsServerOptions & { users: UsersOption },
): Promise<OwnNatsServer & WithNatsUsers>;
export function startOwnNats(name: string, log: Logger, opts?: OwnNatsServerOptions): Promise<OwnNatsServer>;
export async function startOwnNats(
  name: string,
  log: Logger,
  opts: OwnNatsServerOptions & { users?: UsersOption } = {},
): Promise<OwnNatsServer & Partial<WithNatsUsers>> {
  const own = await inOwnDir(name, opts.users, (dir, authorization) =>
    NatsServer.start(dir, log, [authorization, opts.config].filter(Boolean).join('\n'), {
      tls: opts.tls === true,
    }),
  );
  return { dir: own.dir, server: own.nats, users: own.users, stop: own.stop };
}

/**
 * A JetStream cluster of three nats-server processes of the test's own (`NatsCluster`), in a
 * temporary directory named after `name`; with the local stack's users when asked for.
 */
export function startOwnNatsCluster(
  name: string,
  log: Logger,
  opts: { users: true },
): Promise<OwnNatsCluster & WithNatsUsers>;
export function startOwnNatsCluster(name: string, log: Logger): Promise<OwnNatsCluster>;
export async function startOwnNatsCluster(
  name: string,
  log: Logger,
  opts: { users?: true } = {},
): Promise<OwnNatsCluster & Partial<WithNatsUsers>> {
  const own = await inOwnDir(name, opts.users, (dir, authorization) =>
    NatsCluster.start(dir, log, authorization),
  );
  return { dir: own.dir, cluster: own.nats, users: own.users, stop: own.stop };
}

/**
 * How many times a test's own NATS is started afresh, in a new directory on new ports, before its
 * test fails: the NATS the test needs is its setting, not what it tests, and a port another test
 * process took between the probe and the bind (`freePort`) is the test run's race, not a finding.
 */
const OWN_NATS_START_ATTEMPTS = 2;

/**
 * Starts NATS in a new temporary directory with `users` declared; the directory goes if it fails
 * to start, and it is tried again in another, saying why on stderr.
 */
async function inOwnDir<T extends NatsServer | NatsCluster>(
  name: string,
  usersOption: UsersOption | undefined,
  start: (dir: string, authorization: string) => Promise<T>,
): Promise<OwnDir & { nats: T; users: LocalNatsCredentials | undefined }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await inNewDir(name, usersOption, start);
    } catch (err) {
      if (attempt >= OWN_NATS_START_ATTEMPTS) throw err;
      console.warn(`[test nats] ${name} did not start (attempt ${attempt}), trying again: ${err}`);
    }
  }
}

async function inNewDir<T extends NatsServer | NatsCluster>(
  name: string,
  usersOption: UsersOption | undefined,
  start: (dir: string, authorization: string) => Promise<T>,
): Promise<OwnDir & { nats: T; users: LocalNatsCredentials | undefined }> {
  const dir = await mkdtemp(join(tmpdir(), `switchyard-${name}-`));
  const remove = () => rm(dir, { recursive: true, force: true });
  try {
    const users = usersOption === true ? await makeLocalNatsCredentials(dir) : usersOption;
    const nats = await start(dir, users?.authorization ?? '');
    return {
      dir,
      nats,
      users,
      async stop() {
        await nats.stop();
        const refused = await nats.permissionViolations();
        await remove();
        return refused;
      },
    };
  } catch (err) {
    await remove();
    throw err;
  }
}
