// The one catalog of the kinds Switchyard records and writes: for each, the token its records
// carry on the bus (`k8s.<viewKind>.<ns>.<name>`, bus/subjects.ts), where the apiserver serves
// it, and its Kind. The watchers' list paths, the subject tokens, the resources handlers write
// and a replica's Lease all read it here, so adding or moving a kind is one edit. Pure data.
import { GROUP, VERSION } from './constants.ts';
import { type ConversionConfig, CRD_CONFIG_KIND, XRD_CONFIG_KIND } from './conversion-config.ts';
import { WEBHOOK_SERVER_KIND } from './webhook-server.ts';

/** One kind: its view token, its REST resource (a `kube/writer.ts` ResourceRef) and its Kind. */
export interface KindResource<V extends string = string> {
  /** The kind's token in bus subjects and views. */
  readonly viewKind: V;
  readonly group: string;
  readonly version: string;
  /** `<group>/<version>`. */
  readonly apiVersion: string;
  /** The plural REST resource. */
  readonly resource: string;
  readonly kind: string;
  readonly namespaced: boolean;
  /** The collection across namespaces, as the watchers list and watch it. */
  readonly listPath: string;
}

function kindResource<V extends string>(
  viewKind: V,
  group: string,
  version: string,
  resource: string,
  kind: string,
  namespaced: boolean,
): KindResource<V> {
  const apiVersion = `${group}/${version}`;
  return {
    viewKind,
    group,
    version,
    apiVersion,
    resource,
    kind,
    namespaced,
    listPath: `/apis/${apiVersion}/${resource}`,
  };
}

/** Every kind, by view kind, in the order the watchers record them. */
export const KINDS = {
  webhookserver: kindResource(
    'webhookserver',
    GROUP,
    VERSION,
    'conversionwebhookservers',
    WEBHOOK_SERVER_KIND,
    false,
  ),
  crdconfig: kindResource('crdconfig', GROUP, VERSION, 'crdconversionconfigs', CRD_CONFIG_KIND, false),
  xrdconfig: kindResource('xrdconfig', GROUP, VERSION, 'xrdconversionconfigs', XRD_CONFIG_KIND, false),
  crd: kindResource(
    'crd',
    'apiextensions.k8s.io',
    'v1',
    'customresourcedefinitions',
    'CustomResourceDefinition',
    false,
  ),
  xrd: kindResource(
    'xrd',
    'apiextensions.crossplane.io',
    'v1',
    'compositeresourcedefinitions',
    'CompositeResourceDefinition',
    false,
  ),
  deployment: kindResource('deployment', 'apps', 'v1', 'deployments', 'Deployment', true),
  endpointslice: kindResource(
    'endpointslice',
    'discovery.k8s.io',
    'v1',
    'endpointslices',
    'EndpointSlice',
    true,
  ),
  lease: kindResource('lease', 'coordination.k8s.io', 'v1', 'leases', 'Lease', true),
} as const;

export type ViewKind = keyof typeof KINDS;

/** The view kinds of targets: the objects whose spec.conversion a config points at an instance. */
export const TARGET_VIEW_KINDS = [KINDS.crd.viewKind, KINDS.xrd.viewKind] as const;

export function isTargetViewKind(kind: string): kind is (typeof TARGET_VIEW_KINDS)[number] {
  return (TARGET_VIEW_KINDS as readonly string[]).includes(kind);
}

/** The kind of target each kind of config converts: where it is recorded and where it is patched. */
export const TARGET_OF_CONFIG: Readonly<Record<ConversionConfig['kind'], KindResource<'crd' | 'xrd'>>> = {
  [CRD_CONFIG_KIND]: KINDS.crd,
  [XRD_CONFIG_KIND]: KINDS.xrd,
};

/** Each kind of config's own resource, where its status is written. */
export const RESOURCE_OF_CONFIG: Readonly<Record<ConversionConfig['kind'], KindResource>> = {
  [CRD_CONFIG_KIND]: KINDS.crdconfig,
  [XRD_CONFIG_KIND]: KINDS.xrdconfig,
};

/**
 * The project's own kind (its API group) recorded as `viewKind`: the configs and instances whose
 * status handlers write. Undefined for any other token, so a handler names a kind, never a path.
 */
export function ownKind(viewKind: string): KindResource | undefined {
  if (!Object.hasOwn(KINDS, viewKind)) return undefined;
  const entry: KindResource = KINDS[viewKind as ViewKind];
  return entry.group === GROUP ? entry : undefined;
}
