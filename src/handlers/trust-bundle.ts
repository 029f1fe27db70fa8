// Reading an instance's trust bundle for a target's caBundle: the `ca.crt` key of the instance's
// serving Secret (docs/instances.md), the bundle its replicas' certificates chain to, with an
// old CA kept in it while a rotation overlaps. Never the CA Secret: it holds the CA's key.
//
// The view records no Secrets (they would put key material on the bus), so this is one `get`
// of exactly that Secret on the writes client, made only when a patch is decided. The Secret's
// data is base64 already, the encoding caBundle takes, so the value is passed through untouched.
import { servingCertSecretName } from '../api/constants.ts';
import type { WritesClient } from '../kube/clients.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';
import { objectPath } from '../kube/writer.ts';
import type { TrustBundleReader } from './handover.ts';

const SECRETS = { apiVersion: 'v1', resource: 'secrets', namespaced: true } as const;
const TRUST_BUNDLE_KEY = 'ca.crt';

export function trustBundleReader(writes: WritesClient): TrustBundleReader {
  return async (instance, namespace, signal) => {
    const path = objectPath(SECRETS, { namespace, name: servingCertSecretName(instance) });
    const secret = await ignoreNotFound(
      sendForJson<{ data?: Record<string, string> }>(
        writes.kubeConfig,
        HttpMethod.GET,
        apiUrl(writes.kubeConfig, path),
        { signal },
      ),
    );
    const bundle = secret?.data?.[TRUST_BUNDLE_KEY];
    return bundle === undefined || bundle === '' ? undefined : bundle;
  };
}
