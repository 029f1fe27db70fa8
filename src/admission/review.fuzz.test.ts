// Fuzz: ConversionWebhookServer, CRDConversionConfig and XRDConversionConfig objects that break
// the schema or the admission rules, through the API's zod schemas and the admission decision
// (parse, reads, review). Whatever the object: no throw, and a refusal carries a message that
// names the field to fix (`spec.<path>: …` for a spec the schema refuses).
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { gizmoCrd, renameConfigSpec } from '../../test/support/crds.ts';
import { FUZZ_TEST_TIMEOUT_MS, fuzz, fuzzTimeoutMs } from '../../test/support/fuzz.ts';
import { API_VERSION, GROUP } from '../api/constants.ts';
import { crdConfigSpecSchema, xrdConfigSpecSchema } from '../api/conversion-config.ts';
import { webhookServerSpecSchema } from '../api/webhook-server.ts';
import {
  type AdmissionRequest,
  type AdmissionResponse,
  type ClusterState,
  parseReview,
  readsFor,
  review,
} from './review.ts';

vi.setConfig({ testTimeout: FUZZ_TEST_TIMEOUT_MS });

const OPERATOR_NAMESPACE = 'switchyard-system';
const TARGET = 'gizmos.x.io';

type Kind = 'ConversionWebhookServer' | 'CRDConversionConfig' | 'XRDConversionConfig';

const cws = (name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind: 'ConversionWebhookServer',
  metadata: { name },
  spec,
});
const config = (kind: Kind, name: string, spec: Record<string, unknown>) => ({
  apiVersion: API_VERSION,
  kind,
  metadata: { name },
  spec,
});

const name = fc.stringMatching(/^[a-z]([a-z0-9-]{0,10}[a-z0-9])?$/);
const cwsSpec = fc.record(
  {
    default: fc.boolean(),
    replicas: fc.integer({ min: 0, max: 5 }),
    sharding: fc.record({ enabled: fc.boolean(), weight: fc.integer({ min: 1, max: 1000 }) }),
    image: fc.constant({ repository: 'registry.example/team/webhook', tag: 'v1' }),
    extraArgs: fc.constant([] as string[]),
  },
  { requiredKeys: [] },
);
const crdSpec = fc.option(name, { nil: undefined }).map((pin) => renameConfigSpec(TARGET, { pin }));
const xrdSpec = crdSpec.map(({ targetCRD, ...rest }) => ({
  ...rest,
  targetXRD: { name: `x${targetCRD.name}` },
}));

/** A valid object of each kind under review. */
const validObject = fc.oneof(
  fc.tuple(name, cwsSpec).map(([n, s]) => cws(n, s)),
  fc.tuple(name, crdSpec).map(([n, s]) => config('CRDConversionConfig', n, s)),
  fc.tuple(name, xrdSpec).map(([n, s]) => config('XRDConversionConfig', n, s)),
);

/** Every path in a JSON value, the root's children first. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (typeof value !== 'object' || value === null) return [];
  const entries = Array.isArray(value) ? value.map((v, i) => [i, v] as const) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...pathsOf(v, [...prefix, k])]);
}

const DELETE = Symbol('delete');
const ADD = Symbol('add');

function mutate(object: unknown, path: (string | number)[], change: unknown): unknown {
  const copy = structuredClone(object) as Record<string | number, unknown>;
  let at = copy;
  for (const segment of path.slice(0, -1)) at = at[segment] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (change === DELETE) delete at[last];
  else if (change === ADD && typeof at[last] === 'object' && at[last] !== null)
    (at[last] as Record<string, unknown>).unexpectedField = 'x';
  else at[last] = change === ADD ? 'x' : change;
  return copy;
}

const wrongValue = fc.oneof(
  fc.constantFrom<unknown>(null, '', -1, 0, 1.5, 1e9, true, [], {}, 'Hub', 'spec..x', 'a'.repeat(300)),
  fc.jsonValue({ maxDepth: 2 }),
  fc.constant(ADD),
  fc.constant(DELETE),
);

/** A valid object with one field, anywhere below its spec, made wrong. */
const brokenObject = validObject.chain((object) => {
  // The spec itself too: an empty spec has no field below it.
  const paths = [['spec'], ...pathsOf(object.spec, ['spec'])];
  return fc
    .tuple(fc.constant(object), fc.constantFrom(...paths), wrongValue)
    .map(([o, p, v]) => mutate(o, p, v));
});

const nested = (depth: number): unknown => JSON.parse(`${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`);

function requestFor(object: unknown, oldObject?: unknown): AdmissionRequest {
  const kind = (object as { kind?: unknown } | null)?.kind;
  return {
    uid: 'uid-1',
    kind: {
      group: GROUP,
      version: 'v1alpha1',
      kind: typeof kind === 'string' ? kind : 'CRDConversionConfig',
    },
    operation: oldObject === undefined ? 'CREATE' : 'UPDATE',
    object,
    oldObject,
  };
}

const cluster = (instances: unknown[] = [], configs: unknown[] = []): ClusterState => ({
  instances,
  configs,
  target: gizmoCrd(TARGET),
  namespace: { exists: true, labels: {} },
  allowances: { allowedImageRepositories: 'registry.example/team/webhook' },
});

function decided(request: AdmissionRequest, state: ClusterState): AdmissionResponse {
  let response: AdmissionResponse | undefined;
  expect(() => readsFor(request, OPERATOR_NAMESPACE), 'readsFor threw').not.toThrow();
  expect(() => {
    response = review(request, state, OPERATOR_NAMESPACE);
  }, 'review threw').not.toThrow();
  const answer = response as AdmissionResponse;
  expect(answer.uid).toBe(request.uid);
  if (!answer.allowed) {
    expect(answer.status?.message.trim().length, 'a refusal must say what to fix').toBeGreaterThan(10);
    expect([400, 422]).toContain(answer.status?.code);
  }
  return answer;
}

function specSchemaOf(kind: unknown) {
  if (kind === 'CRDConversionConfig') return crdConfigSpecSchema;
  if (kind === 'XRDConversionConfig') return xrdConfigSpecSchema;
  return webhookServerSpecSchema;
}

describe('fuzz: ConversionWebhookServer and conversion-config objects', () => {
  it('admits every valid object', () => {
    fc.assert(
      fc.property(validObject, (object) => {
        expect(decided(requestFor(object), cluster()).allowed, JSON.stringify(object)).toBe(true);
      }),
      fuzz(0.5),
    );
  });

  it(
    'answers any broken object without throwing; a spec the schema refuses is refused naming each field',
    () => {
      fc.assert(
        fc.property(brokenObject, fc.option(validObject, { nil: undefined }), (object, old) => {
          const request = requestFor(object, old);
          const answer = decided(request, cluster([cws('other', { default: true })]));
          const { kind, spec } = object as { kind: Kind; spec: unknown };
          const schemaVerdict = specSchemaOf(kind).safeParse(spec);
          if (kind === 'ConversionWebhookServer') return;
          if (!schemaVerdict.success) {
            expect(answer.allowed, 'a config spec the schema refuses must be refused').toBe(false);
            for (const line of answer.status?.message.split('\n') ?? [])
              expect(line, 'each line names the field to fix').toMatch(/^spec[.[:]/);
          }
        }),
        fuzz(),
      );
    },
    fuzzTimeoutMs(3),
  );

  it('refuses through the API schemas with a message for every issue', () => {
    fc.assert(
      fc.property(brokenObject, (object) => {
        const { kind, spec } = object as { kind: Kind; spec: unknown };
        const verdict = specSchemaOf(kind).safeParse(spec);
        if (verdict.success) return;
        for (const issue of verdict.error.issues) expect(issue.message.trim().length).toBeGreaterThan(0);
      }),
      fuzz(),
    );
  });

  it('reads any body as an AdmissionReview or says why not, and survives 10^4 levels of nesting in a spec', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 4 }), (body) => {
        let parsed: ReturnType<typeof parseReview> | undefined;
        expect(() => {
          parsed = parseReview(body);
        }).not.toThrow();
        if (parsed && !parsed.ok) expect(parsed.error.message.length).toBeGreaterThan(0);
      }),
      fuzz(0.5),
    );
    for (const kind of ['ConversionWebhookServer', 'CRDConversionConfig', 'XRDConversionConfig'] as const) {
      const deep = { apiVersion: API_VERSION, kind, metadata: { name: 'd' }, spec: nested(10_000) };
      const deeper = { ...deep, spec: nested(10_001) };
      decided(requestFor(deep), cluster());
      decided(requestFor(deep, deeper), cluster());
    }
  });
});
