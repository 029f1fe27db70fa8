import { describe, expect, it } from 'vitest';
import { HANDOVER_VERDICT_ANNOTATION } from '../api/constants.ts';
import type { RecordedObject } from '../bus/messages.ts';
import { EACH, HANDLER_VIEW_PROJECTIONS, projectionOf } from './projection.ts';

const object = (extra: Record<string, unknown>): RecordedObject => ({
  apiVersion: 'v1',
  kind: 'Thing',
  metadata: { name: 'a', uid: 'u', resourceVersion: '7', labels: { x: 'y' } },
  ...extra,
});

describe('projectionOf', () => {
  it('keeps what names the object and the declared fields, whole below their path', () => {
    const project = projectionOf([['spec', 'keep']]);
    const source = object({ spec: { keep: { deep: [1, { a: 2 }] }, drop: 'x' }, status: { s: 1 } });
    expect(project(source)).toEqual({
      apiVersion: 'v1',
      kind: 'Thing',
      metadata: { name: 'a', uid: 'u', resourceVersion: '7' },
      spec: { keep: { deep: [1, { a: 2 }] } },
    });
    expect(source.spec).toEqual({ keep: { deep: [1, { a: 2 }] }, drop: 'x' });
  });

  it('steps into every item of an array, and leaves absent and mistyped fields absent', () => {
    const project = projectionOf([['spec', 'items', EACH, 'name']]);
    expect(
      project(object({ spec: { items: [{ name: 'p', big: 'x' }, { big: 'y' }, 'scalar'] } })).spec,
    ).toEqual({
      items: [{ name: 'p' }, {}, 'scalar'],
    });
    expect(project(object({ spec: { items: { name: 'not an array' } } })).spec).toEqual({});
    expect(project(object({})).spec).toBeUndefined();
  });

  it('keeps a whole subtree when a shorter path covers a longer one, in either order', () => {
    const a = projectionOf([['spec'], ['spec', 'x']]);
    const b = projectionOf([['spec', 'x'], ['spec']]);
    const source = object({ spec: { x: 1, y: 2 } });
    expect(a(source).spec).toEqual({ x: 1, y: 2 });
    expect(b(source).spec).toEqual({ x: 1, y: 2 });
  });

  it('refuses an empty path', () => {
    expect(() => projectionOf([[]])).toThrow(/at least one key/);
  });
});

describe('the handlers’ target projection', () => {
  it('drops the versions’ schemas and every annotation but the handover verdict', () => {
    const project = HANDLER_VIEW_PROJECTIONS.crd;
    if (!project) throw new Error('no projection for crd');
    const crd = object({
      metadata: {
        name: 'w.example.com',
        uid: 'u',
        resourceVersion: '9',
        generation: 3,
        annotations: {
          [HANDOVER_VERDICT_ANNOTATION]: '{"v":1}',
          'kubectl.kubernetes.io/last-applied-configuration': 'x'.repeat(1000),
        },
      },
      spec: {
        group: 'example.com',
        conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { name: 's' } } } },
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    });
    const projected = project(crd);
    expect(projected.metadata).toEqual({
      name: 'w.example.com',
      uid: 'u',
      resourceVersion: '9',
      generation: 3,
      annotations: { [HANDOVER_VERDICT_ANNOTATION]: '{"v":1}' },
    });
    expect(projected.spec).toEqual({
      group: 'example.com',
      conversion: crd.spec && (crd.spec as { conversion: unknown }).conversion,
      versions: [{ name: 'v1', served: true, storage: true }],
    });
  });
});
