// What every end-to-end file starts from: a local cluster of its own, Switchyard installed from
// deploy/ (src/local-cluster/install.ts), and a HandoverWitness following its bus. The cluster's
// directory, every Pod's log with it, is kept when a test of the file failed, or when
// SWITCHYARD_KEEP_CLUSTER=1, and the file says where. Every component runs as its own NATS user;
// the file fails if nats-server refused any of them a subject.
import type { KubeConfig } from '@kubernetes/client-node';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { afterAll, afterEach } from 'vitest';
import { type LocalCluster, startLocalCluster } from '../../../src/local-cluster/cluster.ts';
import { installSwitchyard, SWITCHYARD_NAMESPACE } from '../../../src/local-cluster/install.ts';
import { HandoverWitness } from './handover-witness.ts';

export interface InstalledCluster {
  cluster: LocalCluster;
  admin: KubeConfig;
  witness: HandoverWitness;
}

/** Registers the teardown; call `start` in the file's beforeAll. */
export function useInstalledCluster(name: string, opts: { instances: readonly string[]; log: Logger }) {
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
    if (violations.length > 0)
      throw new Error(`nats-server refused components' requests:\n${violations.join('\n')}`);
  });
  return {
    async start(): Promise<InstalledCluster> {
      const cluster = await startLocalCluster({ log: opts.log });
      const admin = cluster.kubeConfigFor('admin');
      await installSwitchyard({
        admin,
        natsUrl: cluster.natsUrl,
        natsCredentialsDir: cluster.natsCredentialsDir,
        dir: cluster.dir,
        log: opts.log,
      });
      nc = await connect({ servers: cluster.natsUrl, name: `${name}-witness` });
      const witness = new HandoverWitness({
        namespace: SWITCHYARD_NAMESPACE,
        instances: opts.instances,
        log: opts.log,
      });
      await witness.start(jetstream(nc));
      installed = { cluster, admin, witness };
      return installed;
    },
  };
}
