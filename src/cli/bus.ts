import { type Bus, connectBus } from '../bus/connect.ts';
import type { ConcernPlan } from '../bus/stats.ts';
import { topologyOptions } from '../bus/topology.ts';
import { type LoadedConfig, loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { createLogger } from '../runtime/logger.ts';
import {
  CLUSTER_OPTIONS,
  type ClusterFlags,
  clusterFlagsOf,
  OUTPUT_OPTIONS,
  parseCommandArgs,
  UsageError,
  usageText,
} from './args.ts';
import { connectOperatorBus } from './operator-bus.ts';
import { type OutputFormat, renderOutput } from './output.ts';

const STATS_OPTIONS = {
  ...OUTPUT_OPTIONS,
  json: { type: 'boolean', description: 'the same as -o json, its older spelling (-o wins)' },
  ...CLUSTER_OPTIONS,
} as const;

export const USAGE = usageText(
  'usage: switchyard bus <stats [options] | setup | authorization> [--nats.url=nats://…] [--nats.user=… --nats.passwordFile=…]\n' +
    '  stats: streams and handler concerns (backlog, in flight, retries, dead letters), read as the\n' +
    '  bus-setup user; exit 0, 1 when NATS cannot be read or a stream of the topology is missing, 2 on\n' +
    '  bad usage.\n' +
    "  setup: creates and updates every stream, and brings the pacers' slot buckets to bus.streamReplicas;\n" +
    '  exit 1, saying why, when NATS refuses it (e.g. 3 replicas on a server that is not clustered).\n' +
    '  authorization: prints the nats-server authorization block of every user; connects to nothing.\n',
  STATS_OPTIONS,
  'Options of bus stats',
);

interface StatsArgs extends ClusterFlags {
  output: OutputFormat;
}

type BusArgs = ({ command: 'stats' } & StatsArgs) | { command: 'setup' | 'authorization' };

/** `bus stats` flags: the output format, and where to find the bus. */
export function parseStatsArgs(flags: readonly string[]): StatsArgs {
  const { values } = parseCommandArgs('bus stats', flags, STATS_OPTIONS);
  return { output: values.output ?? (values.json ? 'json' : 'table'), ...clusterFlagsOf(values) };
}

/** The arguments after `bus` (configuration flags already taken out by `loadConfig`). */
function parseBusArgs(rest: readonly string[]): BusArgs {
  const [command, ...flags] = rest;
  if (command === 'stats') return { command, ...parseStatsArgs(flags) };
  if (command === 'setup' || command === 'authorization') {
    // They take no arguments of their own: a stray one is refused, not ignored.
    parseCommandArgs(`bus ${command}`, flags, {});
    return { command };
  }
  throw new UsageError(
    'bus',
    `${command === undefined ? 'name a command' : `unknown command ${command}`} (stats, setup, authorization)`,
  );
}

/**
 * The handler concerns as the processes run them, for `config`'s partition counts: each one's
 * name (its dead letters go to `dlq.<concern>`) and its consumer spec, from the handlers' own
 * exports. Loaded only for `bus stats` (the setup Job needs none of it).
 */
export async function handlerConcernPlans(config: Config): Promise<ConcernPlan[]> {
  const [router, assign, { ASSIGN_WORK }, pacer, resync, { CONCERNS }] = await Promise.all([
    import('../handlers/router.ts'),
    import('../handlers/assign.ts'),
    import('../handlers/assign/wakes.ts'),
    import('../bus/pacer/pacer.ts'),
    import('../handlers/resync.ts'),
    import('../handlers/concerns.ts'),
  ]);
  const { ASSIGN_PACER } = assign;
  const handlers = CONCERNS.flatMap((work) => [
    { concern: work.concern, consumers: work.consumers(config.bus.partitions[work.partitionsOf]) },
    // assign's fan-out pacer, which releases the configs an instance change reaches.
    ...(work === ASSIGN_WORK
      ? [{ concern: ASSIGN_PACER.concern, consumers: pacer.pacerConsumers(ASSIGN_PACER) }]
      : []),
  ]);
  // Each handler concern's resync pacer (`<concern>-resync`), which releases its resync rounds.
  const resyncPacers = CONCERNS.map(({ concern }) => {
    const spec = resync.resyncPacerOf(concern);
    return { concern: spec.concern, consumers: pacer.pacerConsumers(spec) };
  });
  return [
    // The router's runtime runs as concern `router`, its durable's name (`startRouter`).
    { concern: router.ROUTER_CONSUMER.durable, consumers: router.ROUTER_CONSUMER },
    ...handlers,
    ...resyncPacers,
  ];
}

/**
 * `switchyard bus stats`: streams and handler concerns, their backlog, retries and dead letters.
 * `switchyard bus setup`: applies the topology (its one owner; workers only verify it), the pacers'
 * slot buckets' replicas included.
 * `switchyard bus authorization`: prints the nats-server `authorization` block of every
 * component's user for this configuration's partition counts (passwords from the server's
 * environment: docs/install.md); connects to nothing.
 */
export async function runBus(argv: string[]): Promise<void> {
  let loaded: LoadedConfig;
  let args: BusArgs;
  try {
    loaded = loadConfig({ argv });
    args = parseBusArgs(loaded.rest);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const { config } = loaded;
  if (args.command === 'authorization') {
    const { renderAuthorization } = await import('../access/nats-authorization.ts');
    process.stdout.write(renderAuthorization({ config }));
    return;
  }
  if (args.command === 'stats') {
    await runStats(loaded, args);
    return;
  }
  const log = createLogger(config.log, 'bus');
  const { PACER_BUCKETS } = await import('../handlers/pacer-buckets.ts');
  let bus: Bus;
  try {
    bus = await connectBus({
      servers: config.nats.url,
      credentials: config.nats,
      tls: config.nats.tls,
      name: 'bus-setup',
      log,
      topology: topologyOptions(config.bus),
      mode: 'apply',
      buckets: PACER_BUCKETS,
    });
  } catch (err) {
    // Said once, without a stack: what the server refused and what to do (e.g. replicas it cannot place).
    process.stderr.write(`cannot apply the bus topology at ${config.nats.url}: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  await bus.close();
}

async function runStats(loaded: LoadedConfig, args: StatsArgs): Promise<void> {
  const { config } = loaded;
  const { readBusReport, formatBusStats } = await import('../bus/stats.ts');
  const plans = await handlerConcernPlans(config);
  const connected = await connectOperatorBus(loaded, args, 'bus-stats', 'bus-setup');
  if (!connected) return;
  const { bus } = connected;
  try {
    const report = await readBusReport(bus.jsm, plans);
    process.stdout.write(renderOutput(args.output, report, () => `${formatBusStats(report)}\n`));
    if (report.missingStreams.length > 0) {
      process.stderr.write(
        `streams missing: ${report.missingStreams.join(', ')}; the topology is applied by \`switchyard bus setup\`\n`,
      );
      process.exitCode = 1;
    }
  } catch (err) {
    process.stderr.write(`cannot read the bus at ${config.nats.url}: ${(err as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await bus.close();
  }
}
