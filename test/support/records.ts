import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { DeliverPolicy, type JetStreamClient, jetstreamManager, type StoredMsg } from '@nats-io/jetstream';
import { API_VERSION, GROUP, VERSION } from '../../src/api/constants.ts';
import { decodeMessage, objectEventSchema } from '../../src/bus/messages.ts';
import { STREAMS } from '../../src/bus/topology.ts';
import { isNotFound } from '../../src/kube/errors.ts';
import type { LocalNatsAddress } from '../../src/local-cluster/nats-client.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { connectNats } from './nats.ts';

const WEBHOOK_SERVERS = { group: GROUP, version: VERSION, plural: 'conversionwebhookservers' };
const CONFIGS = { group: GROUP, version: VERSION, plural: 'crdconversionconfigs' };

export async function createWebhookServer(kc: KubeConfig, name: string, spec: object = {}): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    ...WEBHOOK_SERVERS,
    body: { apiVersion: API_VERSION, kind: 'ConversionWebhookServer', metadata: { name }, spec },
  });
}

export async function createConversionConfig(kc: KubeConfig, name: string, spec: object): Promise<void> {
  await kc.makeApiClient(CustomObjectsApi).createClusterCustomObject({
    ...CONFIGS,
    body: { apiVersion: API_VERSION, kind: 'CRDConversionConfig', metadata: { name }, spec },
  });
}

/** Deletes a CRDConversionConfig a test created, if it is still there. */
export async function deleteConversionConfig(kc: KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(CustomObjectsApi)
    .deleteClusterCustomObject({ ...CONFIGS, name })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}

/**
 * Waits for a record on `subject` in the record stream, then, after `settleMs`
 * for late duplicates to arrive, returns the last one and how many are stored.
 */
export async function awaitRecord(
  nats: LocalNatsAddress,
  subject: string,
  settleMs = 0,
): Promise<{ last: StoredMsg; stored: number }> {
  const nc = await connectNats(nats);
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
    .deleteClusterCustomObject({ ...WEBHOOK_SERVERS, name })
    .catch((err: unknown) => {
      if (!isNotFound(err)) throw err;
    });
}

/**
 * The end of a test file that ran an instances handler: the instance is deleted, and once its
 * handler no longer runs, its finalizer is removed. The cluster is shared by every later file,
 * and an instance left terminating there is picked up by each of their instances handlers (a
 * deletion they cannot finish, retried on its partition ahead of their own instances).
 */
export async function releaseWebhookServer(kc: KubeConfig, name: string): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const ignoreNotFound = (err: unknown) => {
    if (!isNotFound(err)) throw err;
  };
  await custom
    .patchClusterCustomObject(
      { ...WEBHOOK_SERVERS, name, body: { metadata: { finalizers: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )
    .catch(ignoreNotFound);
  await deleteWebhookServer(kc, name);
}

/** A recorded target (CRD or XRD) or Lease, as the K8S stream holds it. */
export interface TargetRecord {
  seq: number;
  /** When the bus stored it (epoch ms). */
  atMs: number;
  kind: string;
  name: string;
  /** For a target: the Service its spec.conversion names. */
  service?: string;
}

/**
 * Follows the upserts of `kinds` (e.g. `crd`, `lease`) on the record stream into `into`, from
 * now on or from the start; returns the stop. How a scenario checks what the cluster said, in
 * the order it said it, against the stream itself.
 */
export async function followTargetRecords(
  js: JetStreamClient,
  kinds: readonly string[],
  into: TargetRecord[],
  from: 'new' | 'all' = 'new',
): Promise<() => void> {
  const consumer = await js.consumers.get(STREAMS.records, {
    filter_subjects: kinds.map((k) => `k8s.${k}.>`),
    deliver_policy: from === 'new' ? DeliverPolicy.New : DeliverPolicy.All,
  });
  const messages = await consumer.consume();
  void (async () => {
    for await (const m of messages) {
      const decoded = decodeMessage(objectEventSchema, m.data);
      if (!decoded.ok || decoded.value.op !== 'upsert') continue;
      const o = decoded.value.object as {
        metadata: { name: string };
        spec?: { conversion?: { webhook?: { clientConfig?: { service?: { name?: string } } } } };
      };
      const kind = m.subject.split('.')[1] ?? '';
      into.push({
        seq: m.seq,
        atMs: m.info.timestampNanos / 1e6,
        kind,
        name: o.metadata.name,
        service: kind === 'lease' ? undefined : o.spec?.conversion?.webhook?.clientConfig?.service?.name,
      });
    }
  })();
  return () => void messages.stop();
}
