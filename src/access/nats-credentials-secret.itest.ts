// The credentials Secret against the real apiserver: made once with a password per user, a
// missing user's password added, and an existing password never changed.
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { defaultConfig } from '../config/schema.ts';
import { createKubeClients, type KubeClients } from '../kube/clients.ts';
import { ensureNatsCredentials, NATS_CREDENTIALS_SECRET } from './nats-credentials-secret.ts';
import { NATS_IDENTITIES } from './nats-permissions.ts';

const cluster = useLocalCluster();
const namespace = `nats-credentials-${process.pid}`;
let clients: KubeClients;
const core = () => cluster.kubeConfig().makeApiClient(CoreV1Api);

async function secretData(): Promise<Record<string, string>> {
  const secret = await core().readNamespacedSecret({ name: NATS_CREDENTIALS_SECRET, namespace });
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]),
  );
}

beforeAll(async () => {
  await core().createNamespace({ body: { metadata: { name: namespace } } });
  clients = createKubeClients({
    kubeConfig: cluster.kubeConfig(),
    component: 'nats-credentials',
    kubernetes: defaultConfig().kubernetes,
  });
});

afterAll(async () => {
  await clients?.close();
  await core().deleteNamespace({ name: namespace });
});

describe('ensureNatsCredentials', () => {
  it('creates the Secret with a distinct strong password for every user and the monitoring gate', async () => {
    expect(await ensureNatsCredentials(clients.writes, namespace)).toEqual({
      created: [...NATS_IDENTITIES, 'monitor'],
    });
    const data = await secretData();
    expect(Object.keys(data).sort()).toEqual([...NATS_IDENTITIES, 'monitor'].sort());
    expect(new Set(Object.values(data)).size).toBe(NATS_IDENTITIES.length + 1);
    for (const password of Object.values(data)) expect(password).toMatch(/^[A-Za-z0-9_-]{24}$/);
  });

  it('changes nothing when every user has one, and adds only what is missing', async () => {
    const before = await secretData();
    expect(await ensureNatsCredentials(clients.writes, namespace)).toEqual({ unchanged: true });
    await core().patchNamespacedSecret({
      name: NATS_CREDENTIALS_SECRET,
      namespace,
      body: [{ op: 'remove', path: '/data/router' }],
    });
    expect(await ensureNatsCredentials(clients.writes, namespace)).toEqual({ added: ['router'] });
    const after = await secretData();
    expect(after.router).not.toBe(before.router);
    expect({ ...after, router: before.router }).toEqual(before);
    // An install from before the monitoring gate gets its password added, as a new user's.
    await core().patchNamespacedSecret({
      name: NATS_CREDENTIALS_SECRET,
      namespace,
      body: [{ op: 'remove', path: '/data/monitor' }],
    });
    expect(await ensureNatsCredentials(clients.writes, namespace)).toEqual({ added: ['monitor'] });
  });
});
