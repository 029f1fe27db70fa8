// What every end-to-end file starts from: a local cluster of its own, Switchyard installed from
// deploy/ (src/local-cluster/install.ts), and a HandoverWitness following its bus. The cluster's
// directory, every Pod's log with it, is kept when a test of the file failed, or when
// SWITCHYARD_KEEP_CLUSTER=1, and the file says where. Every component runs as its own NATS user;
// the file fails if nats-server refused any of them a subject.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { type LocalCluster, startLocalCluster } from '../../../src/local-cluster/cluster.ts';
import { installSwitchyard, SWITCHYARD_NAMESPACE } from '../../../src/local-cluster/install.ts';
import { natsConnectOptions } from '../../../src/local-cluster/nats-client.ts';
import { HandoverWitness } from './handover-witness.ts';

export interface InstalledCluster {
  cluster: LocalCluster;
  admin: KubeConfig;
  witness: HandoverWitness;
}

/**
 * The kube-apiserver's and etcd's warnings and errors (klog's W/E/F lines, panics), the last 30
 * of each: whether the control plane dropped or refused what a failed test saw fail.
 */
async function controlPlaneComplaints(dir: string, name: string): Promise<string> {
  const sections: string[] = [];
  for (const file of ['kube-apiserver.log', 'etcd.log']) {
    const text = await readFile(join(dir, 'logs', file), 'utf8').catch(() => '');
    const complaints = text
      .split('\n')
      .filter(
        (line) =>
          /^[EFW]\d{4} |panic|"level":"(warn|error|fatal)"/.test(line) &&
          !/rejected by webhook|slow openapi/.test(line),
      )
      .slice(-30)
      .map((line) => `  ${line.slice(0, 400)}`);
    sections.push(`${file}:\n${complaints.join('\n') || '  (none)'}`);
  }
  return `[${name}] the control plane's last warnings and errors:\n${sections.join('\n')}\n`;
}

/** Registers the teardown; call `start` in the file's beforeAll. */
export function useInstalledCluster(
  name: string,
  opts: { instances: readonly string[]; log: Logger; natsCluster?: boolean },
) {
  let installed: InstalledCluster | undefined;
  let nc: NatsConnection | undefined;
  let failed = false;
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') failed = true;
  });
  afterAll(async () => {
    installed?.witness.stop();
    await nc?.close();
    if (!installed) return;
    // Every component ran as its own NATS user: a refused subject means a role misses one.
    const violations = await installed.cluster.natsPermissionViolations();
    const keep = failed || violations.length > 0 || process.env.SWITCHYARD_KEEP_CLUSTER === '1';
    await installed.cluster.stop({ keepDir: keep });
    if (keep) process.stderr.write(`[${name}] logs kept in ${installed.cluster.dir}\n`);
    // CI keeps no directory: what the control plane complained of goes into the run's output.
    if (failed) process.stderr.write(await controlPlaneComplaints(installed.cluster.dir, name));
    if (violations.length > 0)
      throw new Error(`nats-server refused components' requests:\n${violations.join('\n')}`);
  });
  return {
    async start(): Promise<InstalledCluster> {
      ({ installed, nc } = await startInstalledCluster(name, opts));
      return installed;
    },
  };
}

/**
 * A local cluster of its own, Switchyard installed from deploy/, and a HandoverWitness following
 * its bus (reconnecting for as long as it takes: the chaos suite kills and freezes nats-server).
 * The caller stops the witness, closes `nc` and stops the cluster.
 */
export async function startInstalledCluster(
  name: string,
  opts: { instances: readonly string[]; log: Logger; natsCluster?: boolean },
): Promise<{ installed: InstalledCluster; nc: NatsConnection }> {
  const cluster = await startLocalCluster({ log: opts.log, natsCluster: opts.natsCluster ?? false });
  const admin = cluster.kubeConfigFor('admin');
  await installSwitchyard({
    admin,
    natsUrl: cluster.natsUrl,
    natsCaFile: cluster.natsCaFile,
    natsCredentialsDir: cluster.natsCredentialsDir,
    ...(opts.natsCluster ? { streamReplicas: 3 as const } : {}),
    log: opts.log,
  });
  const nc = await connect({
    ...natsConnectOptions(cluster),
    name: `${name}-witness`,
    maxReconnectAttempts: -1,
  });
  const witness = new HandoverWitness({
    namespace: SWITCHYARD_NAMESPACE,
    instances: opts.instances,
    log: opts.log,
  });
  await witness.start(jetstream(nc));
  return { installed: { cluster, admin, witness }, nc };
}
