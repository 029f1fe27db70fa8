import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { busStats, formatBusStats } from '../bus/stats.ts';
import { loadConfig } from '../config/load.ts';

/** `switchyard bus stats [--nats.url=…] [--json]`: streams and consumers, their backlog and retries. */
export async function runBus(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const [sub, ...flags] = rest;
  if (sub !== 'stats') {
    process.stderr.write('usage: switchyard bus stats [--nats.url=nats://…] [--json]\n');
    process.exitCode = 2;
    return;
  }
  const log = pino({ level: config.log.level, name: 'bus' });
  const bus = await connectBus({ servers: config.nats.url, name: 'bus-stats', log, applyTopology: false });
  try {
    const stats = await busStats(bus.jsm);
    process.stdout.write(
      `${flags.includes('--json') ? JSON.stringify(stats, null, 2) : formatBusStats(stats)}\n`,
    );
  } finally {
    await bus.close();
  }
}
