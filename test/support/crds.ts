import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ApiextensionsV1Api,
  type KubeConfig,
  loadAllYaml,
  type V1CustomResourceDefinition,
  type V1JSONSchemaProps,
} from '@kubernetes/client-node';
import { CRD_KUSTOMIZATION } from '../../src/api/crd-yaml.ts';
import { isConflict } from '../../src/kube/errors.ts';
import { PROJECT_ROOT } from '../../src/local-cluster/cluster.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';

/** Creates a CRD unless it exists, and waits until it is established. */
export async function ensureCrd(kc: KubeConfig, crd: V1CustomResourceDefinition): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const name = crd.metadata?.name ?? '';
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  await waitFor(`CRD ${name} to be established`, async () => {
    const c = await api.readCustomResourceDefinition({ name });
    return c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True')
      ? true
      : undefined;
  });
}

/** The project's CRDs as committed in deploy/crds/ (what a user applies). */
export async function committedCrds(): Promise<V1CustomResourceDefinition[]> {
  const dir = join(PROJECT_ROOT, 'deploy', 'crds');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml') && f !== CRD_KUSTOMIZATION);
  const docs = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
  return docs.flatMap((d) => loadAllYaml(d) as V1CustomResourceDefinition[]);
}

/** A one-version CRD whose `spec` has the given properties: what size and content tests vary. */
export function crdWithSpec(
  plural: string,
  group: string,
  properties: Record<string, V1JSONSchemaProps>,
  labels: Record<string, string> = {},
): V1CustomResourceDefinition {
  return {
    metadata: { name: `${plural}.${group}`, labels },
    spec: {
      group,
      scope: 'Namespaced',
      names: {
        plural,
        singular: plural.slice(0, -1),
        kind: `${plural[0]?.toUpperCase()}${plural.slice(1, -1)}`,
      },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties } } },
          },
        },
      ],
    },
  };
}

/**
 * A target CRD `<plural>.<group>` whose versions a FieldRename config compiles against: v2
 * (stored) has spec.size where v1 has `v1Field` (spec.replicas unless told).
 */
export function gizmoCrd(name: string, opts: { v1Field?: string } = {}): V1CustomResourceDefinition {
  const version = (v: string, field: string, storage: boolean) => ({
    name: v,
    served: true,
    storage,
    schema: {
      openAPIV3Schema: {
        type: 'object',
        properties: { spec: { type: 'object', properties: { [field]: { type: 'integer' } } } },
      },
    },
  });
  const [plural, ...group] = name.split('.');
  return {
    metadata: { name },
    spec: {
      group: group.join('.'),
      scope: 'Namespaced',
      names: { plural: plural ?? '', singular: 'gizmo', kind: 'Gizmo' },
      versions: [version('v2', 'size', true), version('v1', opts.v1Field ?? 'replicas', false)],
    },
  };
}

/** The spec of a CRDConversionConfig of a gizmo target: v1's `spokePath` renamed to v2's spec.size. */
export function renameConfigSpec(
  target: string,
  opts: {
    pin?: string | undefined;
    spokePath?: string;
    driftPolicy?: 'KeepServingStale' | 'FailClosed';
  } = {},
) {
  return {
    targetCRD: { name: target },
    hubVersion: 'v2',
    spokes: [
      {
        version: 'v1',
        rules: [
          {
            strategy: 'FieldRename',
            fieldRename: { hubPath: 'spec.size', spokePath: opts.spokePath ?? 'spec.replicas' },
          },
        ],
      },
    ],
    ...(opts.pin && { webhookServerRef: { name: opts.pin } }),
    ...(opts.driftPolicy && { driftPolicy: opts.driftPolicy }),
  };
}
