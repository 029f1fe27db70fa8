// The handlers' writer against the local kube-apiserver: server-side apply creates and updates,
// a stale resourceVersion loses with 409 (the `conflict` outcome), two field managers share an
// object and a taken field is refused without force, and status goes through its subresource.
import { ApiextensionsV1Api, CoreV1Api, CustomObjectsApi, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCrd } from '../../test/support/crds.ts';
import { createNamespace, useLocalCluster } from '../../test/support/local-cluster.ts';
import { classifyFailure } from '../bus/runtime/index.ts';
import { defaultConfig } from '../config/schema.ts';
import { createKubeClients, type KubeClients } from './clients.ts';
import { isConflict, statusOf } from './errors.ts';
import { fieldManagerFor, KubeWriter, type ResourceRef } from './writer.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const CONFIGMAPS: ResourceRef = { apiVersion: 'v1', resource: 'configmaps', namespaced: true };
const GROUP = 'writer.switchyard.dev';
const GIZMOS: ResourceRef = { apiVersion: `${GROUP}/v1`, resource: 'gizmos', namespaced: true };
let namespace = '';
let clients: KubeClients;

beforeAll(async () => {
  namespace = await createNamespace(admin, 'kube-writer');
  clients = createKubeClients({
    kubeConfig: admin,
    component: 'writer-itest',
    kubernetes: defaultConfig().kubernetes,
  });
  await ensureCrd(admin, {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `gizmos.${GROUP}` },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', properties: { size: { type: 'integer' } } },
                status: { type: 'object', properties: { phase: { type: 'string' } } },
              },
            },
          },
        },
      ],
    },
  });
});

afterAll(async () => {
  await clients?.close({ timeoutMs: 1_000 });
  await admin.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
  await admin
    .makeApiClient(ApiextensionsV1Api)
    .deleteCustomResourceDefinition({ name: `gizmos.${GROUP}` })
    .catch(() => undefined);
});

const configMap = (
  name: string,
  data: Record<string, string>,
  labels: Record<string, string> = {},
): V1ConfigMap => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace, labels },
  data,
});

describe('KubeWriter', () => {
  it('server-side apply creates, then updates, under the handler’s field manager', async () => {
    const writer = new KubeWriter(clients.writes, fieldManagerFor('assign'));
    const created = await writer.apply(CONFIGMAPS, configMap('ssa', { a: '1' }));
    const updated = await writer.apply(CONFIGMAPS, configMap('ssa', { a: '2' }));
    expect(updated.metadata?.uid).toBe(created.metadata?.uid);
    expect(updated.data).toEqual({ a: '2' });
    expect(updated.metadata?.managedFields?.map((f) => [f.manager, f.operation])).toEqual([
      ['switchyard-assign', 'Apply'],
    ]);
  });

  it('a stale resourceVersion loses with 409, classified as the conflict outcome, by apply and by merge patch', async () => {
    const writer = new KubeWriter(clients.writes, fieldManagerFor('handover'));
    const first = await writer.apply(CONFIGMAPS, configMap('stale', { v: '1' }));
    const staleVersion = first.metadata?.resourceVersion ?? '';
    const second = await writer.apply(CONFIGMAPS, configMap('stale', { v: '2' }), {
      resourceVersion: staleVersion,
    });
    const applyErr = await writer
      .apply(CONFIGMAPS, configMap('stale', { v: 'stale' }), { resourceVersion: staleVersion })
      .catch((e: unknown) => e);
    expect(statusOf(applyErr)).toBe(409);
    expect(classifyFailure(applyErr)).toBe('conflict');
    const patchErr = await writer
      .mergePatch(
        CONFIGMAPS,
        { namespace, name: 'stale', resourceVersion: staleVersion },
        { data: { v: 'stale' } },
      )
      .catch((e: unknown) => e);
    expect(isConflict(patchErr)).toBe(true);
    const patched = await writer.mergePatch<V1ConfigMap>(
      CONFIGMAPS,
      { namespace, name: 'stale', resourceVersion: second.metadata?.resourceVersion ?? '' },
      { data: { v: null } },
    );
    expect(patched.data ?? {}, 'the fresh version wins, and null removes a field').toEqual({});
  });

  it('two field managers share an object; taking the other’s field needs force', async () => {
    const assign = new KubeWriter(clients.writes, fieldManagerFor('assign'));
    const aggregate = new KubeWriter(clients.writes, fieldManagerFor('lease-aggregate'));
    await assign.apply(CONFIGMAPS, configMap('shared', { a: '1' }, { owner: 'assign' }));
    const both = await aggregate.apply(CONFIGMAPS, configMap('shared', { b: '1' }));
    expect(both.data).toEqual({ a: '1', b: '1' });
    expect(both.metadata?.labels).toEqual({ owner: 'assign' });
    expect(new Set(both.metadata?.managedFields?.map((f) => f.manager))).toEqual(
      new Set(['switchyard-assign', 'switchyard-lease-aggregate']),
    );
    const refused = await aggregate
      .apply(CONFIGMAPS, configMap('shared', { a: 'mine', b: '1' }), { force: false })
      .catch((e: unknown) => e);
    expect(isConflict(refused), 'a field another manager owns is refused without force').toBe(true);
    const taken = await aggregate.apply(CONFIGMAPS, configMap('shared', { a: 'mine', b: '1' }));
    expect(taken.data).toEqual({ a: 'mine', b: '1' });
  });

  it('writes status through the status subresource, leaving spec alone, and spec apply leaves status alone', async () => {
    const writer = new KubeWriter(clients.writes, fieldManagerFor('config-status'));
    const gizmo = { apiVersion: `${GROUP}/v1`, kind: 'Gizmo', metadata: { name: 'g', namespace } };
    await writer.apply(GIZMOS, { ...gizmo, spec: { size: 1 } });
    const withStatus = await writer.applyStatus(GIZMOS, {
      ...gizmo,
      spec: { size: 99 },
      status: { phase: 'Ready' },
    });
    expect(withStatus).toMatchObject({ spec: { size: 1 }, status: { phase: 'Ready' } });
    const ignored = await writer.apply(GIZMOS, { ...gizmo, spec: { size: 2 }, status: { phase: 'Ignored' } });
    expect(ignored).toMatchObject({ spec: { size: 2 }, status: { phase: 'Ready' } });
    const stored = await admin.makeApiClient(CustomObjectsApi).getNamespacedCustomObjectStatus({
      group: GROUP,
      version: 'v1',
      namespace,
      plural: 'gizmos',
      name: 'g',
    });
    expect(stored).toMatchObject({ status: { phase: 'Ready' } });
  });
});
