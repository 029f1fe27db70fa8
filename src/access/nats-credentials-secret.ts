/**
 * The Secret holding every component's NATS password, one key per user
 * (`switchyard-nats-credentials` in the operator's namespace). The
 * `nats-credentials` Job makes it: it creates the Secret when missing and adds
 * a password for a user that has none (an upgrade that brings a new
 * component), and never changes an existing one. The NATS server reads every
 * user's key (deploy/nats); each component mounts its own. One key is no NATS
 * user's: `monitor`, the HTTP Basic password of deploy/nats's monitoring gate
 * (src/nats-pod/monitor-gate.ts), which mounts it alone.
 */
import { randomBytes } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import type { WritesClient } from '../kube/clients.ts';
import { isConflict, isNotFound } from '../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';
import { NATS_IDENTITIES, type NatsIdentity } from './nats-permissions.ts';

export const NATS_CREDENTIALS_SECRET = 'switchyard-nats-credentials';
/** The monitoring gate's password: a key of the same Secret, made and kept as the users' are. */
export const MONITOR_PASSWORD_KEY = 'monitor';
/** Every key the Secret holds: a password per NATS user, and the monitoring gate's. */
export const CREDENTIAL_KEYS = [...NATS_IDENTITIES, MONITOR_PASSWORD_KEY] as const;
export type CredentialKey = NatsIdentity | typeof MONITOR_PASSWORD_KEY;

/** 144 random bits, URL-safe: no quoting in a nats-server configuration or an environment variable. */
export function newNatsPassword(): string {
  return randomBytes(18).toString('base64url');
}

/** A password for every key the Secret lacks; the ones it has stay. */
export function missingPasswords(
  existing: Readonly<Record<string, string>>,
  make: () => string = newNatsPassword,
): Partial<Record<CredentialKey, string>> {
  return Object.fromEntries(CREDENTIAL_KEYS.filter((id) => !existing[id]).map((id) => [id, make()]));
}

function encoded(data: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
}

export type CredentialsOutcome =
  | { created: CredentialKey[] }
  | { added: CredentialKey[] }
  | { unchanged: true };

/**
 * Creates the Secret, or adds the missing users' passwords on the version read (a concurrent
 * writer's change wins: 409, read again).
 */
export async function ensureNatsCredentials(
  writes: WritesClient,
  namespace: string,
  passwords: (existing: Readonly<Record<string, string>>) => Partial<Record<CredentialKey, string>> = (e) =>
    missingPasswords(e),
): Promise<CredentialsOutcome> {
  const kc = writes.kubeConfig;
  const path = `/api/v1/namespaces/${namespace}/secrets`;
  for (;;) {
    const current = await sendForJson<V1Secret>(
      kc,
      HttpMethod.GET,
      apiUrl(kc, `${path}/${NATS_CREDENTIALS_SECRET}`),
    ).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    const existing = Object.fromEntries(
      Object.entries(current?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    );
    const added = passwords(existing) as Record<string, string>;
    const users = Object.keys(added) as CredentialKey[];
    if (users.length === 0) return { unchanged: true };
    try {
      if (current === undefined) {
        await sendForJson(kc, HttpMethod.POST, apiUrl(kc, path), {
          contentType: 'application/json',
          body: {
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: {
              name: NATS_CREDENTIALS_SECRET,
              namespace,
              labels: { 'app.kubernetes.io/part-of': 'switchyard', 'app.kubernetes.io/component': 'nats' },
            },
            type: 'Opaque',
            data: encoded(added),
          },
        });
        return { created: users };
      }
      await sendForJson(kc, HttpMethod.PATCH, apiUrl(kc, `${path}/${NATS_CREDENTIALS_SECRET}`), {
        contentType: 'application/merge-patch+json',
        body: { metadata: { resourceVersion: current.metadata?.resourceVersion }, data: encoded(added) },
      });
      return { added: users };
    } catch (err) {
      // Another writer got there first (409: created it, or changed it since the read): read again.
      if (isConflict(err)) continue;
      throw err;
    }
  }
}
