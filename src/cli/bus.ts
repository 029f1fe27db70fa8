import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { busStats, formatBusStats } from '../bus/stats.ts';
import { topologyOptions } from '../bus/topology.ts';
import { loadConfig } from '../config/load.ts';

const USAGE = 'usage: switchyard bus <stats [--json] | setup | authorization> [--nats.url=nats://…]\n';

/**
 * `switchyard bus stats`: streams and consumers, their backlog and retries.
 * `switchyard bus setup`: applies the topology (its one owner; workers only verify it).
 * `switchyard bus authorization`: prints the nats-server `authorization` block of every
 * component's user for this configuration's partition counts (passwords from the server's
 * environment: docs/install.md); connects to nothing.
 */
export async function runBus(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const [sub, ...flags] = rest;
  if (sub === 'authorization') {
    const { renderAuthorization } = await import('../access/nats-authorization.ts');
    process.stdout.write(renderAuthorization({ config }));
    return;
  }
  if (sub !== 'stats' && sub !== 'setup') {
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  const log = pino({ level: config.log.level, name: 'bus' });
  const bus = await connectBus({
    servers: config.nats.url,
    credentials: config.nats,
    name: `bus-${sub}`,
    log,
    topology: topologyOptions(config.bus),
    mode: sub === 'setup' ? 'apply' : 'none',
  });
  try {
    if (sub === 'stats') {
      const stats = await busStats(bus.jsm);
      process.stdout.write(
        `${flags.includes('--json') ? JSON.stringify(stats, null, 2) : formatBusStats(stats)}\n`,
      );
    }
  } finally {
    await bus.close();
  }
}
