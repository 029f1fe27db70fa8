// What a target's spec.conversion says and what the handover makes it say. CRDs and Crossplane
// XRDs (apiextensions.crossplane.io/v1) carry the same field: the XRD's spec.conversion is the
// apiextensions/v1 CustomResourceConversion, so one builder and one reader serve both kinds and
// only the resource the patch goes to differs (the handler's target kinds).
import { WEBHOOK_SERVICE_PORT, webhookPath, webhookServiceName } from '../api/constants.ts';

export interface WebhookConversion {
  strategy: 'Webhook';
  webhook: {
    clientConfig: {
      service: { name: string; namespace: string; path: string; port: number };
      caBundle: string;
    };
    conversionReviewVersions: string[];
  };
}

export interface ConversionTarget {
  target: string;
  instance: string;
  /** The instance's namespace: where its Service runs. */
  namespace: string;
  /** Base64 of the PEM trust bundle, as a Secret's `data` holds it and the API field takes it. */
  caBundle: string;
  conversionReviewVersions: readonly string[];
}

/** The spec.conversion that sends the target's conversions to `/convert/<target>` on the instance's Service. */
export function desiredConversion(t: ConversionTarget): WebhookConversion {
  return {
    strategy: 'Webhook',
    webhook: {
      clientConfig: {
        service: {
          name: webhookServiceName(t.instance),
          namespace: t.namespace,
          path: webhookPath(t.target),
          port: WEBHOOK_SERVICE_PORT,
        },
        caBundle: t.caBundle,
      },
      conversionReviewVersions: [...t.conversionReviewVersions],
    },
  };
}

interface LiveConversion {
  strategy?: string;
  webhook?: {
    clientConfig?: {
      service?: { name?: string; namespace?: string; path?: string; port?: number };
      caBundle?: string;
      url?: string;
    };
    conversionReviewVersions?: string[];
  };
}

/** The live object's spec.conversion, as far as it has one. */
export function liveConversionOf(target: unknown): LiveConversion | undefined {
  return (target as { spec?: { conversion?: LiveConversion } } | undefined)?.spec?.conversion;
}

/**
 * The caBundle a target already publishes for the instance's Service, when the handover may keep
 * it instead of reading the instance's trust bundle: the live conversion names that Service (by
 * name and namespace) and carries a bundle. Undefined when the bundle must be read: a move, a
 * first apply, a Service in another namespace, none published yet. A bundle that went stale (a
 * CA rotation, a hand edit) is the instances handler's to notice: it compares every target naming
 * its Service with the serving Secret and wakes the handover to read it (`HandoverWork.trust`).
 */
export function keptCaBundleOf(live: unknown, instance: string, namespace: string): string | undefined {
  const clientConfig = liveConversionOf(live)?.webhook?.clientConfig;
  const service = clientConfig?.service;
  if (service?.name !== webhookServiceName(instance) || service.namespace !== namespace) return undefined;
  return clientConfig?.caBundle || undefined;
}

/** The Service a target's conversion webhook names; undefined when it names none (strategy None, or a URL). */
export function conversionServiceOf(target: unknown): string | undefined {
  return liveConversionOf(target)?.webhook?.clientConfig?.service?.name;
}

/**
 * Whether the live conversion already says everything the desired one does: an apply that
 * would change nothing is not sent (no write, no new resourceVersion, no watch event). The
 * apiserver defaults `port` to 443, so an absent port is 443.
 */
export function conversionUpToDate(live: LiveConversion | undefined, desired: WebhookConversion): boolean {
  const lc = live?.webhook?.clientConfig;
  const dc = desired.webhook.clientConfig;
  return (
    live?.strategy === desired.strategy &&
    lc?.url === undefined &&
    lc?.service?.name === dc.service.name &&
    lc.service.namespace === dc.service.namespace &&
    lc.service.path === dc.service.path &&
    (lc.service.port ?? WEBHOOK_SERVICE_PORT) === dc.service.port &&
    lc.caBundle === dc.caBundle &&
    sameList(live?.webhook?.conversionReviewVersions, desired.webhook.conversionReviewVersions)
  );
}

function sameList(a: readonly string[] | undefined, b: readonly string[]): boolean {
  return a !== undefined && a.length === b.length && a.every((v, i) => v === b[i]);
}
