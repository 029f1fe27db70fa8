import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { childEnv } from './control-plane.ts';
import { freePort } from './free-port.ts';
import { ManagedProcess } from './managed-process.ts';
import type { NatsContainer } from './nats-container.ts';
import { LocalNatsTls, type NatsTlsPaths, natsRouteTlsConfig, natsTlsConfig } from './nats-tls.ts';
import { WaitHopeless, waitFor } from './wait.ts';

/** A health request that hangs (a server stalled mid-start) fails, so the next poll asks again. */
const HEALTH_REQUEST_TIMEOUT_MS = 5_000;

/**
 * nats-server with JetStream on a file store inside `dir` and the HTTP
 * monitoring port on. The binary is the one scripts/lib/bootstrap.sh builds
 * from the pinned module in tools/nats-server (`SWITCHYARD_BIN_NATS`).
 * `extraConfig` is appended to the generated configuration (accounts, users).
 * With `tls: true` it requires TLS of its clients, with a certificate of its own CA
 * (`nats-tls.ts`, `tls`), rotated by `rotateCertificate()` without a restart.
 *
 * The ports and the store are fixed at creation, so `restart()` brings the
 * same server back with its streams: what fault tests need to prove that
 * clients survive a NATS restart.
 *
 * It runs as a process of this one, or, with SWITCHYARD_NATS_BACKEND=testcontainers,
 * in a container on the host's network (`nats-container.ts`); callers see no
 * difference.
 */
export class NatsServer {
  readonly name: string;
  readonly url: string;
  readonly monitorUrl: string;
  /** Its CA and certificate files when it requires TLS; a client trusts `tls.paths.caFile`. */
  readonly tls: LocalNatsTls | undefined;
  private current: ManagedProcess | NatsContainer | undefined;
  private readonly configFile: string;
  private readonly logFile: string;
  private readonly log: Logger;

  private readonly dir: string;
  /** The configuration's own lines; what `start` was given comes after them. */
  private readonly baseConfig: string[];

  private constructor(opts: {
    name: string;
    port: number;
    httpPort: number;
    dir: string;
    configFile: string;
    logFile: string;
    log: Logger;
    tls: LocalNatsTls | undefined;
    baseConfig: string[];
  }) {
    this.baseConfig = opts.baseConfig;
    this.name = opts.name;
    this.url = `nats://127.0.0.1:${opts.port}`;
    this.monitorUrl = `http://127.0.0.1:${opts.httpPort}`;
    this.dir = opts.dir;
    this.configFile = opts.configFile;
    this.logFile = opts.logFile;
    this.log = opts.log;
    this.tls = opts.tls;
  }

  static async start(
    dir: string,
    log: Logger,
    extraConfig = '',
    node: NatsNodeOptions = {},
  ): Promise<NatsServer> {
    const port = node.port ?? (await freePort());
    const httpPort = await freePort();
    const storeDir = join(dir, 'jetstream');
    await mkdir(storeDir, { recursive: true });
    await mkdir(join(dir, 'logs'), { recursive: true });
    const tls =
      node.tls instanceof LocalNatsTls
        ? node.tls
        : node.tls
          ? await LocalNatsTls.create(join(dir, 'tls'), Date.now())
          : undefined;
    const configFile = join(dir, 'nats.conf');
    const baseConfig = [
      `listen: "127.0.0.1:${port}"`,
      `http: "127.0.0.1:${httpPort}"`,
      `server_name: "${node.serverName ?? 'switchyard-local'}"`,
      `jetstream { store_dir: "${storeDir}", max_memory_store: 256MB, max_file_store: 2GB }`,
      node.cluster ? clusterConfig(node.cluster, tls?.paths) : '',
      tls ? natsTlsConfig(tls.paths) : '',
    ];
    await writeFile(configFile, [...baseConfig, extraConfig].join('\n'));
    const server = new NatsServer({
      name: node.serverName ?? 'nats-server',
      port,
      httpPort,
      dir,
      configFile,
      logFile: join(dir, 'logs', 'nats-server.log'),
      log,
      tls,
      baseConfig,
    });
    try {
      await server.launch();
    } catch (err) {
      await server.stop({ kill: true });
      throw err;
    }
    return server;
  }

  /**
   * Writes the configuration again with `extraConfig` in place of what `start` was given, and has
   * the running server reload it (SIGHUP): users and their permissions change for the clients
   * already connected, without a restart.
   */
  async reconfigure(extraConfig: string): Promise<void> {
    const current = this.current;
    if (!(current instanceof ManagedProcess))
      throw new Error('reconfigure: the server runs as a process only');
    await writeFile(this.configFile, [...this.baseConfig, extraConfig].join('\n'));
    current.kill('SIGHUP');
  }

  get running(): boolean {
    return this.current?.running === true;
  }

  /** The process's id; undefined in a container (its process is the container runtime's). */
  get pid(): number | undefined {
    return this.current instanceof ManagedProcess ? this.current.pid : undefined;
  }

  /**
   * Stops the server (SIGTERM, or SIGKILL with `kill`: no shutdown at all, as a crash or an OOM
   * kill ends it); its store stays for `launch()`.
   */
  async stop(opts: { kill?: boolean } = {}): Promise<void> {
    const current = this.current;
    if (current instanceof ManagedProcess) {
      if (!opts.kill) return current.stop(5_000);
      current.kill('SIGKILL');
      await current.whenExited();
    } else await current?.stop(opts);
  }

  /**
   * Lame duck (SIGUSR2), as deploy/'s preStop hook does before a Pod stops: the server stops
   * accepting clients, tells its clients to move to another server of the cluster, closes them
   * over the lame-duck duration and exits. Resolves once it has; its store stays for `launch()`.
   */
  async stopInLameDuck(): Promise<void> {
    const current = this.current;
    if (!(current instanceof ManagedProcess))
      throw new Error(
        'nats-server lame duck: only when it runs as a process (SWITCHYARD_NATS_BACKEND=process)',
      );
    current.kill('SIGUSR2');
    await current.whenExited();
  }

  /**
   * SIGSTOP: the server keeps its sockets open but answers nothing, sends no heartbeat and
   * accepts no connection, as a server stalled by its host does; `thaw()` resumes it. Only on the
   * process backend (a container would be paused by its runtime instead).
   */
  freeze(): void {
    this.signal('SIGSTOP');
  }

  /** SIGCONT: a frozen server resumes where it stopped; its clients' connections may have given up meanwhile. */
  thaw(): void {
    this.signal('SIGCONT');
  }

  /**
   * Reloads the configuration (SIGHUP, as `nats-server --signal reload` sends): the server
   * re-reads its files, the TLS certificate included, and keeps every connection.
   */
  async reload(): Promise<void> {
    const current = this.current;
    if (current instanceof ManagedProcess) current.kill('SIGHUP');
    else await current?.signal('SIGHUP');
  }

  /**
   * A new serving certificate from the same CA, then a reload: new connections get it, existing
   * ones stay up on the old one. Returns the new certificate (PEM).
   */
  async rotateCertificate(): Promise<string> {
    if (!this.tls) throw new Error('nats-server rotateCertificate: it was started without tls');
    const certPem = await this.tls.issue(Date.now());
    await this.reload();
    return certPem;
  }

  private signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    const current = this.current;
    if (!(current instanceof ManagedProcess))
      throw new Error(
        `nats-server ${signal}: only when it runs as a process (SWITCHYARD_NATS_BACKEND=process)`,
      );
    current.kill(signal);
  }

  /** Starts the server (again) on the same ports and store; resolves once JetStream is healthy. */
  async launch(): Promise<void> {
    const running = natsBackend() === 'testcontainers' ? await this.launchContainer() : this.launchProcess();
    this.current = running;
    try {
      await waitFor('nats-server with JetStream to be healthy', async () => {
        if (!running.running) throw new WaitHopeless('nats-server exited');
        return this.healthy();
      });
    } catch (err) {
      throw new Error(`${(err as Error).message}; the end of ${this.logFile}:\n${await this.logTail(20)}`);
    }
  }

  /** True once /healthz says JetStream is up; otherwise throws what it answered, for the timeout's message. */
  private async healthy(): Promise<true> {
    const res = await fetch(`${this.monitorUrl}/healthz?js-enabled-only=true`, {
      signal: AbortSignal.timeout(HEALTH_REQUEST_TIMEOUT_MS),
    }).catch((err: Error) => {
      throw new Error(`${this.monitorUrl}/healthz did not answer: ${err.cause ?? err.message}`);
    });
    if (res.ok) return true;
    throw new Error(`${this.monitorUrl}/healthz answered ${res.status} ${await res.text()}`);
  }

  private async logTail(lines: number): Promise<string> {
    const text = await readFile(this.logFile, 'utf8').catch((err: Error) => `(unreadable: ${err.message})`);
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  }

  private launchProcess(): ManagedProcess {
    return new ManagedProcess(
      {
        name: this.name,
        command: natsServerBinary(),
        args: ['-c', this.configFile],
        env: childEnv(),
        logFile: this.logFile,
      },
      this.log,
    );
  }

  private async launchContainer(): Promise<NatsContainer> {
    const { NatsContainer } = await import('./nats-container.ts');
    const container = new NatsContainer({
      binary: natsServerBinary(),
      dir: this.dir,
      configFile: this.configFile,
      logFile: this.logFile,
    });
    await container.start();
    return container;
  }

  /**
   * Every publish or subscribe the server refused for a user's permissions so far, as logged
   * (`… "$G/user:handover" - Publish Violation - Subject "k8s.x"`): a component whose role
   * misses a subject shows here, whatever it did with the refusal.
   */
  async permissionViolations(): Promise<string[]> {
    return this.logged(/ - (Publish|Subscription) Violation - /);
  }

  /** The lines of its log so far that match `pattern` (e.g. a refused route's handshake error). */
  async logged(pattern: RegExp): Promise<string[]> {
    const text = await readFile(this.logFile, 'utf8').catch(() => '');
    return text.split('\n').filter((line) => pattern.test(line));
  }

  async restart(opts: { kill?: boolean } = {}): Promise<void> {
    await this.stop(opts);
    await this.launch();
  }
}

/** What makes one server a node of a cluster (`nats-cluster.ts`), and whether it requires TLS. */
export interface NatsNodeOptions {
  /** The client port, when the caller had to know it before the server starts (a cluster's seed list). */
  port?: number;
  /** Unique per node: JetStream places stream replicas by server name. */
  serverName?: string;
  cluster?: NatsRoutes;
  /**
   * Clients must use TLS (a `tls {}` block, certificates from `nats-tls.ts`), and so must a
   * cluster's routes: `true` for a CA of the server's own, or the files a cluster's nodes share
   * (one CA a client trusts for all of them, and each node trusts for the others' routes).
   */
  tls?: boolean | LocalNatsTls;
}

export interface NatsRoutes {
  name: string;
  /** This node's route port. */
  port: number;
  /** Every node's route port, this one's included (a server skips a route to itself). */
  routePorts: readonly number[];
  /**
   * How often a route is pinged, and how many unanswered pings end it: a node cut off (frozen) is
   * dropped by its peers after about interval × max. Small on the local stack so tests see it.
   */
  pingIntervalSeconds: number;
  pingMax: number;
  /** How long a node in lame duck takes to close its clients before it exits (`stopInLameDuck`). */
  lameDuckSeconds: number;
}

/** With `tls`, the routes are TLS too, verified at both ends (`natsRouteTlsConfig`). */
function clusterConfig(routes: NatsRoutes, tls: NatsTlsPaths | undefined): string {
  const urls = routes.routePorts.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ');
  return [
    'cluster {',
    `  name: "${routes.name}"`,
    `  listen: "127.0.0.1:${routes.port}"`,
    `  routes: [${urls}]`,
    `  ping_interval: "${routes.pingIntervalSeconds}s"`,
    `  ping_max: ${routes.pingMax}`,
    ...(tls ? [natsRouteTlsConfig(tls)] : []),
    '}',
    `lame_duck_duration: "${routes.lameDuckSeconds}s"`,
    'lame_duck_grace_period: "1s"',
  ].join('\n');
}

export type NatsBackend = 'process' | 'testcontainers';

/** Where the local stack runs nats-server: SWITCHYARD_NATS_BACKEND, `process` by default. */
export function natsBackend(env: NodeJS.ProcessEnv = process.env): NatsBackend {
  const backend = env.SWITCHYARD_NATS_BACKEND ?? 'process';
  if (backend !== 'process' && backend !== 'testcontainers')
    throw new Error(`SWITCHYARD_NATS_BACKEND=${backend}: expected process or testcontainers`);
  return backend;
}

export function natsServerBinary(): string {
  const binary = process.env.SWITCHYARD_BIN_NATS;
  if (!binary) {
    throw new Error(
      'SWITCHYARD_BIN_NATS is not set: run through scripts/test.sh or scripts/demo.sh, which build nats-server',
    );
  }
  return binary;
}
