// How an operator's command (`bus stats`, `explain`, `dlq`, `replay`) reaches the bus: as the
// NATS user its flags name, checking nothing of the topology, logging warnings to stderr so that
// stdout stays the command's answer. A bus that cannot be reached is exit code 1, said once.
import type { Logger } from 'pino';
import { type Bus, connectBus } from '../bus/connect.ts';
import { topologyOptions } from '../bus/topology.ts';
import type { Config } from '../config/schema.ts';
import { createLogger } from '../runtime/logger.ts';

export async function connectOperatorBus(
  config: Config,
  name: string,
): Promise<{ bus: Bus; log: Logger } | undefined> {
  const log = createLogger({ level: 'warn', format: config.log.format, fd: 2 }, name);
  try {
    const bus = await connectBus({
      servers: config.nats.url,
      credentials: config.nats,
      tls: config.nats.tls,
      name,
      log,
      topology: topologyOptions(config.bus),
      mode: 'none',
    });
    return { bus, log };
  } catch (err) {
    process.stderr.write(`cannot reach the bus at ${config.nats.url}: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return undefined;
  }
}
