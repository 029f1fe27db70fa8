import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { jetstreamManager, type StoredMsg } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { API_VERSION, GROUP, VERSION } from '../../src/api/constants.ts';
import { STREAMS } from '../../src/bus/topology.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';

export async function createWebhookServer(kc: KubeConfig, name: string): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    group: GROUP,
    version: VERSION,
    plural: 'conversionwebhookservers',
    body: { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', metadata: { name }, spec: {} },
  });
}

/**
 * Waits for a record on `subject` in the record stream, then, after `settleMs`
 * for late duplicates to arrive, returns the last one and how many are stored.
 */
export async function awaitRecord(
  natsUrl: string,
  subject: string,
  settleMs = 0,
): Promise<{ last: StoredMsg; stored: number }> {
  const nc = await connect({ servers: natsUrl });
  try {
    const jsm = await jetstreamManager(nc);
    await waitFor(
      `a record on ${subject}`,
      async () => (await jsm.streams.getMessage(STREAMS.records, { last_by_subj: subject })) ?? undefined,
      { timeoutMs: 30_000 },
    );
    await new Promise((r) => setTimeout(r, settleMs));
    const last = await jsm.streams.getMessage(STREAMS.records, { last_by_subj: subject });
    const info = await jsm.streams.info(STREAMS.records, { subjects_filter: subject });
    if (!last) throw new Error(`the record on ${subject} disappeared`);
    return { last, stored: info.state.subjects?.[subject] ?? 0 };
  } finally {
    await nc.close();
  }
}

/** Deletes a ConversionWebhookServer a test created (later files share the cluster, and its handlers would reconcile it). */
export async function deleteWebhookServer(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CustomObjectsApi)
    .deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: 'conversionwebhookservers', name })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}
