import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { busStats, formatBusStats } from '../bus/stats.ts';
import { topologyOptions } from '../bus/topology.ts';
import { loadConfig } from '../config/load.ts';

const USAGE = 'usage: switchyard bus <stats [--json] | setup> [--nats.url=nats://…]\n';

/**
 * `switchyard bus stats`: streams and consumers, their backlog and retries.
 * `switchyard bus setup`: applies the topology (its one owner; workers only verify it).
 */
export async function runBus(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const [sub, ...flags] = rest;
  if (sub !== 'stats' && sub !== 'setup') {
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  const log = pino({ level: config.log.level, name: 'bus' });
  const bus = await connectBus({
    servers: config.nats.url,
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
