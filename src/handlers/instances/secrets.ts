// The instance's two certificate Secrets, read and written by the instances handler alone.
//
// Secrets are never recorded on the bus (key material would sit in the streams), so the handler
// reads exactly these two by name with its writes client: one `get` each per run. Writes are
// server-side applies, conditional on the version read when the Secret existed: the content is
// freshly issued key material, not a function of the instance, so a stale attempt must not
// replace what a newer one issued (it gets 409 and retries over the newer Secret).
import type { V1Secret } from '@kubernetes/client-node';
import type { WritesClient } from '../../kube/clients.ts';
import { ignoreNotFound } from '../../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../../kube/request.ts';
import { type KubeWriter, objectPath, type ResourceRef } from '../../kube/writer.ts';

export const SECRETS: ResourceRef = { apiVersion: 'v1', resource: 'secrets', namespaced: true };

/** A Secret's data, decoded, and the version it was read at. */
export interface SecretRead {
  data: Record<string, string>;
  resourceVersion: string | undefined;
}

export type SecretReader = (
  namespace: string,
  name: string,
  signal: AbortSignal,
) => Promise<SecretRead | undefined>;

export function secretReader(writes: WritesClient): SecretReader {
  return async (namespace, name, signal) => {
    const path = objectPath(SECRETS, { namespace, name });
    const secret = await ignoreNotFound(
      sendForJson<V1Secret>(writes.kubeConfig, HttpMethod.GET, apiUrl(writes.kubeConfig, path), { signal }),
    );
    if (secret === undefined) return undefined;
    const data = Object.fromEntries(
      Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    return { data, resourceVersion: secret.metadata?.resourceVersion };
  };
}

/** The rendered Secret with `data` (plain text, encoded here), applied on the version read. */
export function writeSecret(
  writer: Pick<KubeWriter, 'apply'>,
  shape: V1Secret,
  data: Record<string, string>,
  read: SecretRead | undefined,
  signal: AbortSignal,
): Promise<V1Secret> {
  const encoded = Object.fromEntries(
    Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  );
  return writer.apply(
    SECRETS,
    { ...shape, data: encoded },
    {
      signal,
      ...(read?.resourceVersion !== undefined && { resourceVersion: read.resourceVersion }),
    },
  );
}
