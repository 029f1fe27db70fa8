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

export interface LiveConversion {
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
 * would change nothing is not sent (no write, no new resourceVersion, no watch event).
 */
export function conversionUpToDate(live: LiveConversion | undefined, desired: WebhookConversion): boolean {
  return sameConversion(live, desired);
}

/**
 * Whether two conversions send reviews to the same place the same way: strategy, Service (name,
 * namespace, path, port), URL, CA bundle and review versions. The apiserver defaults `port` to
 * 443, so an absent port is 443. How a generated CRD is compared with its XRD (core/routing.ts).
 */
export function sameConversion(a: LiveConversion | undefined, b: LiveConversion | undefined): boolean {
  const ac = a?.webhook?.clientConfig;
  const bc = b?.webhook?.clientConfig;
  return (
    a?.strategy === b?.strategy &&
    ac?.url === bc?.url &&
    ac?.service?.name === bc?.service?.name &&
    ac?.service?.namespace === bc?.service?.namespace &&
    ac?.service?.path === bc?.service?.path &&
    portOf(ac?.service) === portOf(bc?.service) &&
    ac?.caBundle === bc?.caBundle &&
    sameList(a?.webhook?.conversionReviewVersions, b?.webhook?.conversionReviewVersions)
  );
}

function portOf(service: { port?: number } | undefined): number | undefined {
  return service === undefined ? undefined : (service.port ?? WEBHOOK_SERVICE_PORT);
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
