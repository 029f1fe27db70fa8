import { pino } from 'pino';
import { connectBus } from '../bus/connect.ts';
import { kubectlPath, startLocalCluster } from '../local-cluster/cluster.ts';

/**
 * Brings the embedded local stack up, prints how to reach it, and keeps it
 * running until interrupted. Later stages of the roadmap grow this into the
 * full demo (a live move under load).
 */
export async function runDemo(): Promise<void> {
  const log = pino({ level: process.env.LOG_LEVEL ?? 'info', name: 'demo' });
  const started = performance.now();
  log.info(
    'starting the local cluster (etcd, kube-apiserver, kube-controller-manager, nats-server, node agent)',
  );
  const cluster = await startLocalCluster({ log });
  // What `switchyard bus setup` does in a cluster: the demo owns the local bus's topology.
  await (await connectBus({ servers: cluster.natsUrl, name: 'demo-setup', log, mode: 'apply' })).close();
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  process.stdout.write(
    [
      '',
      `Local cluster is up (${seconds} s). State and logs: ${cluster.dir}`,
      `  kube-apiserver   ${cluster.endpoint.server}`,
      `  admin            export KUBECONFIG=${cluster.kubeConfigs.admin}`,
      `  kubectl          alias kubectl=${kubectlPath()}`,
      `  NATS JetStream   ${cluster.natsUrl}   (monitoring ${cluster.natsMonitorUrl})`,
      `  audit log        ${cluster.auditLog}`,
      '',
      'Press Ctrl-C to stop and remove it.',
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  log.info('stopping');
  await cluster.stop();
}
