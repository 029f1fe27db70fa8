import { describe, expect, it } from 'vitest';
import { RECORDED_RESOURCES, XRD_RESOURCE } from '../watchers/resources.ts';
import { CRD_CONFIG_KIND, XRD_CONFIG_KIND } from './conversion-config.ts';
import { isTargetViewKind, KINDS, ownKind, RESOURCE_OF_CONFIG, TARGET_OF_CONFIG } from './resources.ts';

describe('the catalog of kinds', () => {
  it('keys every kind by its own view kind, so a lookup by subject token finds the kind it names', () => {
    for (const [key, entry] of Object.entries(KINDS)) expect(entry.viewKind).toBe(key);
  });

  it('keeps the subject tokens and the collections the watchers recorded before the catalog', () => {
    // A changed token or path silently splits the bus: old records under one, new under another.
    const watched = [...RECORDED_RESOURCES, XRD_RESOURCE].map((r) => [r.kind, r.path]);
    expect(watched).toEqual([
      ['webhookserver', '/apis/switchyard.dev/v1alpha1/conversionwebhookservers'],
      ['crdconfig', '/apis/switchyard.dev/v1alpha1/crdconversionconfigs'],
      ['xrdconfig', '/apis/switchyard.dev/v1alpha1/xrdconversionconfigs'],
      ['crd', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions'],
      ['deployment', '/apis/apps/v1/deployments'],
      ['endpointslice', '/apis/discovery.k8s.io/v1/endpointslices'],
      ['lease', '/apis/coordination.k8s.io/v1/leases'],
      ['xrd', '/apis/apiextensions.crossplane.io/v1/compositeresourcedefinitions'],
    ]);
    expect(Object.keys(KINDS).sort()).toEqual(watched.map(([kind]) => kind).sort());
  });

  it('names as the project’s own only the kinds of its API group, and nothing for an unknown token', () => {
    expect(['webhookserver', 'crdconfig', 'xrdconfig'].map((k) => ownKind(k)?.kind)).toEqual([
      'ConversionWebhookServer',
      'CRDConversionConfig',
      'XRDConversionConfig',
    ]);
    for (const other of ['crd', 'lease', 'deployment', 'constructor', 'nope'])
      expect(ownKind(other)).toBeUndefined();
  });

  it('pairs each kind of config with its own resource and the kind of target it converts', () => {
    expect(TARGET_OF_CONFIG[CRD_CONFIG_KIND]).toBe(KINDS.crd);
    expect(TARGET_OF_CONFIG[XRD_CONFIG_KIND]).toBe(KINDS.xrd);
    expect(RESOURCE_OF_CONFIG[CRD_CONFIG_KIND]).toBe(KINDS.crdconfig);
    expect(RESOURCE_OF_CONFIG[XRD_CONFIG_KIND]).toBe(KINDS.xrdconfig);
    expect(Object.keys(KINDS).filter(isTargetViewKind)).toEqual(['crd', 'xrd']);
  });

  it('writes Leases in their namespace and everything else of its own cluster-wide', () => {
    expect(KINDS.lease).toMatchObject({
      apiVersion: 'coordination.k8s.io/v1',
      resource: 'leases',
      namespaced: true,
    });
    expect(KINDS.webhookserver).toMatchObject({ apiVersion: 'switchyard.dev/v1alpha1', namespaced: false });
  });
});
