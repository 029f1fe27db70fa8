import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { natsIdentityOf } from '../../src/access/nats-permissions.ts';
import { PROJECT_ROOT } from '../../src/local-cluster/cluster.ts';
import { ManagedProcess } from '../../src/local-cluster/managed-process.ts';
import { natsFlags } from '../../src/local-cluster/nats-client.ts';
import { natsCredentialFlags } from '../../src/local-cluster/nats-credentials.ts';
import { hostPortVariable } from '../../src/local-cluster/node-agent/pod-env.ts';
import { HEALTH_PORT } from '../../src/runtime/health-server.ts';

/** A process a test started (`switchyardProcess`, a fixture script): stopped, killed or awaited by the test. */
export type { ManagedProcess };

/**
 * The test's environment as a Switchyard process's: without the harness's own choice of where
 * NATS runs (SWITCHYARD_NATS_BACKEND reads as a mistyped `nats.*` key to the configuration).
 */
function processEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const { SWITCHYARD_NATS_BACKEND: _harness, ...env } = process.env;
  return { ...env, ...extra };
}

/**
 * `switchyard <args>` as its own process, as a Pod runs it: on `natsUrl`, as the identity of
 * `kubeconfig` (none: no Kubernetes access at all, as the router has), logging to `logFile`.
 */
export function switchyardProcess(opts: {
  name: string;
  args: string[];
  natsUrl: string;
  /** The CA of a NATS that requires TLS (`LocalClusterInfo.natsCaFile`): it verifies the server. */
  natsCaFile?: string | undefined;
  kubeconfig?: string | undefined;
  logFile: string;
  log: Logger;
  /** More environment, as a Pod's spec gives it (the downward API's POD_NAME, …). */
  env?: Record<string, string>;
  /** The local stack's NATS users (`LocalClusterInfo.natsCredentialsDir`): it connects as its component's. */
  natsCredentialsDir?: string;
}): ManagedProcess {
  // Its probes on any free port: several workers run side by side on the host.
  const env = processEnv({
    SWITCHYARD_LOG_LEVEL: 'info',
    [hostPortVariable(HEALTH_PORT)]: '0',
    ...opts.env,
  });
  if (opts.kubeconfig) env.KUBECONFIG = opts.kubeconfig;
  else delete env.KUBECONFIG;
  return new ManagedProcess(
    {
      name: opts.name,
      command: process.execPath,
      args: [
        join(PROJECT_ROOT, 'src/cli/main.ts'),
        ...opts.args,
        ...natsFlags(opts),
        ...(opts.natsCredentialsDir
          ? natsCredentialFlags(opts.natsCredentialsDir, natsIdentityOf(opts.args))
          : []),
      ],
      env,
      logFile: opts.logFile,
    },
    opts.log,
  );
}

/** `switchyard <args>` run to its end, as an operator runs the CLI: its exit code and output. */
export function runSwitchyard(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(PROJECT_ROOT, 'src/cli/main.ts'), ...args],
      { env: processEnv(env), maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}
