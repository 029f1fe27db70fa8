// Reading an instance's trust bundle for a target's caBundle: the `ca.crt` key of the instance's
// serving Secret (docs/instances.md), the bundle its replicas' certificates chain to, with an
// old CA kept in it while a rotation overlaps. Never the CA Secret: it holds the CA's key.
//
// The view records no Secrets (they would put key material on the bus), so this is one `get`
// of exactly that Secret on the writes client, made only when a patch is decided. The Secret's
// data is base64 already, the encoding caBundle takes, so the value is passed through untouched.
//
// The handover may read that Secret and no other: the instances handler renders, with the
// instance, a Role granting `get` on it by name, bound to the handover's ServiceAccount
// (core/instances/render.ts). Until that grant is applied (and reaches the apiserver's
// authorizer) the read is refused, which, like a Secret not written yet, is a reason to look
// again, not a failure.
import { servingCertSecretName } from '../../api/constants.ts';
import type { WritesClient } from '../../kube/clients.ts';
import { ignoreNotFound, isForbidden } from '../../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../../kube/request.ts';
import { objectPath } from '../../kube/writer.ts';
import type { TrustBundle, TrustBundleReader } from '../handover.ts';

const SECRETS = { apiVersion: 'v1', resource: 'secrets', namespaced: true } as const;
const TRUST_BUNDLE_KEY = 'ca.crt';

/**
 * How long a bundle read for one move serves the next moves to the same instance. A report often
 * releases many targets towards one instance at once: one read, not one per target. Short
 * against the CA change's trust overlap (core/instances/serving-cert.ts, 10 minutes): a move
 * that carries a bundle read just before a change is noticed by the instances handler once it
 * lands, and read again (`trust` work always reads), long before the leaf moves to the new CA.
 */
export const TRUST_BUNDLE_REUSE_MS = 10_000;

/**
 * `read`, reused for TRUST_BUNDLE_REUSE_MS per instance, one request at a time per instance (a
 * burst of moves waits for one read). Only a found bundle is kept: a missing one is looked for
 * again. `fresh` reads anew whatever is kept, and keeps the answer.
 */
export function reusedTrustBundles(
  read: TrustBundleReader,
  monotonic: () => number,
  reuseMs = TRUST_BUNDLE_REUSE_MS,
): TrustBundleReader {
  const kept = new Map<string, { bundle: TrustBundle; readAt: number }>();
  const reading = new Map<string, Promise<TrustBundle>>();
  return async (instance, namespace, signal, opts) => {
    const key = `${namespace}/${instance}`;
    const found = kept.get(key);
    if (!opts?.fresh && found && monotonic() - found.readAt < reuseMs) return found.bundle;
    const inFlight = reading.get(key);
    if (!opts?.fresh && inFlight) return inFlight;
    const readAt = monotonic();
    const request = read(instance, namespace, signal).then((bundle) => {
      if (bundle.kind === 'found') kept.set(key, { bundle, readAt });
      else kept.delete(key);
      return bundle;
    });
    reading.set(key, request);
    try {
      return await request;
    } finally {
      if (reading.get(key) === request) reading.delete(key);
    }
  };
}

export function trustBundleReader(writes: WritesClient): TrustBundleReader {
  return async (instance, namespace, signal): Promise<TrustBundle> => {
    const name = servingCertSecretName(instance);
    const path = objectPath(SECRETS, { namespace, name });
    let secret: { data?: Record<string, string> } | undefined;
    try {
      secret = await ignoreNotFound(
        sendForJson<{ data?: Record<string, string> }>(
          writes.kubeConfig,
          HttpMethod.GET,
          apiUrl(writes.kubeConfig, path),
          { signal },
        ),
      );
    } catch (err) {
      if (!isForbidden(err)) throw err;
      return {
        kind: 'unavailable',
        why: `reading Secret ${namespace}/${name} is forbidden (the instances handler grants it with the instance)`,
      };
    }
    if (secret === undefined) return { kind: 'unavailable', why: `no Secret ${namespace}/${name}` };
    const bundle = secret.data?.[TRUST_BUNDLE_KEY];
    if (bundle === undefined || bundle === '')
      return { kind: 'unavailable', why: `Secret ${namespace}/${name} has no ${TRUST_BUNDLE_KEY}` };
    return { kind: 'found', caBundle: bundle };
  };
}
