import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type NatsPermissionsMode, renderAuthorization } from '../access/nats-authorization.ts';
import { newNatsPassword } from '../access/nats-credentials-secret.ts';
import { NATS_IDENTITIES, type NatsIdentity } from '../access/nats-permissions.ts';
import { defaultConfig } from '../config/schema.ts';

/**
 * The local stack's NATS users: one per component, with the permissions a
 * cluster's server gives it (`src/access/`), and passwords made at start, one
 * file per user in `<dir>/nats-credentials/` (what a Pod mounts from the
 * credentials Secret). Connections without credentials act as `admin`, with
 * every permission: the tests' and the demo's own clients, never a component.
 */
export interface LocalNatsCredentials {
  dir: string;
  passwords: Record<NatsIdentity, string>;
  /** The server configuration that declares them, with the permissions deploy/ gives them. */
  authorization: string;
  /** The same users and passwords, permissions scoped or open (`NatsPermissionsMode`). */
  authorizationWith(permissions: NatsPermissionsMode): string;
}

export const LOCAL_NATS_ADMIN = 'admin';

export async function makeLocalNatsCredentials(clusterDir: string): Promise<LocalNatsCredentials> {
  const dir = join(clusterDir, 'nats-credentials');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const passwords = Object.fromEntries(NATS_IDENTITIES.map((id) => [id, newNatsPassword()])) as Record<
    NatsIdentity,
    string
  >;
  for (const id of NATS_IDENTITIES) await writeFile(join(dir, id), passwords[id], { mode: 0o600 });
  const admin = { user: LOCAL_NATS_ADMIN, password: newNatsPassword() };
  const authorizationWith = (permissions: NatsPermissionsMode) =>
    renderAuthorization({
      config: defaultConfig(),
      password: (id) => ({ literal: passwords[id] }),
      admin,
      permissions,
    });
  return { dir, passwords, authorization: authorizationWith('scoped'), authorizationWith };
}

/** The flags that make `switchyard <subcommand>` connect as its component's user. */
export function natsCredentialFlags(credentialsDir: string, identity: NatsIdentity): string[] {
  return [`--nats.user=${identity}`, `--nats.passwordFile=${join(credentialsDir, identity)}`];
}
