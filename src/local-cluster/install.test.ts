import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type KubernetesObject, loadAllYaml, type V1Deployment, type V1Job } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './cluster.ts';
import { forThisCluster } from './install.ts';

async function manifest<T>(file: string): Promise<T> {
  const [o] = loadAllYaml(await readFile(join(PROJECT_ROOT, 'deploy', file), 'utf8')) as KubernetesObject[];
  return o as T;
}

const URL = 'nats://127.0.0.1:4222';

describe('forThisCluster with a NATS that requires TLS', () => {
  it('mounts the CA Secret in a worker and names the file as nats.tls.caFile', async () => {
    const d = forThisCluster(
      await manifest<V1Deployment>('workers/assign.yaml'),
      URL,
      undefined,
      true,
    ) as V1Deployment;
    const pod = d.spec?.template.spec;
    const env = Object.fromEntries((pod?.containers[0]?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.SWITCHYARD_NATS_URL).toBe(URL);
    expect(env.SWITCHYARD_NATS_TLS_CA_FILE).toBe('/etc/switchyard/nats-ca/ca.crt');
    const volume = pod?.volumes?.find((v) => v.secret?.secretName === 'switchyard-nats-ca');
    expect(volume, 'no volume of the CA Secret').toBeDefined();
    expect(pod?.containers[0]?.volumeMounts?.find((m) => m.name === volume?.name)?.mountPath).toBe(
      '/etc/switchyard/nats-ca',
    );
  });

  it('mounts it in the bus-setup Job too', async () => {
    const job = forThisCluster(
      await manifest<V1Job>('workers/bus-setup.yaml'),
      URL,
      undefined,
      true,
    ) as V1Job;
    const names = (job.spec?.template.spec?.containers[0]?.env ?? []).map((e) => e.name);
    expect(names).toContain('SWITCHYARD_NATS_TLS_CA_FILE');
  });

  it('leaves the admission webhook, which never connects to NATS, and a bus without TLS alone', async () => {
    const admission = await manifest<V1Deployment>('admission/deployment.yaml');
    const before = JSON.stringify(admission);
    expect(JSON.stringify(forThisCluster(admission, URL, undefined, true))).toBe(before);
    const plain = forThisCluster(await manifest<V1Deployment>('workers/assign.yaml'), URL) as V1Deployment;
    expect(
      plain.spec?.template.spec?.volumes?.some((v) => v.secret?.secretName === 'switchyard-nats-ca'),
    ).toBe(false);
  });
});
