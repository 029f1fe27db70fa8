// The admission webhook configuration's trust, as the admission process keeps it: what each
// webhook's `caBundle` trusts now (the certificate decision waits on it before a serving
// certificate moves to a new CA), and the patch that publishes the bundle the serving Secret
// carries. Pure: the configuration in, facts or a JSON patch out; own-certificate.ts reads and
// writes.
import { readCertificates } from '../core/instances/certificate-facts.ts';

/** deploy/admission/webhook.yaml: the one configuration whose caBundle the process keeps. */
export const WEBHOOK_CONFIGURATION = 'switchyard-admission';

/** The fields of a ValidatingWebhookConfiguration read here. */
export interface WebhookConfiguration {
  metadata?: { resourceVersion?: string };
  webhooks?: { clientConfig?: { caBundle?: string } }[];
}

export type JsonPatchOp =
  | { op: 'replace'; path: string; value: string }
  | { op: 'add'; path: string; value: string };

/**
 * For each webhook, the fingerprints of the CA certificates its caBundle holds (none when it is
 * missing or does not parse: such a webhook trusts no CA of ours yet).
 */
export function publishedBundles(config: WebhookConfiguration | undefined): string[][] {
  return (config?.webhooks ?? []).map((w) => {
    const pem = Buffer.from(w.clientConfig?.caBundle ?? '', 'base64').toString('utf8');
    return (readCertificates(pem) ?? []).map((c) => c.fingerprint);
  });
}

/**
 * The JSON patch that sets every webhook's caBundle to `bundlePem`, or undefined when each
 * already holds exactly it (nothing to write: a steady state costs one read). The patch sets
 * `metadata.resourceVersion` to the version read, which the apiserver takes as a precondition
 * (409 when the configuration changed since): the webhook indexes in the paths are only those
 * of the version read, and another replica's newer bundle is never overwritten by an older one.
 */
export function caBundlePatch(config: WebhookConfiguration, bundlePem: string): JsonPatchOp[] | undefined {
  const resourceVersion = config.metadata?.resourceVersion;
  if (resourceVersion === undefined)
    throw new Error(`${WEBHOOK_CONFIGURATION} was read without a resourceVersion`);
  const wanted = Buffer.from(bundlePem).toString('base64');
  const stale = (config.webhooks ?? []).flatMap((w, i) =>
    w.clientConfig?.caBundle === wanted
      ? []
      : [{ op: 'add' as const, path: `/webhooks/${i}/clientConfig/caBundle`, value: wanted }],
  );
  if (stale.length === 0) return undefined;
  return [{ op: 'replace', path: '/metadata/resourceVersion', value: resourceVersion }, ...stale];
}
