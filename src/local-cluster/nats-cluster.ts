import { join } from 'node:path';
import type { Logger } from 'pino';
import { freePort } from './free-port.ts';
import { NatsServer, natsBackend } from './nats.ts';
import { LocalNatsTls } from './nats-tls.ts';
import { waitFor } from './wait.ts';

export const NATS_CLUSTER_NAME = 'switchyard-local';

/**
 * Route pings on the local stack: every second, three unanswered end the route. A node frozen
 * (SIGSTOP) for longer than ~3 s is cut off from the other two, as a partitioned node is; the
 * server's default (2 min × 2) would keep a test waiting minutes for the same verdict.
 */
const ROUTE_PING = { pingIntervalSeconds: 1, pingMax: 3 } as const;
/** A rolled node's lame duck: the server's minimum, and deploy/nats-cluster's setting. */
const LAME_DUCK_SECONDS = 30;

/**
 * A JetStream cluster of `size` nats-server processes on loopback (three by default: the smallest
 * that keeps a quorum when one is lost), each with its own store under `<dir>/nats-<i>`, routes to
 * the others and the same users. Nodes are `NatsServer`s: each can be killed, stopped, frozen and
 * brought back on its ports and store, which the fault tests do one node at a time.
 *
 * Clients take `url`, every node's client URL comma-separated, as `nats.url` does: a client that
 * starts while one node is down connects to another.
 */
export class NatsCluster {
  readonly nodes: readonly NatsServer[];

  private constructor(nodes: readonly NatsServer[]) {
    this.nodes = nodes;
  }

  static async start(
    dir: string,
    log: Logger,
    extraConfig = '',
    opts: { size?: number; tls?: boolean } = {},
  ): Promise<NatsCluster> {
    const size = opts.size ?? 3;
    if (natsBackend() !== 'process')
      throw new Error('a local NATS cluster runs as processes only (SWITCHYARD_NATS_BACKEND=process)');
    const clientPorts: number[] = [];
    const routePorts: number[] = [];
    for (let i = 0; i < size; i++) {
      clientPorts.push(await freePort());
      routePorts.push(await freePort());
    }
    // One CA and one certificate for every node: they all listen on 127.0.0.1, a client trusts
    // one CA for the whole cluster, and the routes are TLS verified at both ends against it (the
    // certificate names 127.0.0.1, where routes dial, and may be used as a client's).
    const tls = opts.tls ? await LocalNatsTls.create(join(dir, 'nats-tls'), Date.now()) : undefined;
    const started = await Promise.allSettled(
      clientPorts.map((port, i) =>
        NatsServer.start(join(dir, `nats-${i}`), log, extraConfig, {
          port,
          serverName: nodeName(i),
          ...(tls ? { tls } : {}),
          cluster: {
            name: NATS_CLUSTER_NAME,
            port: routePorts[i] as number,
            routePorts,
            ...ROUTE_PING,
            lameDuckSeconds: LAME_DUCK_SECONDS,
          },
        }),
      ),
    );
    const nodes = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = started.find((s) => s.status === 'rejected');
    if (failed) {
      await Promise.all(nodes.map((n) => n.stop({ kill: true })));
      throw failed.reason;
    }
    const cluster = new NatsCluster(nodes);
    await cluster.waitForMetaLeader();
    return cluster;
  }

  /** Every node's client URL, comma-separated (`nats.url`). */
  get url(): string {
    return this.nodes.map((n) => n.url).join(',');
  }

  node(name: string): NatsServer {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no NATS node ${name}: ${this.nodes.map((n) => n.name).join(', ')}`);
    return node;
  }

  /**
   * Until a JetStream meta leader is elected and every running node knows it: streams can be
   * created and moved only then. A node brought back rejoins before this resolves.
   */
  async waitForMetaLeader(timeoutMs = 60_000): Promise<string> {
    return waitFor(
      'the NATS cluster to elect a JetStream meta leader',
      async () => {
        const leaders = new Set<string>();
        for (const node of this.nodes.filter((n) => n.running)) {
          const leader = await metaLeaderSeenBy(node);
          if (!leader) return undefined;
          leaders.add(leader);
        }
        return leaders.size === 1 ? [...leaders][0] : undefined;
      },
      { timeoutMs, intervalMs: 250 },
    );
  }

  /**
   * The running node that leads a stream's replicas, as the servers report it: right after its
   * leader died the others still name it until they elect another, so a stopped one is waited out.
   */
  async streamLeader(stream: string): Promise<NatsServer> {
    return waitFor(`a running leader of stream ${stream}`, async () => {
      for (const node of this.nodes.filter((n) => n.running)) {
        const leader = await streamLeaderSeenBy(node, stream);
        if (leader && this.node(leader).running) return this.node(leader);
      }
      return undefined;
    });
  }

  /**
   * A new certificate from the cluster's CA for every node, then a reload of each: new client
   * connections and new routes get it, the connections and routes made before stay up on theirs.
   * Returns the new certificate (PEM).
   */
  async rotateCertificate(): Promise<string> {
    const tls = this.nodes[0]?.tls;
    if (!tls) throw new Error('NatsCluster rotateCertificate: it was started without tls');
    const certPem = await tls.issue(Date.now());
    await Promise.all(this.nodes.filter((n) => n.running).map((n) => n.reload()));
    return certPem;
  }

  async permissionViolations(): Promise<string[]> {
    return (await Promise.all(this.nodes.map((n) => n.permissionViolations()))).flat();
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

function nodeName(i: number): string {
  return `nats-${i}`;
}

async function monitor(node: NatsServer, path: string): Promise<unknown> {
  const res = await fetch(`${node.monitorUrl}${path}`, { signal: AbortSignal.timeout(2_000) }).catch(
    () => undefined,
  );
  return res?.ok ? res.json() : undefined;
}

async function metaLeaderSeenBy(node: NatsServer): Promise<string | undefined> {
  const jsz = (await monitor(node, '/jsz')) as { meta_cluster?: { leader?: string } } | undefined;
  return jsz?.meta_cluster?.leader || undefined;
}

async function streamLeaderSeenBy(node: NatsServer, stream: string): Promise<string | undefined> {
  const jsz = (await monitor(node, '/jsz?streams=true')) as
    | { account_details?: { stream_detail?: { name: string; cluster?: { leader?: string } }[] }[] }
    | undefined;
  for (const account of jsz?.account_details ?? []) {
    const detail = account.stream_detail?.find((s) => s.name === stream);
    if (detail?.cluster?.leader) return detail.cluster.leader;
  }
  return undefined;
}
