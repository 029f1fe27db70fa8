import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { type LocalCluster, startLocalCluster } from '../../src/local-cluster/cluster.ts';
import { applyBusTopology } from './bus.ts';
import { FAILED_MARKER, UNCACHED_TEST_RESOURCE } from './local-cluster.ts';

/**
 * One local cluster for the whole integration run: its warm start is a few
 * seconds, but each test file isolates itself in its own namespaces. The
 * cluster's directory (logs included) is kept when any test failed.
 */
export default async function setup(project: TestProject) {
  const started = performance.now();
  const cluster: LocalCluster = await startLocalCluster({
    // The watcher test forces 410 Gone by compacting etcd under a resource
    // whose watches bypass the watch cache.
    extraApiServerArgs: [`--watch-cache-sizes=${UNCACHED_TEST_RESOURCE}#0`],
  });
  await applyBusTopology(cluster);
  process.stderr.write(
    `[local-cluster] up in ${((performance.now() - started) / 1000).toFixed(1)} s at ${cluster.dir}\n`,
  );
  project.provide('localCluster', {
    dir: cluster.dir,
    endpoint: cluster.endpoint,
    kubeConfigs: cluster.kubeConfigs,
    auditLog: cluster.auditLog,
    etcdUrl: cluster.etcdUrl,
    natsUrl: cluster.natsUrl,
    natsCaFile: cluster.natsCaFile,
    natsMonitorUrl: cluster.natsMonitorUrl,
    natsCredentialsDir: cluster.natsCredentialsDir,
  });
  return async () => {
    // A component run on the shared bus used a subject its NATS user may not: its role is wrong.
    const violations = await cluster.natsPermissionViolations();
    if (violations.length > 0) await writeFile(join(cluster.dir, FAILED_MARKER), '');
    const failed = existsSync(join(cluster.dir, FAILED_MARKER));
    await cluster.stop({ keepDir: failed });
    if (failed) process.stderr.write(`[local-cluster] a test failed: logs kept in ${cluster.dir}/logs\n`);
    if (violations.length > 0)
      throw new Error(`nats-server refused components' requests:\n${violations.join('\n')}`);
  };
}
