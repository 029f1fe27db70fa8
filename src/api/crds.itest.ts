// The generated CRDs in deploy/crds/ against the real kube-apiserver: accepted and
// established, valid objects admitted, and objects that break the schema rejected
// with a message that names the problem.
import { CustomObjectsApi } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { committedCrds, ensureCrd } from '../../test/support/crds.ts';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { GROUP, VERSION } from './constants.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);

async function rejection(plural: string, body: object): Promise<string> {
  try {
    await custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });
  } catch (err) {
    const e = err as { code?: number; body?: string };
    expect(e.code).toBe(422);
    return JSON.parse(e.body ?? '{}').message as string;
  }
  throw new Error(`expected ${JSON.stringify(body)} to be rejected`);
}

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
});

const apiVersion = `${GROUP}/${VERSION}`;

describe('CRDs from deploy/crds/', () => {
  it('are all three established on the real apiserver', async () => {
    const names = (await committedCrds()).map((c) => c.metadata?.name).sort();
    expect(names).toEqual([
      `conversionwebhookservers.${GROUP}`,
      `crdconversionconfigs.${GROUP}`,
      `xrdconversionconfigs.${GROUP}`,
    ]);
  });

  it('admit a valid ConversionWebhookServer and apply schema defaults', async () => {
    const created = (await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      body: {
        apiVersion,
        kind: 'ConversionWebhookServer',
        metadata: { name: 'a' },
        spec: { sharding: { enabled: true } },
      },
    })) as { spec: { replicas: number; sharding: { weight: number } } };
    expect(created.spec.replicas).toBe(2);
    expect(created.spec.sharding.weight).toBe(1);
  });

  it('reject a non-positive sharding weight with a message naming the field', async () => {
    const message = await rejection('conversionwebhookservers', {
      apiVersion,
      kind: 'ConversionWebhookServer',
      metadata: { name: 'zero-weight' },
      spec: { sharding: { enabled: true, weight: 0 } },
    });
    expect(message).toMatch(/spec\.sharding\.weight/);
  });

  it('reject a ConversionWebhookServer whose name cannot name its Service (not a DNS-1035 label)', async () => {
    for (const name of ['a.b', '1x']) {
      const message = await rejection('conversionwebhookservers', {
        apiVersion,
        kind: 'ConversionWebhookServer',
        metadata: { name },
        spec: {},
      });
      expect(message).toMatch(/DNS-1035|webhook-server/);
    }
  });

  it('admit a valid CRDConversionConfig', async () => {
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'crdconversionconfigs',
      body: {
        apiVersion,
        kind: 'CRDConversionConfig',
        metadata: { name: 'widgets' },
        spec: {
          targetCRD: { name: 'widgets.example.com' },
          hubVersion: 'v2',
          spokes: [
            {
              version: 'v1',
              rules: [
                {
                  strategy: 'FieldRename',
                  fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
                },
              ],
            },
          ],
        },
      },
    });
  });

  it('reject a rule whose params block does not match its strategy', async () => {
    const message = await rejection('crdconversionconfigs', {
      apiVersion,
      kind: 'CRDConversionConfig',
      metadata: { name: 'mismatched' },
      spec: {
        targetCRD: { name: 'gadgets.example.com' },
        hubVersion: 'v2',
        spokes: [
          {
            version: 'v1',
            rules: [{ strategy: 'FieldRename', delete: { path: 'spec.a', existsOn: 'Hub' } }],
          },
        ],
      },
    });
    expect(message).toMatch(/fieldRename is required when strategy is FieldRename/);
  });

  it('reject a config without a target, naming the missing field', async () => {
    const message = await rejection('xrdconversionconfigs', {
      apiVersion,
      kind: 'XRDConversionConfig',
      metadata: { name: 'no-target' },
      spec: { hubVersion: 'v2', spokes: [] },
    });
    expect(message).toMatch(/spec\.targetXRD: Required value/);
  });
});
