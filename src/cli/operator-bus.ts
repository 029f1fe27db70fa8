// How an operator's command (`bus stats`, `explain`, `dlq`, `replay`) reaches the bus: as the
// NATS user its flags name, or, when no --nats.url or --nats.user is given and a kubeconfig is at
// hand, as the cluster says (cluster-bus.ts: the workers' address and CA, the command's own
// user's password). An address only the cluster resolves (deploy/'s `nats.<namespace>.svc`) is
// reached through `kubectl port-forward` to that Service, the server's certificate verified
// against the Service's name as the workers verify it. It checks nothing of the topology and logs
// warnings to stderr, so that stdout stays the command's answer. A bus that cannot be reached is
// exit code 1, said once.
import type { Logger } from 'pino';
import type { NatsIdentity } from '../access/nats-permissions.ts';
import { type Bus, connectBus } from '../bus/connect.ts';
import { topologyOptions } from '../bus/topology.ts';
import type { LoadedConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { kubectlPortForward, type PortForward } from '../kube/port-forward.ts';
import { createLogger } from '../runtime/logger.ts';
import type { ClusterFlags } from './args.ts';
import { busFromCluster, type ClusterService, clusterServiceOf, kubeConfigOf } from './cluster-bus.ts';

/** What a person can do when the cluster's answer does not get the command to the bus. */
const NAME_IT = '  name it instead: --nats.url=… --nats.user=… --nats.passwordFile=… [--nats.tls.caFile=…]';

/** Where the command connects: its flags, else the cluster's answer; undefined when that failed (said). */
async function natsSettings(
  loaded: LoadedConfig,
  cluster: ClusterFlags,
  user: NatsIdentity,
): Promise<{ nats: Config['nats']; fromCluster: boolean } | undefined> {
  const { config, origins } = loaded;
  const explicit = 'nats.url' in origins || 'nats.user' in origins;
  let kc: ReturnType<typeof kubeConfigOf>;
  try {
    kc = explicit ? undefined : kubeConfigOf(cluster);
  } catch (err) {
    // A KUBECONFIG naming a missing or unreadable file, or an unknown --context: said, not a stack.
    process.stderr.write(`cannot read the kubeconfig: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
  if (!kc) return { nats: config.nats, fromCluster: false };
  try {
    const found = await busFromCluster(kc, cluster, user);
    process.once('exit', found.cleanup);
    const tls = { ...config.nats.tls, caFile: found.caFile ?? config.nats.tls.caFile };
    return {
      nats: { ...config.nats, url: found.url, user: found.user, passwordFile: found.passwordFile, tls },
      fromCluster: true,
    };
  } catch (err) {
    process.stderr.write(
      `cannot find the bus from the cluster (${kc.getCurrentContext()}): ${(err as Error).message}\n` +
        `${NAME_IT}\n`,
    );
    process.exitCode = 1;
    return undefined;
  }
}

/** A local port forwarded to `service`, by the kubectl on PATH, as the command's kubeconfig and context. */
function forwardToService(cluster: ClusterFlags, service: ClusterService): Promise<PortForward> {
  return kubectlPortForward({
    kubectl: 'kubectl',
    args: [
      ...(cluster.kubeconfig ? [`--kubeconfig=${cluster.kubeconfig}`] : []),
      ...(cluster.context ? [`--context=${cluster.context}`] : []),
      `--namespace=${service.namespace}`,
      '--pod-running-timeout=20s',
      `svc/${service.service}`,
      `:${service.port}`,
    ],
  });
}

/** `cluster`: the command's --kubeconfig, --context and -n (args.ts, CLUSTER_OPTIONS). */
export async function connectOperatorBus(
  loaded: LoadedConfig,
  cluster: ClusterFlags,
  name: string,
  user: NatsIdentity,
): Promise<{ bus: Bus; log: Logger } | undefined> {
  const { config } = loaded;
  const log = createLogger({ level: 'warn', format: config.log.format, fd: 2 }, name);
  const settings = await natsSettings(loaded, cluster, user);
  if (!settings) return undefined;
  const { nats, fromCluster } = settings;
  const service = fromCluster ? clusterServiceOf(nats.url) : undefined;
  let forward: PortForward | undefined;
  if (service) {
    try {
      forward = await forwardToService(cluster, service);
    } catch (err) {
      process.stderr.write(
        `cannot reach the bus at ${nats.url}, the workers' address inside the cluster: ` +
          `forwarding a port to the Service ${service.namespace}/${service.service} failed: ${(err as Error).message}\n${NAME_IT}\n`,
      );
      process.exitCode = 1;
      return undefined;
    }
    process.once('exit', forward.stop);
  }
  const url = forward && service ? `${service.scheme}://127.0.0.1:${forward.localPort}` : nats.url;
  try {
    const bus = await connectBus({
      servers: url,
      credentials: nats,
      tls: nats.tls,
      name,
      log,
      topology: topologyOptions(config.bus),
      mode: 'none',
      ...(service && { forwarded: { tlsServerName: service.host } }),
    });
    if (!forward) return { bus, log };
    const stop = forward.stop;
    // The client would reconnect for ever to a port nobody forwards any more: end the command.
    forward.onLost((output) => {
      const last = output.trim().split('\n').at(-1) ?? '';
      process.stderr.write(
        `the port-forward to ${service?.namespace}/${service?.service} ended (${last}): the bus is out of reach\n`,
      );
      process.exitCode = 1;
      // Its close can only fail as the forward did, which is said above.
      bus.close().catch(() => undefined);
    });
    return {
      bus: {
        ...bus,
        close: async () => {
          try {
            await bus.close();
          } finally {
            stop();
          }
        },
      },
      log,
    };
  } catch (err) {
    forward?.stop();
    const via = forward ? ` (through kubectl port-forward to ${service?.namespace}/${service?.service})` : '';
    process.stderr.write(`cannot reach the bus at ${nats.url}${via}: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
}
