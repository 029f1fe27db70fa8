import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { childEnv } from './control-plane.ts';
import { freePort } from './free-port.ts';
import { ManagedProcess } from './managed-process.ts';
import { waitFor } from './wait.ts';

export interface NatsServer {
  url: string;
  monitorUrl: string;
  process: ManagedProcess;
}

/**
 * nats-server (Debian's, 2.9.10 on the reference machine) with JetStream on a
 * file store inside the cluster's directory and the HTTP monitoring port on.
 * `extraConfig` is appended to the generated configuration (accounts, users).
 */
export async function startNats(dir: string, log: Logger, extraConfig = ''): Promise<NatsServer> {
  const [port, httpPort] = [await freePort(), await freePort()];
  const storeDir = join(dir, 'jetstream');
  await mkdir(storeDir, { recursive: true });
  const configFile = join(dir, 'nats.conf');
  await writeFile(
    configFile,
    [
      `listen: "127.0.0.1:${port}"`,
      `http: "127.0.0.1:${httpPort}"`,
      `server_name: "switchyard-local"`,
      `jetstream { store_dir: "${storeDir}", max_memory_store: 256MB, max_file_store: 2GB }`,
      extraConfig,
    ].join('\n'),
  );
  const process = new ManagedProcess(
    {
      name: 'nats-server',
      command: 'nats-server',
      args: ['-c', configFile],
      env: childEnv(),
      logFile: join(dir, 'logs', 'nats-server.log'),
    },
    log,
  );
  const monitorUrl = `http://127.0.0.1:${httpPort}`;
  await waitFor('nats-server with JetStream to be healthy', async () => {
    if (!process.running) throw new Error(`nats-server exited; see ${process.logFile}`);
    const res = await fetch(`${monitorUrl}/healthz?js-enabled-only=true`);
    return res.ok ? true : undefined;
  });
  return { url: `nats://127.0.0.1:${port}`, monitorUrl, process };
}
