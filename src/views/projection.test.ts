import { describe, expect, it } from 'vitest';
import { API_VERSION, HANDOVER_VERDICT_ANNOTATION } from '../api/constants.ts';
import { conversionConfigSchema } from '../api/conversion-config.ts';
import type { RecordedObject } from '../bus/messages.ts';
import { parseRecorded } from './parse-cache.ts';
import { EACH, HANDLER_VIEW_PROJECTIONS, projectionOf, REPLICA_VIEW_PROJECTIONS } from './projection.ts';

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

describe('the config projections', () => {
  const config: RecordedObject = {
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name: 'widgets', uid: 'u', resourceVersion: '5', generation: 2, labels: { a: 'b' } },
    spec: {
      targetCRD: { name: 'widgets.example.com' },
      hubVersion: 'v2',
      spokes: [
        {
          version: 'v1',
          rules: [
            { strategy: 'FieldRename', fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' } },
          ],
        },
      ],
    },
    status: { phase: 'Applied', assignedWebhookServer: 'a', message: 'm' },
  };

  for (const [name, projections] of [
    ['handlers', HANDLER_VIEW_PROJECTIONS],
    ['replicas', REPLICA_VIEW_PROJECTIONS],
  ] as const) {
    it(`keep a config as its own parse, without rules (${name})`, () => {
      const kept = projections.crdconfig?.(config);
      if (!kept) throw new Error('no projection for crdconfig');
      const parsed = parseRecorded(conversionConfigSchema, kept);
      expect(parsed.success && parsed.data).toBe(kept);
      // A parse of the parse is the same value: what a reader would get from the record itself.
      expect(conversionConfigSchema.parse(kept)).toEqual(kept);
      expect((kept.spec as { spokes: { rules: unknown[] }[] }).spokes).toEqual([
        { version: 'v1', rules: [] },
      ]);
      expect(kept.metadata).not.toHaveProperty('labels');
    });

    it(`keep a config that does not parse as projected, and it reads as not parsing (${name})`, () => {
      const broken = { ...config, spec: { targetCRD: { name: 'widgets.example.com' } } };
      const kept = projections.crdconfig?.(broken);
      if (!kept) throw new Error('no projection for crdconfig');
      expect(kept.spec).toEqual({ targetCRD: { name: 'widgets.example.com' } });
      expect(parseRecorded(conversionConfigSchema, kept).success).toBe(false);
    });
  }

  it("keeps only the status's phase for a replica", () => {
    expect(REPLICA_VIEW_PROJECTIONS.crdconfig?.(config).status).toEqual({ phase: 'Applied' });
    expect(HANDLER_VIEW_PROJECTIONS.crdconfig?.(config).status).toEqual(config.status);
  });

  it("keeps of the status's spokeStatuses only each spoke's version and lossless verdict for a handler", () => {
    const lossless = { hubToSpoke: true, spokeToHub: false };
    const before = config.status as Record<string, unknown>;
    const status = {
      ...before,
      schemaHash: 'sha256:x',
      overallLossless: false,
      spokeStatuses: [
        {
          version: 'v1',
          lossless,
          ruleResults: [{ index: 0, strategy: 'FieldRename', lossless, hubPaths: ['spec.size'] }],
          fieldsUncoveredHub: ['spec.a'],
          errors: ['e'],
          omitted: { ruleResults: 3 },
        },
      ],
    };
    expect(HANDLER_VIEW_PROJECTIONS.crdconfig?.({ ...config, status }).status).toEqual({
      ...before,
      schemaHash: 'sha256:x',
      overallLossless: false,
      spokeStatuses: [{ version: 'v1', lossless }],
    });
  });
});

describe('the replicas’ target projection', () => {
  it('keeps the revision, the group and the Service the conversion names, nothing of the versions or the trust bundle', () => {
    const crd = object({
      metadata: { name: 'w.example.com', uid: 'u', resourceVersion: '9', generation: 3 },
      spec: {
        group: 'example.com',
        conversion: {
          strategy: 'Webhook',
          webhook: { clientConfig: { service: { name: 's', namespace: 'n' }, caBundle: 'Q0E=' } },
        },
        versions: [{ name: 'v1', served: true, storage: true }],
      },
    });
    expect(REPLICA_VIEW_PROJECTIONS.crd?.(crd)).toEqual({
      apiVersion: 'v1',
      kind: 'Thing',
      metadata: { name: 'w.example.com', uid: 'u', resourceVersion: '9', generation: 3 },
      spec: { group: 'example.com', conversion: { webhook: { clientConfig: { service: { name: 's' } } } } },
    });
  });
});

describe('a shared leaf', () => {
  it('is one string for every object with the same value, and kept as is when not a string', () => {
    const project = projectionOf([], [['spec', 'ca']]);
    const a = project(object({ spec: { ca: ['x'.repeat(64)].join('') } }));
    const b = project(object({ spec: { ca: ['x'.repeat(32), 'x'.repeat(32)].join('') } }));
    expect((a.spec as { ca: string }).ca).toBe((b.spec as { ca: string }).ca);
    expect(project(object({ spec: { ca: { not: 'a string' } } })).spec).toEqual({ ca: { not: 'a string' } });
  });
});
