// A target whose two versions differ in six ways, one for each of six strategies the reference
// operator's users bring (beyond a rename): a scalar that became an object, a list that became
// a map, a map whose keys were renamed, fields gathered into a map, a one-element list that
// became an object, and an array whose elements were reshaped. The demo converts an object of it
// through the apiserver and prints both versions; the conversion test checks the same through a
// real webhook-server instance. Hub v1 (storage), spoke v2.
import type { KubeConfig } from '@kubernetes/client-node';
import { API_VERSION, GROUP, VERSION } from '../api/constants.ts';
import { isEstablished } from '../core/routing.ts';
import { HttpMethod } from '../kube/request.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { request } from './fleet.ts';

export const SHOWCASE_KIND = 'Showcase';
export const SHOWCASE_PLURAL = 'showcases';

const string = { type: 'string' };
const integer = { type: 'integer' };
const object = (properties: Record<string, unknown>) => ({ type: 'object', properties });
const arrayOf = (items: unknown, extra: Record<string, unknown> = {}) => ({ type: 'array', items, ...extra });
const mapOf = (values: unknown) => ({ type: 'object', additionalProperties: values });

const HUB_SPEC = object({
  replicas: integer,
  endpoints: arrayOf(object({ name: string, url: string })),
  labels: mapOf(string),
  cpuLimit: string,
  memoryLimit: string,
  zones: arrayOf(object({ name: string }), { maxItems: 1 }),
  volumes: arrayOf(object({ sizeGB: integer, label: string })),
});

const SPOKE_SPEC = object({
  replicas: object({ count: integer }),
  endpoints: mapOf(object({ url: string })),
  labels: mapOf(string),
  limits: mapOf(string),
  zone: object({ name: string }),
  volumes: arrayOf(object({ size: integer, name: string })),
});

function version(name: string, spec: unknown, storage: boolean) {
  return { name, served: true, storage, schema: { openAPIV3Schema: object({ spec }) } };
}

/** The CRD `showcases.<group>`: v1 stores the hub's shape, v2 serves the spoke's. */
export function showcaseCrd(name: string) {
  const [plural = '', ...group] = name.split('.');
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      group: group.join('.'),
      scope: 'Namespaced',
      names: { plural, singular: plural.replace(/s$/, ''), kind: SHOWCASE_KIND },
      versions: [version('v1', HUB_SPEC, true), version('v2', SPOKE_SPEC, false)],
    },
  };
}

/** The rules of the spoke v2, one per difference. */
export const SHOWCASE_RULES = [
  {
    strategy: 'ScalarToObject',
    scalarToObject: { hubPath: 'spec.replicas', spokePath: 'spec.replicas', key: 'count' },
  },
  {
    strategy: 'ArrayToMapByKey',
    arrayToMapByKey: { hubPath: 'spec.endpoints', spokePath: 'spec.endpoints', keyField: 'name' },
    acknowledgeLossy: true,
    reason: 'endpoint order carries no meaning',
  },
  {
    strategy: 'MapKeyRename',
    mapKeyRename: { hubPath: 'spec.labels', spokePath: 'spec.labels', renames: { app: 'application' } },
  },
  {
    strategy: 'FieldsToMap',
    fieldsToMap: {
      hubPaths: ['spec.cpuLimit', 'spec.memoryLimit'],
      spokeMapPath: 'spec.limits',
      keyNames: { 'spec.cpuLimit': 'cpu', 'spec.memoryLimit': 'memory' },
    },
  },
  {
    strategy: 'SingletonArrayToObject',
    singletonArrayToObject: { hubPath: 'spec.zones', spokePath: 'spec.zone' },
  },
  {
    strategy: 'ForEach',
    forEach: {
      hubItemsPath: 'spec.volumes',
      spokeItemsPath: 'spec.volumes',
      rules: [
        { strategy: 'FieldRename', fieldRename: { hubPath: 'sizeGB', spokePath: 'size' } },
        { strategy: 'FieldRename', fieldRename: { hubPath: 'label', spokePath: 'name' } },
      ],
    },
  },
];

/** A CRDConversionConfig spec for the showcase target, pinned to `pin` when given. */
export function showcaseConfigSpec(target: string, pin?: string) {
  return {
    targetCRD: { name: target },
    hubVersion: 'v1',
    spokes: [{ version: 'v2', rules: SHOWCASE_RULES }],
    ...(pin && { webhookServerRef: { name: pin } }),
  };
}

/** An object's spec as a client writes it at v2, and the same object as v1 stores it. */
export const SHOWCASE_SPOKE_SPEC = {
  replicas: { count: 3 },
  endpoints: { api: { url: 'https://api.example.org' }, web: { url: 'https://www.example.org' } },
  labels: { application: 'shop', tier: 'frontend' },
  limits: { cpu: '500m', memory: '1Gi' },
  zone: { name: 'eu-west-1a' },
  volumes: [
    { size: 10, name: 'data' },
    { size: 1, name: 'logs' },
  ],
};
export const SHOWCASE_HUB_SPEC = {
  replicas: 3,
  endpoints: [
    { name: 'api', url: 'https://api.example.org' },
    { name: 'web', url: 'https://www.example.org' },
  ],
  labels: { app: 'shop', tier: 'frontend' },
  cpuLimit: '500m',
  memoryLimit: '1Gi',
  zones: [{ name: 'eu-west-1a' }],
  volumes: [
    { sizeGB: 10, label: 'data' },
    { sizeGB: 1, label: 'logs' },
  ],
};

const CRDS = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** Creates the showcase CRD `name` and a CRDConversionConfig `config` for it; resolves once the CRD is established. */
export async function createShowcase(kc: KubeConfig, name: string, config: string): Promise<void> {
  await expectCreated(`CRD ${name}`, await request(kc, HttpMethod.POST, CRDS, showcaseCrd(name)));
  await waitFor(`CRD ${name} established`, async () =>
    isEstablished((await request(kc, HttpMethod.GET, `${CRDS}/${name}`)).body) ? true : undefined,
  );
  const body = {
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name: config },
    spec: showcaseConfigSpec(name),
  };
  await expectCreated(
    `config ${config}`,
    await request(kc, HttpMethod.POST, `/apis/${GROUP}/${VERSION}/crdconversionconfigs`, body),
  );
}

/**
 * Writes the showcase object at v2 (retrying until the apiserver can convert it, i.e. until the
 * target is served) and reads it back at v1, the storage version: both specs.
 */
export async function convertShowcaseObject(
  kc: KubeConfig,
  name: string,
  namespace: string,
): Promise<{ written: unknown; stored: unknown }> {
  const [plural = '', ...rest] = name.split('.');
  const group = rest.join('.');
  const objects = (version: string) => `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;
  const body = {
    apiVersion: `${group}/v2`,
    kind: SHOWCASE_KIND,
    metadata: { name: 'example' },
    spec: SHOWCASE_SPOKE_SPEC,
  };
  await waitFor(
    `an object of ${name} written at v2`,
    async () => ((await request(kc, HttpMethod.POST, objects('v2'), body)).status === 201 ? true : undefined),
    { timeoutMs: 120_000, intervalMs: 500 },
  );
  const stored = await request(kc, HttpMethod.GET, `${objects('v1')}/example`);
  return { written: SHOWCASE_SPOKE_SPEC, stored: (stored.body as { spec?: unknown }).spec };
}

async function expectCreated(what: string, answer: { status: number; message: string }): Promise<void> {
  if (answer.status !== 201) throw new Error(`creating ${what}: ${answer.status} ${answer.message}`);
}
