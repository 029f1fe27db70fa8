import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';

/**
 * Static-token identities of the local cluster. Product components do not use
 * these: they run as ServiceAccounts with tokens from the TokenRequest API, as in
 * a real cluster (see `kubeConfigForServiceAccount`). These are the cluster's own
 * infrastructure, the admin used by tests, and `nobody`, an authenticated user
 * with no RBAC grants at all, for negative tests.
 */
export interface StaticIdentity {
  user: string;
  groups: string[];
  token: string;
}

export type StaticIdentityName = 'admin' | 'controllerManager' | 'nodeAgent' | 'nobody';

export type StaticIdentities = Record<StaticIdentityName, StaticIdentity>;

function token(): string {
  return randomBytes(24).toString('hex');
}

export function makeStaticIdentities(): StaticIdentities {
  return {
    admin: { user: 'switchyard:admin', groups: ['system:masters'], token: token() },
    // The controller manager runs every controller under its own identity
    // (no per-controller ServiceAccounts), which needs the superuser group.
    controllerManager: { user: 'system:kube-controller-manager', groups: ['system:masters'], token: token() },
    nodeAgent: { user: 'switchyard:local-node-agent', groups: [], token: token() },
    nobody: { user: 'switchyard:nobody', groups: [], token: token() },
  };
}

/** kube-apiserver's --token-auth-file format: token,user,uid,"group1,group2". */
export async function writeTokenAuthFile(path: string, identities: StaticIdentities): Promise<void> {
  const lines = Object.values(identities).map(
    ({ token: t, user, groups }) => `${t},${user},${user},"${groups.join(',')}"`,
  );
  await writeFile(path, `${lines.join('\n')}\n`, { mode: 0o600 });
}
