import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterEach, inject } from 'vitest';
import type { LocalClusterInfo } from '../../src/local-cluster/cluster.ts';
import type { StaticIdentityName } from '../../src/local-cluster/identities.ts';
import { type KubectlOptions, type KubectlResult, runKubectl } from '../../src/local-cluster/kubectl.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    localCluster: LocalClusterInfo;
  }
}

export const FAILED_MARKER = 'A_TEST_FAILED';

/** A test-only resource served without a watch cache (see global-setup). */
export const UNCACHED_TEST_RESOURCE = 'gadgets.watch.switchyard.dev';

/** The run's local cluster; marks it to keep its logs when a test of the calling file fails. */
export function useLocalCluster() {
  const info = inject('localCluster');
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') writeFileSync(join(info.dir, FAILED_MARKER), ctx.task.name);
  });
  return {
    info,
    kubeConfig(identity: StaticIdentityName = 'admin'): KubeConfig {
      const kc = new KubeConfig();
      kc.loadFromFile(info.kubeConfigs[identity]);
      return kc;
    },
    /** The built kubectl against the run's cluster, as `identity`. */
    kubectl(
      args: string[],
      opts: KubectlOptions & { identity?: StaticIdentityName } = {},
    ): Promise<KubectlResult> {
      return runKubectl(info.kubeConfigs[opts.identity ?? 'admin'], args, opts);
    },
  };
}

/** A fresh namespace for one test file, deleted afterwards by the caller. */
export async function createNamespace(kc: KubeConfig, prefix: string): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const ns = await core.createNamespace({ body: { metadata: { generateName: `${prefix}-` } } });
  return ns.metadata?.name ?? '';
}
