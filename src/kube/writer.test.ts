import { describe, expect, it } from 'vitest';
import { applyBody, fieldManagerFor, objectPath } from './writer.ts';

describe('objectPath', () => {
  it('builds core, grouped, cluster-scoped and status paths', () => {
    const cm = { apiVersion: 'v1', resource: 'configmaps', namespaced: true };
    const crd = {
      apiVersion: 'apiextensions.k8s.io/v1',
      resource: 'customresourcedefinitions',
      namespaced: false,
    };
    expect(objectPath(cm, { namespace: 'ns', name: 'a' })).toBe('/api/v1/namespaces/ns/configmaps/a');
    expect(objectPath(crd, { name: 'widgets.example.com' }, 'status')).toBe(
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com/status',
    );
  });

  it('refuses a namespaced object without a namespace rather than writing elsewhere', () => {
    expect(() =>
      objectPath({ apiVersion: 'v1', resource: 'configmaps', namespaced: true }, { name: 'a' }),
    ).toThrow(/namespace/);
  });
});

describe('applyBody', () => {
  it('carries the resourceVersion precondition only when asked', () => {
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'ns' } };
    expect(applyBody(obj, undefined)).toBe(obj);
    expect(applyBody(obj, '42').metadata).toEqual({ name: 'a', namespace: 'ns', resourceVersion: '42' });
  });

  it('names each handler its own field manager', () => {
    expect(fieldManagerFor('handover')).toBe('switchyard-handover');
  });
});
