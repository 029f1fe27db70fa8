import { describe, expect, it } from 'vitest';
import { API_VERSION, GROUP } from '../api/constants.ts';
import type { TargetSchema } from '../engine/schema.ts';
import { root, str } from '../engine/test-support.ts';
import { type AdmissionRequest, type ClusterState, parseReview, readsFor, review } from './review.ts';

const POLICY = 'switchyard-system';
const ALLOWANCES = { allowedImageRepositories: 'registry.example/team/webhook' };

type Kind = 'ConversionWebhookServer' | 'CRDConversionConfig' | 'XRDConversionConfig';

function request(
  kind: Kind,
  object: unknown,
  oldObject?: unknown,
  extra: Partial<AdmissionRequest> = {},
): AdmissionRequest {
  return {
    uid: 'uid-1',
    kind: { group: GROUP, version: 'v1alpha1', kind },
    operation: oldObject === undefined ? 'CREATE' : 'UPDATE',
    object,
    oldObject,
    ...extra,
  };
}

const cws = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'ConversionWebhookServer',
  metadata: { name },
  spec: { replicas: 2, default: false, ...spec },
});

const crdConfig = (name: string, target: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'CRDConversionConfig',
  metadata: { name },
  spec: { targetCRD: { name: target }, hubVersion: 'v2', spokes: [{ version: 'v1', rules: [] }], ...spec },
});

const xrdConfig = (name: string, target: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'XRDConversionConfig',
  metadata: { name },
  spec: { targetXRD: { name: target }, hubVersion: 'v2', spokes: [{ version: 'v1', rules: [] }], ...spec },
});

/** A CRD whose storage version v2 calls `spec.size` what v1 calls `spec.replicas`. */
function target(name: string, extraVersions: Record<string, TargetSchema> = {}) {
  const version = (v: string, schema: TargetSchema, storage = false) => ({
    name: v,
    served: true,
    storage,
    schema: { openAPIV3Schema: schema },
  });
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: {
      versions: [
        version('v2', root({ size: str() }), true),
        version('v1', root({ replicas: str() })),
        ...Object.entries(extraVersions).map(([v, s]) => version(v, s)),
      ],
    },
  };
}

const renameRule = {
  strategy: 'FieldRename',
  fieldRename: { hubPath: 'spec.size', spokePath: 'spec.replicas' },
};
const goodSpokes = [{ version: 'v1', rules: [renameRule] }];

const state = (s: Partial<ClusterState> = {}): ClusterState => ({
  instances: [],
  configs: [],
  allowances: ALLOWANCES,
  ...s,
});

describe('admission of ConversionWebhookServers', () => {
  it.each([
    {
      scenario: 'a second default',
      fleet: [cws('main', { default: true })],
      req: request('ConversionWebhookServer', cws('other', { default: true })),
      denied: /at most one ConversionWebhookServer may be marked default, found 2: main, other/,
    },
    {
      scenario: 'sharding on a non-default instance while the default is outside the pool',
      fleet: [cws('main', { default: true }), cws('b')],
      req: request('ConversionWebhookServer', cws('b', { sharding: { enabled: true } }), cws('b')),
      denied: /Enable spec.sharding on "main" first \(a pool of one moves nothing\), then on the others/,
    },
    {
      scenario: 'a non-positive weight',
      fleet: [],
      req: request('ConversionWebhookServer', cws('a', { sharding: { enabled: true, weight: 0 } })),
      denied: /spec.sharding.weight of "a" must be a positive integer, got 0/,
    },
  ])('rejects $scenario, saying how to fix it', ({ fleet, req, denied }) => {
    const response = review(req, state({ instances: fleet }), POLICY);
    expect(response.allowed, 'a fleet that breaks the rule would be admitted').toBe(false);
    expect(response.uid).toBe('uid-1');
    expect(response.status?.code).toBe(422);
    expect(response.status?.message).toMatch(denied);
  });

  it.each([
    {
      scenario: 'sharding on the default first (the stored default is replaced by the request)',
      fleet: [cws('main', { default: true }), cws('b')],
      req: request(
        'ConversionWebhookServer',
        cws('main', { default: true, sharding: { enabled: true } }),
        cws('main', { default: true }),
      ),
    },
    {
      scenario: 'then sharding on another instance',
      fleet: [cws('main', { default: true, sharding: { enabled: true } }), cws('b')],
      req: request('ConversionWebhookServer', cws('b', { sharding: { enabled: true } }), cws('b')),
    },
    {
      scenario: 'an edit that repairs two defaults written while admission was down',
      fleet: [cws('a', { default: true }), cws('b', { default: true })],
      req: request('ConversionWebhookServer', cws('b', { default: false }), cws('b', { default: true })),
    },
    {
      scenario: 'an unrelated instance beside a fleet already in violation',
      fleet: [cws('a', { default: true }), cws('b', { default: true })],
      req: request('ConversionWebhookServer', cws('c', { replicas: 3 })),
    },
  ])('admits $scenario', ({ fleet, req }) => {
    expect(review(req, state({ instances: fleet }), POLICY)).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('reads only the instances and their allowances to decide', () => {
    expect(readsFor(request('ConversionWebhookServer', cws('a')), POLICY)).toEqual({
      instances: true,
      allowancesIn: 'switchyard-system',
    });
  });
});

describe('admission of conversion configs', () => {
  it('rejects a second config for a target, across kinds, naming the first', () => {
    const response = review(
      request('XRDConversionConfig', xrdConfig('x', 'widgets.example.org')),
      state({ configs: [crdConfig('c', 'widgets.example.org')] }),
      POLICY,
    );
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toMatch(
      /"widgets.example.org" is already converted by CRDConversionConfig "c".*delete or retarget that config first/,
    );
  });

  it('rejects rule errors the engine finds against the live target, with the fix', () => {
    const response = review(
      request('CRDConversionConfig', crdConfig('c', 'widgets.example.org')),
      state({ target: target('widgets.example.org') }),
      POLICY,
    );
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toMatch(
      /^error UnclaimedField spokes\[v1\] spec\.(replicas|size):.* Fix: /m,
    );
  });

  it('rejects a spec the API schema refuses (rules are schemaless in the CRD), at the path in the YAML', () => {
    const bad = crdConfig('c', 't.example.org', {
      spokes: [{ version: 'v1', rules: [{ strategy: 'Rename', fieldRename: {} }] }],
    });
    const response = review(request('CRDConversionConfig', bad), state(), POLICY);
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toMatch(
      /^spec\.spokes\[0\]\.rules\[0\]\.strategy: strategy "Rename" is not supported; the supported strategies are FieldRename/,
    );
  });

  it('admits a config whose rules compile, with no warning', () => {
    const response = review(
      request('CRDConversionConfig', crdConfig('c', 'widgets.example.org', { spokes: goodSpokes })),
      state({ target: target('widgets.example.org'), configs: [crdConfig('c', 'widgets.example.org')] }),
      POLICY,
    );
    expect(response).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('admits a pin to a missing instance with a warning that names it', () => {
    const pinned = crdConfig('c', 'widgets.example.org', {
      spokes: goodSpokes,
      webhookServerRef: { name: 'later' },
    });
    const response = review(
      request('CRDConversionConfig', pinned),
      state({ target: target('widgets.example.org'), instances: [cws('main')] }),
      POLICY,
    );
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual([
      expect.stringMatching(
        /^spec.webhookServerRef names ConversionWebhookServer "later", which does not exist/,
      ),
    ]);
  });

  it('admits a pin to an existing instance without a warning', () => {
    const pinned = crdConfig('c', 'widgets.example.org', {
      spokes: goodSpokes,
      webhookServerRef: { name: 'main' },
    });
    const response = review(
      request('CRDConversionConfig', pinned),
      state({ target: target('widgets.example.org'), instances: [cws('main')] }),
      POLICY,
    );
    expect(response).toEqual({ uid: 'uid-1', allowed: true });
  });

  it('admits a config whose target does not exist yet, saying when it will be compiled', () => {
    const response = review(
      request('XRDConversionConfig', xrdConfig('x', 'xwidgets.example.org')),
      state(),
      POLICY,
    );
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual([
      expect.stringMatching(/^CompositeResourceDefinition "xwidgets.example.org" does not exist yet/),
    ]);
  });

  it("passes the engine's warnings on as admission warnings", () => {
    const withUnlisted = target('widgets.example.org', { v3: root({ other: str() }) });
    const response = review(
      request('CRDConversionConfig', crdConfig('c', 'widgets.example.org', { spokes: goodSpokes })),
      state({ target: withUnlisted }),
      POLICY,
    );
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual([expect.stringMatching(/^warning UnlistedServedVersion spokes\[v3\]/)]);
  });

  it('keeps warnings on a denial, so the writer sees every problem in one round', () => {
    const response = review(
      request('CRDConversionConfig', crdConfig('c', 'w.example.org', { webhookServerRef: { name: 'gone' } })),
      state({ configs: [xrdConfig('x', 'w.example.org')] }),
      POLICY,
    );
    expect(response.allowed).toBe(false);
    expect(response.warnings).toHaveLength(2);
  });

  it('admits a write that leaves the spec as stored, without reading anything (finalizers never wedge)', () => {
    const stored = crdConfig('c', 'widgets.example.org');
    const withFinalizer = { ...stored, metadata: { name: 'c', finalizers: ['switchyard.dev/revert'] } };
    const req = request('CRDConversionConfig', withFinalizer, stored);
    expect(readsFor(req, POLICY)).toEqual({ instances: false });
    // The target drifted so the stored rules no longer compile; the metadata write still passes.
    expect(review(req, state({ target: target('widgets.example.org') }), POLICY)).toEqual({
      uid: 'uid-1',
      allowed: true,
    });
  });

  it('reads the instances, the configs of both kinds with the same target, and the target of the right kind', () => {
    expect(readsFor(request('XRDConversionConfig', xrdConfig('x', 'xw.example.org')), POLICY)).toEqual({
      instances: true,
      configs: { targeting: 'xw.example.org' },
      target: { kind: 'CompositeResourceDefinition', name: 'xw.example.org' },
    });
  });
});

describe('requests the webhook does not review', () => {
  it.each([
    {
      scenario: 'a DELETE',
      req: request('ConversionWebhookServer', null, undefined, { operation: 'DELETE' }),
    },
    {
      scenario: 'a status subresource write',
      req: request('CRDConversionConfig', crdConfig('c', 't.x.io'), crdConfig('c', 'u.x.io'), {
        subResource: 'status',
      }),
    },
    {
      scenario: 'another group',
      req: { ...request('CRDConversionConfig', {}), kind: { group: 'x.io', version: 'v1', kind: 'Other' } },
    },
  ])('passes $scenario without reading the cluster', ({ req }) => {
    expect(readsFor(req, POLICY)).toEqual({ instances: false });
    expect(review(req, state(), POLICY)).toEqual({ uid: 'uid-1', allowed: true });
  });
});

describe('a target’s conversion changed by the handover identity', () => {
  const HANDOVER = `system:serviceaccount:${POLICY}:switchyard-handover`;
  const pointedAt = (crd: ReturnType<typeof target>, service: string) => ({
    ...crd,
    spec: {
      ...crd.spec,
      conversion: {
        strategy: 'Webhook',
        webhook: { clientConfig: { service: { namespace: POLICY, name: service, path: '/convert' } } },
      },
    },
  });
  const repoint = (
    name: string,
    username = HANDOVER,
    group = 'apiextensions.k8s.io',
    kind = 'CustomResourceDefinition',
  ) => {
    const before = target(name);
    return {
      uid: 'uid-1',
      kind: { group, version: 'v1', kind },
      operation: 'UPDATE' as const,
      object: pointedAt(before, 'a-webhook-server'),
      oldObject: before,
      userInfo: { username },
    };
  };

  it("admits it while a config of the matching kind targets the CRD, reading only that target's configs", () => {
    const req = repoint('widgets.x.io');
    expect(readsFor(req, POLICY)).toEqual({ instances: false, configs: { targeting: 'widgets.x.io' } });
    expect(review(req, state({ configs: [crdConfig('c', 'widgets.x.io')] }), POLICY)).toEqual({
      uid: 'uid-1',
      allowed: true,
    });
  });

  it('refuses it for a CRD no config targets, saying why (an XRD config of that name does not count)', () => {
    const verdict = review(
      repoint('widgets.x.io'),
      state({ configs: [xrdConfig('x', 'widgets.x.io')] }),
      POLICY,
    );
    expect(verdict.allowed).toBe(false);
    expect(verdict.status).toMatchObject({ code: 403, reason: 'Forbidden' });
    expect(verdict.status?.message).toContain('none targets "widgets.x.io"');
    expect(verdict.status?.message).toContain('CRDConversionConfig');
  });

  it('holds an XRD to an XRD config', () => {
    const xrd = repoint(
      'xwidgets.x.io',
      HANDOVER,
      'apiextensions.crossplane.io',
      'CompositeResourceDefinition',
    );
    expect(review(xrd, state({ configs: [crdConfig('c', 'xwidgets.x.io')] }), POLICY).allowed).toBe(false);
    expect(review(xrd, state({ configs: [xrdConfig('x', 'xwidgets.x.io')] }), POLICY).allowed).toBe(true);
  });

  it.each([
    { scenario: 'another identity', req: repoint('widgets.x.io', 'switchyard:admin') },
    {
      scenario: 'a handover in another operator namespace',
      req: repoint('widgets.x.io', 'system:serviceaccount:elsewhere:switchyard-handover'),
    },
    {
      scenario: 'a write that leaves the conversion as stored (the verdict annotation)',
      req: { ...repoint('widgets.x.io'), object: target('widgets.x.io') },
    },
    { scenario: 'a kind of that name in another group', req: repoint('widgets.x.io', HANDOVER, 'x.io') },
  ])('passes $scenario unchecked', ({ req }) => {
    expect(readsFor(req, POLICY)).toEqual({ instances: false });
    expect(review(req, state(), POLICY)).toEqual({ uid: 'uid-1', allowed: true });
  });
});

describe('parseReview', () => {
  it('reads an admission.k8s.io/v1 AdmissionReview', () => {
    const body = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: request('ConversionWebhookServer', cws('a')),
    };
    expect(parseReview(body)).toMatchObject({ ok: true, value: { uid: 'uid-1', operation: 'CREATE' } });
  });

  it('echoes the uid of a request it cannot review, when it can read it', () => {
    const body = { apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: { uid: 'u-7' } };
    expect(parseReview(body)).toMatchObject({ ok: false, error: { uid: 'u-7' } });
  });

  it.each([null, 'text', { request: { uid: 3 } }])('names no uid when there is none to read (%j)', (body) => {
    const parsed = parseReview(body);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) {
      expect(parsed.error.uid).toBeUndefined();
      expect(parsed.error.message).toMatch(/^not an admission.k8s.io\/v1 AdmissionReview request/);
    }
  });
});

describe('what an instance may ask Switchyard to run', () => {
  const optedIn = { exists: true as const, labels: { 'switchyard.dev/instances': 'allowed' } };

  it('reads the namespace an instance names, and not the operator’s own', () => {
    expect(readsFor(request('ConversionWebhookServer', cws('a', { namespace: 'team-a' })), POLICY)).toEqual({
      instances: true,
      allowancesIn: 'switchyard-system',
      namespace: 'team-a',
    });
    expect(readsFor(request('ConversionWebhookServer', cws('a')), POLICY)).toEqual({
      instances: true,
      allowancesIn: 'switchyard-system',
    });
  });

  it('admits an instance in an opted-in namespace with the project image, its own account and known flags', () => {
    const req = request(
      'ConversionWebhookServer',
      cws('a', { namespace: 'team-a', extraArgs: ['--log.level=debug', '--kubernetes.qps=20'] }),
    );
    expect(review(req, state({ namespace: optedIn }), POLICY)).toEqual({ uid: 'uid-1', allowed: true });
  });

  it.each([
    [
      'a namespace that did not opt in',
      { namespace: 'kube-system' },
      { exists: true as const, labels: {} },
      /namespace "kube-system" does not run ConversionWebhookServers: .*switchyard.dev\/instances=allowed/,
    ],
    [
      'a namespace that does not exist',
      { namespace: 'nope' },
      { exists: false as const },
      /spec.namespace "nope" does not exist/,
    ],
    [
      'an image not on the list',
      { image: { repository: 'evil/miner' } },
      undefined,
      /spec.image.repository "evil\/miner" is not an allowed image \(allowed: registry.example\/team\/webhook\)/,
    ],
    [
      'a ServiceAccount of the user’s choosing',
      { serviceAccountName: 'cluster-admin-sa' },
      undefined,
      /spec.serviceAccountName is not allowed/,
    ],
    [
      'a managed flag',
      { extraArgs: ['--instance=other'] },
      undefined,
      /"--instance=other" is not a webhook-server setting a user may change/,
    ],
    ['another bus', { extraArgs: ['--nats.url=nats://evil:4222'] }, undefined, /--nats.url/],
    ['a config file', { extraArgs: ['--config=/etc/passwd'] }, undefined, /--config/],
    [
      'a flag and its value as two entries',
      { extraArgs: ['--log.level', 'debug'] },
      undefined,
      /"--log.level"/,
    ],
  ])('refuses %s, saying how to fix it', (_what, spec, namespace, message) => {
    const req = request('ConversionWebhookServer', cws('a', spec));
    const response = review(req, state(namespace ? { namespace } : {}), POLICY);
    expect(response.allowed).toBe(false);
    expect(response.status?.code).toBe(422);
    expect(response.status?.message).toMatch(message);
  });

  it('admits an allowed image and, when the configuration allows it, a ServiceAccount', () => {
    const req = request(
      'ConversionWebhookServer',
      cws('a', { image: { repository: 'registry.example/team/webhook' }, serviceAccountName: 'shared' }),
    );
    const allowances = { ...ALLOWANCES, allowServiceAccountName: 'true' };
    expect(review(req, state({ allowances }), POLICY)).toEqual({
      uid: 'uid-1',
      allowed: true,
    });
  });

  it('admits no instance while the ConfigMap of allowances is missing, and says how to fix it', () => {
    const response = review(
      request('ConversionWebhookServer', cws('a')),
      { instances: [], configs: [] },
      POLICY,
    );
    expect(response.allowed).toBe(false);
    expect(response.status?.message).toMatch(
      /ConfigMap switchyard-system\/switchyard-instance-policy, which says what instances may ask for, is missing: restore it/,
    );
  });

  it('lists every rule an instance breaks at once', () => {
    const req = request(
      'ConversionWebhookServer',
      cws('a', {
        namespace: 'x',
        image: { repository: 'evil' },
        serviceAccountName: 's',
        extraArgs: ['--port=1'],
      }),
    );
    const message =
      review(req, state({ namespace: { exists: true, labels: {} } }), POLICY).status?.message ?? '';
    expect(message.split('\n')).toHaveLength(4);
  });
});
