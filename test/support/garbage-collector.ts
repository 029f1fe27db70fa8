import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, GROUP, VERSION } from '../../src/api/constants.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { systemClock } from '../../src/runtime/clock.ts';

const instanceApi = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
/** How long a probe's dependent may take to be collected for the collector to count as ready. */
const PROMPT_MS = 10_000;

/**
 * Resolves once the cluster's garbage collector collects the dependents of a deleted
 * ConversionWebhookServer promptly. It learns of a new owner kind on its discovery resync (30 s),
 * and a dependent whose owner it could not look up then waits out the collector's growing retries:
 * minutes, on a cluster started moments before its CRDs were installed. A test that follows a
 * deletion's order probes first: an owner is created, given a ConfigMap and deleted, again, until
 * one ConfigMap is collected within seconds. Run it before any handler that would render a probe.
 */
export async function untilInstancesAreCollected(kc: KubeConfig, namespace: string): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  let attempt = 0;
  await waitFor(
    'the garbage collector to collect what a deleted instance owned',
    async () => {
      attempt += 1;
      const name = `gc-probe-${Date.now().toString(36)}-${attempt}`;
      const owner = (await custom.createClusterCustomObject({
        ...instanceApi,
        body: {
          apiVersion: API_VERSION,
          kind: 'ConversionWebhookServer',
          metadata: { name },
          spec: { namespace, replicas: 0 },
        },
      })) as { metadata: { uid: string } };
      await core.createNamespacedConfigMap({
        namespace,
        body: {
          metadata: {
            name,
            ownerReferences: [
              { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', name, uid: owner.metadata.uid },
            ],
          },
        },
      });
      await custom.deleteClusterCustomObject({ ...instanceApi, name });
      const deadline = Date.now() + PROMPT_MS;
      while (Date.now() < deadline) {
        const left = await core.readNamespacedConfigMap({ name, namespace }).catch((err: unknown) => {
          if ((err as { code?: number }).code === 404) return undefined;
          throw err;
        });
        if (left === undefined) return true;
        await systemClock.sleep(250);
      }
      return undefined;
    },
    { timeoutMs: 180_000, intervalMs: 0 },
  );
}
