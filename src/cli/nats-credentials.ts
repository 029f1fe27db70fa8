import { pino } from 'pino';
import { ensureNatsCredentials, NATS_CREDENTIALS_SECRET } from '../access/nats-credentials-secret.ts';
import { loadConfig } from '../config/load.ts';
import { operatorNamespace } from '../handlers/operator-namespace.ts';
import { workerClients } from '../handlers/run-handler.ts';

/**
 * `switchyard nats-credentials`: makes sure the NATS credentials Secret holds a password for
 * every component's user, in the namespace this runs in (the `nats-credentials` Job).
 */
export async function runNatsCredentials(argv: string[]): Promise<void> {
  const { config } = loadConfig({ argv });
  const log = pino({ level: config.log.level, name: 'nats-credentials' });
  const clients = workerClients('nats-credentials', config);
  const namespace = operatorNamespace();
  try {
    const outcome = await ensureNatsCredentials(clients.writes, namespace);
    log.info({ secret: `${namespace}/${NATS_CREDENTIALS_SECRET}`, ...outcome }, 'NATS credentials in place');
  } finally {
    await clients.close();
  }
}
