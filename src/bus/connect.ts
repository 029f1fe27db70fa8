import { readFileSync } from 'node:fs';
import { type JetStreamClient, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection, usernamePasswordAuthenticator } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { systemClock } from '../runtime/clock.ts';
import { inboxPrefixOf } from './inbox.ts';
import { describeError, isInfrastructureError } from './runtime/errors.ts';
import { checkTlsFilesReadable, explainTlsFailure, type NatsTlsFiles, natsClientTls } from './tls.ts';
import {
  checkServerVersion,
  DEFAULT_TOPOLOGY,
  ensureTopology,
  type TopologyOptions,
  verifyTopology,
} from './topology.ts';

export interface Bus {
  nc: NatsConnection;
  js: JetStreamClient;
  jsm: JetStreamManager;
  topology: TopologyOptions;
  close(): Promise<void>;
}

/**
 * What a process does with the topology at start:
 * - `apply`: it is the topology's owner (`switchyard bus setup`, the local demo);
 * - `verify`: every worker: wait until the owner has applied it, saying what is missing;
 * - `none`: read-only tools (`bus stats`) that must neither change nor wait.
 */
export type TopologyMode = 'apply' | 'verify' | 'none';

const VERIFY_RETRY_MS = 2_000;

/**
 * A server that stops answering (stalled, or a cluster node cut off) is given up after
 * 3 unanswered pings 5 s apart, and the client moves to another node of the cluster: the
 * client's default (2 min × 2) would leave a component on a dead node for minutes, its
 * view going stale all that time.
 */
const PING_INTERVAL_MS = 5_000;
const MAX_PINGS_OUT = 3;

/**
 * Connects a component to the bus: reconnects forever (the client's default
 * gives up after ten tries, ~20 s), to any node of a cluster, checks the server can run the topology,
 * and applies or verifies the topology.
 */
export async function connectBus(opts: {
  servers: string;
  /** Who it connects as (`nats.user`, `nats.passwordFile`); none when the user is empty. */
  credentials?: NatsCredentials | undefined;
  /** `nats.tls`: the CA the server's certificate must chain to, a client certificate (src/bus/tls.ts). */
  tls?: NatsTlsFiles | undefined;
  name: string;
  log: Logger;
  topology?: TopologyOptions;
  mode: TopologyMode;
  /** Mode `apply`: the pacers' slot buckets, brought to the topology's replicas where they exist. */
  buckets?: readonly string[];
  signal?: AbortSignal;
  /**
   * The servers are dialled through a forwarded port (`kubectl port-forward`): the server's
   * certificate is verified against the name the cluster reaches it by, and the other servers a
   * cluster advertises are not dialled (their addresses are the cluster's).
   */
  forwarded?: { tlsServerName: string };
}): Promise<Bus> {
  const servers = natsServerList(opts.servers);
  const files = natsClientTls(opts.tls, servers);
  checkTlsFilesReadable(files);
  const tls = files && opts.forwarded ? { ...files, servername: opts.forwarded.tlsServerName } : files;
  const nc = await connect({
    servers,
    name: opts.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 1000,
    pingInterval: PING_INTERVAL_MS,
    maxPingOut: MAX_PINGS_OUT,
    ...(tls ? { tls } : {}),
    ...(opts.forwarded && { ignoreClusterUpdates: true }),
    ...credentialOptions(opts.credentials),
  }).catch((err: unknown) => {
    throw explainTlsFailure(err, tls);
  });
  try {
    checkServerVersion(nc.info?.version ?? '0.0.0', nc.info?.jetstream === true);
    const jsm = await jetstreamManager(nc);
    const topology = opts.topology ?? DEFAULT_TOPOLOGY;
    if (opts.mode === 'apply') {
      const applied = await ensureTopology(jsm, topology, opts.buckets);
      opts.log.info({ streams: applied, server: nc.info?.version }, 'bus topology applied');
    } else if (opts.mode === 'verify') {
      await waitForTopology(jsm, topology, opts.log, opts.signal);
    }
    return { nc, js: jetstream(nc), jsm, topology, close: () => nc.drain() };
  } catch (err) {
    await nc.close();
    throw err;
  }
}

/**
 * `nats.url` as the client takes it: one URL, or a cluster's comma-separated (the client does not
 * split a string, and would try the whole of it as one address).
 */
export function natsServerList(url: string): string[] {
  return url
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u.length > 0);
}

export interface NatsCredentials {
  user: string;
  passwordFile: string;
}

/**
 * The user and its password, read from the file at every (re)connect, and the user's own inbox
 * prefix: a user may subscribe only under `_INBOX.<user>.>` (src/access/nats-permissions.ts).
 */
function credentialOptions(credentials: NatsCredentials | undefined) {
  if (!credentials?.user) return {};
  const { user, passwordFile } = credentials;
  const password = () => {
    if (!passwordFile) return '';
    try {
      return readFileSync(passwordFile, 'utf8').trim();
    } catch (err) {
      throw new Error(`cannot read the NATS password of ${user} from ${passwordFile}: ${String(err)}`);
    }
  };
  return {
    authenticator: usernamePasswordAuthenticator(user, password),
    inboxPrefix: inboxPrefixOf(user),
  };
}

async function waitForTopology(
  jsm: JetStreamManager,
  topology: TopologyOptions,
  log: Logger,
  signal: AbortSignal | undefined,
): Promise<void> {
  for (;;) {
    signal?.throwIfAborted();
    const verdict = await verifyTopology(jsm, topology).catch((err: unknown) => {
      // A cluster electing a stream's leader, or a node restarting, answers nothing for a while.
      if (!isInfrastructureError(err)) throw err;
      log.warn({ err: describeError(err) }, 'cannot read the bus topology yet; trying again');
      return undefined;
    });
    if (!verdict) {
      await systemClock.sleep(VERIFY_RETRY_MS, signal);
      continue;
    }
    const { problems, warnings } = verdict;
    if (problems.length === 0) {
      if (warnings.length > 0)
        log.warn(
          { warnings },
          'bus topology differs from this configuration in replicas; `switchyard bus setup` applies it',
        );
      return;
    }
    log.warn({ problems }, 'bus topology not as expected; waiting for `switchyard bus setup` to apply it');
    await systemClock.sleep(VERIFY_RETRY_MS, signal);
  }
}
