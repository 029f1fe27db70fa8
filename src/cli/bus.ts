import { type Bus, connectBus } from '../bus/connect.ts';
import type { ConcernPlan } from '../bus/stats.ts';
import { topologyOptions } from '../bus/topology.ts';
import type { Config } from '../config/schema.ts';
import { createLogger } from '../runtime/logger.ts';
import { connectOperatorBus, loadOperatorConfig, type OperatorConfig } from './operator-bus.ts';
import { type OutputFormat, readOutputFlag, renderOutput } from './output.ts';

export const USAGE =
  'usage: switchyard bus <stats [-o table|json|yaml] | setup | authorization> [--nats.url=nats://…] [--nats.user=… --nats.passwordFile=…]\n' +
  '  stats: streams and handler concerns (backlog, in flight, retries, dead letters), read as the\n' +
  '  bus-setup user; exit 0, 1 when NATS cannot be read or a stream of the topology is missing, 2 on\n' +
  '  bad usage.\n' +
  "  setup: creates and updates every stream, and brings the pacers' slot buckets to bus.streamReplicas;\n" +
  '  exit 1, saying why, when NATS refuses it (e.g. 3 replicas on a server that is not clustered).\n';

/** `bus stats` flags: the output format. */
export function parseStatsArgs(flags: readonly string[]): { output: OutputFormat } {
  let output: OutputFormat = 'table';
  for (let i = 0; i < flags.length; i++) {
    const arg = flags[i] as string;
    const flag = readOutputFlag(flags, i);
    if (arg === '--json') output = 'json';
    else if (flag) {
      output = flag.format;
      i += flag.used - 1;
    } else throw new Error(`unknown argument ${arg}`);
  }
  return { output };
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
  let loaded: OperatorConfig;
  try {
    loaded = loadOperatorConfig(argv);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const { config, rest } = loaded;
  const [sub, ...flags] = rest;
  if (sub === 'authorization') {
    const { renderAuthorization } = await import('../access/nats-authorization.ts');
    process.stdout.write(renderAuthorization({ config }));
    return;
  }
  if (sub === 'stats') {
    await runStats(loaded, flags);
    return;
  }
  if (sub !== 'setup') {
    process.stderr.write(USAGE);
    process.exitCode = 2;
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

async function runStats(loaded: OperatorConfig, flags: readonly string[]): Promise<void> {
  const { config } = loaded;
  let args: { output: OutputFormat };
  try {
    args = parseStatsArgs(flags);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const { readBusReport, formatBusStats } = await import('../bus/stats.ts');
  const plans = await handlerConcernPlans(config);
  const connected = await connectOperatorBus(loaded, 'bus-stats', 'bus-setup');
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
