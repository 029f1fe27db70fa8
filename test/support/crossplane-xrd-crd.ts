// Crossplane's API without Crossplane: the CustomResourceDefinition of
// compositeresourcedefinitions.apiextensions.crossplane.io (XRDs), so that an XRD target can be
// tested on the local cluster. Crossplane itself is not installed and does not run: nothing
// here turns an XRD into its composite CRD; the test needs only what Switchyard touches, an
// XRD object the apiserver stores and validates as Crossplane's CRD would.
//
// Written by hand after Crossplane's apiextensions.crossplane.io/v1 CompositeResourceDefinition
// (its generated CRD), trimmed to the fields Switchyard reads and writes:
//
// * spec.group, spec.names, spec.claimNames: what makes the object an XRD (required, immutable
//   as upstream says with its CEL rules).
// * spec.versions[]: name, served, referenceable (the XRD's word for storage) and
//   schema.openAPIV3Schema, which upstream stores unpruned (x-kubernetes-preserve-unknown-fields):
//   config validation compiles the rules against it (src/engine/target-versions.ts).
// * spec.conversion: the apiextensions/v1 CustomResourceConversion the handover patches
//   (src/core/target-conversion.ts), with upstream's nesting, required fields and formats
//   (caBundle format byte, port int32). Upstream documents `strategy` as None or Webhook
//   without an enum; the enum here only makes the fixture stricter than the real API.
//
// Everything else of upstream's schema (composition refs, connection keys, the metadata
// template, printer columns, status.controllers) is left out: Switchyard neither reads nor
// writes it (an XRD that sets it is still accepted here; the apiserver prunes those fields).
//
// The schema is written with the API's own JSON keys (`x-kubernetes-preserve-unknown-fields`,
// `enum`), as upstream's YAML has them, and loaded into client-node's typed model the way a
// YAML manifest is: the typed model renames those keys (`x_kubernetes_…`, `_enum`) but leaves
// everything under `items` untyped, so a typed literal would send the renamed keys there and
// the apiserver would drop them (an XRD version schema then pruned to nothing).
import {
  ApiextensionsV1Api,
  type KubeConfig,
  loadYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { isNotFound } from '../../src/kube/errors.ts';
import { waitFor } from '../../src/local-cluster/wait.ts';
import { servesGroupVersion } from '../../src/watchers/list-objects.ts';
import { ensureCrd } from './crds.ts';

export const XRD_GROUP = 'apiextensions.crossplane.io';
export const XRD_VERSION = 'v1';
export const XRD_PLURAL = 'compositeresourcedefinitions';
export const XRD_CRD_NAME = `${XRD_PLURAL}.${XRD_GROUP}`;
const GROUP_VERSION_PATH = `/apis/${XRD_GROUP}/${XRD_VERSION}`;

/** A JSONSchemaProps as the API spells it. */
type Schema = Record<string, unknown>;

const string: Schema = { type: 'string' };
const stringList: Schema = { type: 'array', items: string, 'x-kubernetes-list-type': 'atomic' };
const immutable = [{ rule: 'self == oldSelf', message: 'Value is immutable' }];

/** The names of the defined kind (upstream: apiextensions/v1 CustomResourceDefinitionNames). */
const names: Schema = {
  type: 'object',
  required: ['kind', 'plural'],
  properties: {
    kind: string,
    listKind: string,
    plural: string,
    singular: string,
    shortNames: stringList,
    categories: stringList,
  },
  'x-kubernetes-validations': immutable,
};

const version: Schema = {
  type: 'object',
  required: ['name', 'referenceable', 'served'],
  properties: {
    name: string,
    served: { type: 'boolean' },
    referenceable: { type: 'boolean' },
    deprecated: { type: 'boolean' },
    deprecationWarning: { type: 'string', maxLength: 256 },
    schema: {
      type: 'object',
      properties: {
        openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
      },
    },
  },
};

const conversion: Schema = {
  type: 'object',
  required: ['strategy'],
  properties: {
    strategy: { type: 'string', enum: ['None', 'Webhook'] },
    webhook: {
      type: 'object',
      required: ['conversionReviewVersions'],
      properties: {
        clientConfig: {
          type: 'object',
          properties: {
            caBundle: { type: 'string', format: 'byte' },
            service: {
              type: 'object',
              required: ['name', 'namespace'],
              properties: {
                name: string,
                namespace: string,
                path: string,
                port: { type: 'integer', format: 'int32' },
              },
            },
            url: string,
          },
        },
        conversionReviewVersions: stringList,
      },
    },
  },
};

const condition: Schema = {
  type: 'object',
  required: ['lastTransitionTime', 'reason', 'status', 'type'],
  properties: {
    type: string,
    status: string,
    reason: string,
    message: string,
    lastTransitionTime: { type: 'string', format: 'date-time' },
    observedGeneration: { type: 'integer', format: 'int64' },
  },
};

/** Crossplane's XRD CRD, trimmed (see the file comment). */
export const CROSSPLANE_XRD_CRD: V1CustomResourceDefinition = loadYaml(
  JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: XRD_CRD_NAME },
    spec: {
      group: XRD_GROUP,
      scope: 'Cluster',
      names: {
        kind: 'CompositeResourceDefinition',
        listKind: 'CompositeResourceDefinitionList',
        plural: XRD_PLURAL,
        singular: 'compositeresourcedefinition',
        shortNames: ['xrd', 'xrds'],
        categories: ['crossplane'],
      },
      versions: [
        {
          name: XRD_VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                apiVersion: string,
                kind: string,
                metadata: { type: 'object' },
                spec: {
                  type: 'object',
                  required: ['group', 'names', 'versions'],
                  properties: {
                    group: { type: 'string', 'x-kubernetes-validations': immutable },
                    names,
                    claimNames: names,
                    versions: { type: 'array', items: version },
                    conversion,
                  },
                },
                status: {
                  type: 'object',
                  properties: {
                    conditions: {
                      type: 'array',
                      items: condition,
                      'x-kubernetes-list-type': 'map',
                      'x-kubernetes-list-map-keys': ['type'],
                    },
                  },
                },
              },
            },
          },
        },
      ],
    },
  }),
);

/**
 * Installs the XRD API and waits until discovery serves its group version: the watchers decide
 * at start whether to record XRDs by that discovery read (src/watchers/run.ts), and the
 * apiserver publishes a CRD's discovery only after the CRD is Established.
 */
export async function installCrossplaneXrdApi(admin: KubeConfig): Promise<void> {
  await ensureCrd(admin, CROSSPLANE_XRD_CRD);
  await waitFor(
    `discovery serves ${GROUP_VERSION_PATH}`,
    async () => ((await servesGroupVersion(admin, GROUP_VERSION_PATH)) ? true : undefined),
    { timeoutMs: 30_000, intervalMs: 200 },
  );
}

/**
 * Deletes the XRD API and waits until the CRD is gone and discovery no longer serves the group:
 * a `switchyard watch` started afterwards (another test file's) must not find Crossplane's API
 * in discovery and then fail to list a resource that is being removed.
 */
export async function removeCrossplaneXrdApi(admin: KubeConfig): Promise<void> {
  const api = admin.makeApiClient(ApiextensionsV1Api);
  await api.deleteCustomResourceDefinition({ name: XRD_CRD_NAME }).catch((err: unknown) => {
    if (!isNotFound(err)) throw err;
  });
  await waitFor(
    `${XRD_CRD_NAME} deleted and out of discovery`,
    async () => {
      const gone = await api.readCustomResourceDefinition({ name: XRD_CRD_NAME }).then(
        () => false,
        (err: unknown) => {
          if (isNotFound(err)) return true;
          throw err;
        },
      );
      return gone && !(await servesGroupVersion(admin, GROUP_VERSION_PATH)) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 250 },
  );
}
