import { ensureNatsCredentials, NATS_CREDENTIALS_SECRET } from '../access/nats-credentials-secret.ts';
import { ensureNatsServerCertificate, NATS_TLS_SECRET } from '../access/nats-server-certificate.ts';
import { loadConfig } from '../config/load.ts';
import { operatorNamespace } from '../handlers/operator-namespace.ts';
import { workerClients } from '../handlers/run-handler.ts';
import { createLogger } from '../runtime/logger.ts';

/**
 * `switchyard nats-credentials [--server-certificate]`: makes sure the NATS credentials Secret
 * holds a password for every component's user, in the namespace this runs in (the
 * `nats-credentials` Job); with `--server-certificate`, also the bundled server's certificate
 * (deploy/default's NATS; a NATS of the user's own brings its own).
 */
export async function runNatsCredentials(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const unknown = rest.filter((a) => a !== '--server-certificate');
  if (unknown.length > 0) throw new Error(`nats-credentials: unknown arguments ${unknown.join(' ')}`);
  const log = createLogger(config.log, 'nats-credentials');
  const clients = workerClients('nats-credentials', config);
  const namespace = operatorNamespace();
  try {
    const outcome = await ensureNatsCredentials(clients.writes, namespace);
    log.info({ secret: `${namespace}/${NATS_CREDENTIALS_SECRET}`, ...outcome }, 'NATS credentials in place');
    if (rest.includes('--server-certificate')) {
      const { recheckAtMs } = await ensureNatsServerCertificate(
        clients.writes,
        namespace,
        Date.now(),
        AbortSignal.timeout(60_000),
      );
      log.info(
        {
          secret: `${namespace}/${NATS_TLS_SECRET}`,
          renewAt: recheckAtMs && new Date(recheckAtMs).toISOString(),
        },
        'NATS server certificate in place',
      );
    }
  } finally {
    await clients.close();
  }
}
