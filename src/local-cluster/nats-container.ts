// nats-server in a container, started through testcontainers: the local stack's NATS when
// SWITCHYARD_NATS_BACKEND=testcontainers (docs/local-cluster.md). The image is built here from
// the same nats-server binary the process backend runs (a static Go binary: `FROM scratch`
// plus the binary), because no image registry may be reachable; where one is, nothing changes.
//
// The container shares the host's network (so the server listens on loopback exactly where the
// process would) and the server's directory, bind-mounted at the same path (so the generated
// configuration, the JetStream store and a restart's state are where they would be). Ryuk,
// testcontainers' reaper, is an image to pull: it is off unless the environment says otherwise,
// and the containers of a run that was killed are removed at the next run's first start (each
// is labelled with the process that started it).
import { createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GenericContainer, StartedTestContainer } from 'testcontainers';

/** Marks every container of this backend, for the cleanup of a killed run's leftovers. */
const LABEL = 'dev.switchyard.local-stack';
/** The process that started it: its containers outlive it only if it was killed. */
const OWNER_LABEL = 'dev.switchyard.owner-pid';

process.env.TESTCONTAINERS_RYUK_DISABLED ??= 'true';
// The containers share the host's network, so they are reached on loopback; without this,
// testcontainers looks for the gateway of Docker's bridge network, which an engine run with
// --bridge=none (every connection on loopback) does not have.
process.env.TESTCONTAINERS_HOST_OVERRIDE ??= '127.0.0.1';

let image: Promise<string> | undefined;

/** The image, built once per process from `binary` (Docker's cache makes a rebuild instant). */
function natsImage(binary: string): Promise<string> {
  image ??= (async () => {
    const { GenericContainer, getContainerRuntimeClient } = await import('testcontainers');
    const client = await getContainerRuntimeClient();
    await removeLeftovers(client);
    const context = await mkdtemp(join(tmpdir(), 'switchyard-nats-image-'));
    try {
      await copyFile(binary, join(context, 'nats-server'));
      await writeFile(
        join(context, 'Dockerfile'),
        ['FROM scratch', 'COPY nats-server /nats-server', 'ENTRYPOINT ["/nats-server"]', ''].join('\n'),
      );
      const tag = 'switchyard-local/nats-server:dev';
      await GenericContainer.fromDockerfile(context).build(tag, { deleteOnExit: false });
      return tag;
    } finally {
      await rm(context, { recursive: true, force: true });
    }
  })();
  return image;
}

type RuntimeClient = Awaited<ReturnType<typeof import('testcontainers').getContainerRuntimeClient>>;

/** The containers of runs whose process is gone (killed before it could stop them). */
async function removeLeftovers(client: RuntimeClient): Promise<void> {
  for (const info of await client.container.list()) {
    const owner = Number(info.Labels?.[OWNER_LABEL]);
    if (info.Labels?.[LABEL] !== 'nats' || !Number.isInteger(owner) || isAlive(owner)) continue;
    await client.container.getById(info.Id).remove({ force: true });
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** One nats-server container; `start` again after `stop` runs a new one on the same directory. */
export class NatsContainer {
  private started: StartedTestContainer | undefined;
  private readonly opts: { binary: string; dir: string; configFile: string; logFile: string };

  constructor(opts: { binary: string; dir: string; configFile: string; logFile: string }) {
    this.opts = opts;
  }

  get running(): boolean {
    return this.started !== undefined;
  }

  async start(): Promise<void> {
    const { GenericContainer } = await import('testcontainers');
    const container: GenericContainer = new GenericContainer(await natsImage(this.opts.binary))
      .withNetworkMode('host')
      .withBindMounts([{ source: this.opts.dir, target: this.opts.dir, mode: 'rw' }])
      .withCommand(['-c', this.opts.configFile])
      .withLabels({ [LABEL]: 'nats', [OWNER_LABEL]: String(process.pid) });
    this.started = await container.start();
    const logs = await this.started.logs();
    logs.pipe(createWriteStream(this.opts.logFile, { flags: 'a' }));
  }

  /** Sends the server a signal (SIGHUP: reload its configuration) through the container runtime. */
  async signal(signal: NodeJS.Signals): Promise<void> {
    if (!this.started) return;
    const { getContainerRuntimeClient } = await import('testcontainers');
    const client = await getContainerRuntimeClient();
    await client.container.getById(this.started.getId()).kill({ signal });
  }

  /** SIGTERM and 5 s to stop (`kill`: at once), then the container is removed; the directory stays. */
  async stop(opts: { kill?: boolean } = {}): Promise<void> {
    const started = this.started;
    this.started = undefined;
    await started?.stop({ timeout: opts.kill ? 0 : 5_000, remove: true });
  }
}
