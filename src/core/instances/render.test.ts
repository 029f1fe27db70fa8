import { describe, expect, it } from 'vitest';
import {
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
  SERVING_CERT_DIR,
  SWITCHYARD_NODE_OPTIONS,
  WEBHOOK_SERVER_LABEL,
} from '../../api/constants.ts';
import { type WebhookServer, webhookServerSchema } from '../../api/webhook-server.ts';
import { type RenderedInstance, type RenderSettings, renderInstance } from './render.ts';

const SETTINGS: RenderSettings = {
  defaultNamespace: 'switchyard-system',
  image: { repository: 'ghcr.io/example/switchyard', tag: '0.1.0' },
  env: { SWITCHYARD_NATS_URL: 'nats://nats.switchyard-system.svc:4222', SWITCHYARD_LOG_LEVEL: 'info' },
  handoverServiceAccount: { name: 'switchyard-handover', namespace: 'switchyard-system' },
};

/** An instance as the apiserver returns it: parsed by the API schema, so defaults apply. */
function instance(spec: Record<string, unknown> = {}, name = 'blue'): WebhookServer {
  return webhookServerSchema.parse({
    apiVersion: 'switchyard.dev/v1alpha1',
    kind: 'ConversionWebhookServer',
    metadata: { name, uid: 'uid-1', generation: 1 },
    spec,
  });
}

function render(cws: WebhookServer, settings = SETTINGS): RenderedInstance {
  const result = renderInstance(cws, settings);
  if (!result.ok) throw new Error(result.error);
  return result.value;
}

function allObjects(r: RenderedInstance) {
  return [
    r.serviceAccount,
    r.role,
    r.roleBinding,
    r.trustBundleRole,
    r.trustBundleRoleBinding,
    r.service,
    r.deployment,
    r.podDisruptionBudget,
    r.networkPolicy,
    r.servingSecret,
    r.caSecret,
  ].filter((o) => o !== undefined);
}

const container = (r: RenderedInstance) => r.deployment.spec?.template.spec?.containers[0];

describe('renderInstance', () => {
  it.each([
    { name: 'no spec.namespace: the operator namespace', spec: {}, namespace: 'switchyard-system' },
    { name: 'spec.namespace wins', spec: { namespace: 'tenant-a' }, namespace: 'tenant-a' },
  ])('$name', ({ spec, namespace }) => {
    for (const o of allObjects(render(instance(spec)))) expect(o.metadata?.namespace).toBe(namespace);
  });

  it('names every child after the instance, the Service as targets name it', () => {
    const r = render(instance());
    expect(r.service.metadata?.name).toBe('blue-webhook-server');
    expect(r.deployment.metadata?.name).toBe('blue-webhook-server');
    expect(r.podDisruptionBudget.metadata?.name).toBe('blue-webhook-server');
    expect(r.networkPolicy.metadata?.name).toBe('blue-webhook-server');
    expect(r.role.metadata?.name).toBe('blue-webhook-server-leases');
    expect(r.roleBinding.metadata?.name).toBe('blue-webhook-server-leases');
    expect(r.trustBundleRole.metadata?.name).toBe('blue-webhook-server-trust-bundle');
    expect(r.trustBundleRoleBinding.metadata?.name).toBe('blue-webhook-server-trust-bundle');
    expect(r.servingSecret.metadata?.name).toBe('blue-webhook-server-tls');
    expect(r.caSecret.metadata?.name).toBe('blue-webhook-server-ca');
  });

  it('labels every child with managed-by, or the watchers never record its Deployment and EndpointSlices', () => {
    for (const o of allObjects(render(instance()))) {
      expect(o.metadata?.labels?.[MANAGED_BY_LABEL], `${o.kind} unlabelled`).toBe(MANAGED_BY_VALUE);
      expect(o.metadata?.labels?.[WEBHOOK_SERVER_LABEL]).toBe('blue');
    }
  });

  it('owns every child by the cluster-scoped instance: a controller reference with no namespace', () => {
    for (const o of allObjects(render(instance()))) {
      expect(o.metadata?.ownerReferences).toEqual([
        {
          apiVersion: 'switchyard.dev/v1alpha1',
          kind: 'ConversionWebhookServer',
          name: 'blue',
          uid: 'uid-1',
          controller: true,
          blockOwnerDeletion: true,
        },
      ]);
    }
  });

  it('refuses an instance without uid: an owner reference without one would never be collected', () => {
    const cws = instance();
    delete cws.metadata.uid;
    expect(renderInstance(cws, SETTINGS)).toEqual({ ok: false, error: expect.stringContaining('no uid') });
  });

  it('grants the replicas exactly get/create/update/patch on leases, bound to their account', () => {
    const r = render(instance());
    expect(r.role.rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'create', 'update', 'patch'],
      },
    ]);
    expect(r.roleBinding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: 'blue-webhook-server-leases',
    });
    expect(r.roleBinding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'blue-webhook-server', namespace: 'switchyard-system' },
    ]);
    expect(r.deployment.spec?.template.spec?.serviceAccountName).toBe('blue-webhook-server');
  });

  it.each([
    {
      name: 'no spec.namespace: in the operator namespace',
      cws: instance(),
      settings: SETTINGS,
      namespace: 'switchyard-system',
      secret: 'blue-webhook-server-tls',
      handover: { name: 'switchyard-handover', namespace: 'switchyard-system' },
    },
    {
      name: 'a tenant namespace, the handover account where the operator runs',
      cws: instance({ namespace: 'tenant-a' }, 'green'),
      settings: SETTINGS,
      namespace: 'tenant-a',
      secret: 'green-webhook-server-tls',
      handover: { name: 'switchyard-handover', namespace: 'switchyard-system' },
    },
    {
      name: 'an operator installed elsewhere',
      cws: instance({ namespace: 'tenant-a' }),
      settings: {
        ...SETTINGS,
        defaultNamespace: 'ops',
        handoverServiceAccount: { name: 'switchyard-handover', namespace: 'ops' },
      },
      namespace: 'tenant-a',
      secret: 'blue-webhook-server-tls',
      handover: { name: 'switchyard-handover', namespace: 'ops' },
    },
    {
      name: 'the replicas bring their own account: the grant is the handover’s all the same',
      cws: instance({ serviceAccountName: 'shared' }),
      settings: SETTINGS,
      namespace: 'switchyard-system',
      secret: 'blue-webhook-server-tls',
      handover: { name: 'switchyard-handover', namespace: 'switchyard-system' },
    },
  ])('lets the handover get exactly the serving Secret: $name', ({
    cws,
    settings,
    namespace,
    secret,
    handover,
  }) => {
    const r = render(cws, settings);
    expect(r.trustBundleRole.metadata?.namespace).toBe(namespace);
    expect(r.trustBundleRole.rules, 'one Secret by name, get only: no list, no watch, never the CA').toEqual([
      { apiGroups: [''], resources: ['secrets'], resourceNames: [secret], verbs: ['get'] },
    ]);
    expect(r.trustBundleRole.rules?.[0]?.resourceNames).toEqual([r.servingSecret.metadata?.name]);
    expect(r.trustBundleRoleBinding.metadata?.namespace).toBe(namespace);
    expect(r.trustBundleRoleBinding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: r.trustBundleRole.metadata?.name,
    });
    expect(r.trustBundleRoleBinding.subjects).toEqual([{ kind: 'ServiceAccount', ...handover }]);
  });

  it('binds but never owns an account the user brings: deleting the instance must not collect it', () => {
    const r = render(instance({ serviceAccountName: 'shared' }));
    expect(r.serviceAccount).toBeUndefined();
    expect(r.roleBinding.subjects?.[0]?.name).toBe('shared');
    expect(r.deployment.spec?.template.spec?.serviceAccountName).toBe('shared');
  });

  it('serves port 443 to the named container port, selecting exactly its own Pods', () => {
    const r = render(instance());
    expect(r.service.spec?.ports).toEqual([
      { name: 'https', port: 443, protocol: 'TCP', targetPort: 'https' },
    ]);
    expect(container(r)?.ports).toEqual([{ name: 'https', containerPort: 9443, protocol: 'TCP' }]);
    const podLabels = r.deployment.spec?.template.metadata?.labels ?? {};
    for (const [k, v] of Object.entries(r.service.spec?.selector ?? {})) expect(podLabels[k]).toBe(v);
    expect(r.deployment.spec?.selector.matchLabels).toEqual(r.service.spec?.selector);
  });

  it.each([
    { name: 'defaults', cws: instance() },
    {
      name: 'user pod labels, another namespace',
      cws: instance({ namespace: 'tenant-a', podLabels: { team: 'a' } }),
    },
  ])('selects with its NetworkPolicy exactly the Pods its Deployment runs: $name', ({ cws }) => {
    const r = render(cws);
    const selector = r.networkPolicy.spec?.podSelector ?? {};
    const podLabels = r.deployment.spec?.template.metadata?.labels ?? {};
    expect(selector.matchLabels).toEqual(r.deployment.spec?.selector.matchLabels);
    expect(selector.matchExpressions).toBeUndefined();
    for (const [k, v] of Object.entries(selector.matchLabels ?? {}))
      expect(podLabels[k], `the replicas' Pods must carry ${k}`).toBe(v);
    expect(
      render(instance({}, 'green')).networkPolicy.spec?.podSelector?.matchLabels,
      'another instance in the namespace is not selected',
    ).not.toEqual(selector.matchLabels);
    expect(r.networkPolicy.metadata?.namespace).toBe(r.deployment.metadata?.namespace);
  });

  it('lets in, from any source, exactly the ports the replicas serve; egress stays open', () => {
    const r = render(instance());
    const declared = (r.deployment.spec?.template.spec?.containers ?? []).flatMap((c) =>
      (c.ports ?? []).map((p) => ({ port: p.containerPort, protocol: p.protocol })),
    );
    expect(declared.length, 'a replica serves at least its webhook port').toBeGreaterThan(0);
    expect(r.networkPolicy.spec?.policyTypes, 'egress is not restricted: its peers are unknown').toEqual([
      'Ingress',
    ]);
    const rules = r.networkPolicy.spec?.ingress ?? [];
    expect(rules, 'one rule: a second could only widen it').toHaveLength(1);
    expect(Object.keys(rules[0] ?? {}), 'any source: the apiserver’s address cannot be selected').toEqual([
      'ports',
    ]);
    expect(rules[0]?.ports).toEqual(declared);
    // Every port a probe uses is one of them, or the kubelet's probes would be refused.
    const c = container(r);
    for (const probe of [c?.startupProbe, c?.readinessProbe, c?.livenessProbe]) {
      const named = c?.ports?.find((p) => p.name === probe?.httpGet?.port);
      expect(rules[0]?.ports?.map((p) => p.port)).toContain(named?.containerPort);
    }
  });

  it.each([
    { replicas: 1, why: 'allows the eviction, so a single replica never blocks a drain' },
    { replicas: 3, why: 'spaces evictions one at a time' },
  ])('PodDisruptionBudget at $replicas replica(s): maxUnavailable 1 $why', ({ replicas }) => {
    const r = render(instance({ replicas }));
    expect(r.podDisruptionBudget.spec).toEqual({
      maxUnavailable: 1,
      selector: { matchLabels: r.deployment.spec?.selector.matchLabels },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    });
  });

  it('declares the serving Secret as kubernetes.io/tls with no data, and mounts it read-only', () => {
    const r = render(instance());
    expect(r.servingSecret.type).toBe('kubernetes.io/tls');
    expect(r.servingSecret.data).toBeUndefined();
    expect(r.deployment.spec?.template.spec?.volumes).toEqual([
      { name: 'serving-cert', secret: { secretName: 'blue-webhook-server-tls', defaultMode: 0o440 } },
    ]);
    expect(container(r)?.volumeMounts).toEqual([
      { name: 'serving-cert', mountPath: SERVING_CERT_DIR, readOnly: true },
    ]);
  });

  it('runs the webhook-server with its managed flags first, then extraArgs', () => {
    const r = render(instance({ extraArgs: ['--log.level=debug'] }));
    expect(container(r)?.args).toEqual([
      'webhook-server',
      '--instance=blue',
      '--port=9443',
      `--tls-dir=${SERVING_CERT_DIR}`,
      '--log.level=debug',
    ]);
  });

  it('gives the replica its Pod name, namespace and uid by the downward API, the project’s NODE_OPTIONS, then the settings env sorted', () => {
    expect(container(render(instance()))?.env).toEqual([
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      { name: 'POD_UID', valueFrom: { fieldRef: { fieldPath: 'metadata.uid' } } },
      { name: 'NODE_OPTIONS', value: SWITCHYARD_NODE_OPTIONS },
      { name: 'SWITCHYARD_LOG_LEVEL', value: 'info' },
      { name: 'SWITCHYARD_NATS_URL', value: 'nats://nats.switchyard-system.svc:4222' },
    ]);
  });

  it('probes /readyz and /healthz over HTTPS on the serving port', () => {
    const c = container(render(instance()));
    expect(c?.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'https', scheme: 'HTTPS' });
    expect(c?.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
    expect(c?.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'https', scheme: 'HTTPS' });
  });

  it('runs restricted: non-root, no privilege escalation, no capabilities, read-only root, RuntimeDefault seccomp', () => {
    const r = render(instance());
    const pod = r.deployment.spec?.template.spec;
    expect(pod?.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container(r)?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    });
  });

  it('rolls out by surging, never taking a serving replica away first', () => {
    expect(render(instance()).deployment.spec?.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
  });

  it.each([
    { name: 'the project image', image: undefined, expected: 'ghcr.io/example/switchyard:0.1.0' },
    { name: 'own tag', image: { tag: '0.2.0' }, expected: 'ghcr.io/example/switchyard:0.2.0' },
    {
      name: 'a mirror keeps the project tag',
      image: { repository: 'mirror/sy' },
      expected: 'mirror/sy:0.1.0',
    },
    {
      name: 'digest wins over tag',
      image: { tag: 'x', digest: 'sha256:ab' },
      expected: 'ghcr.io/example/switchyard@sha256:ab',
    },
  ])('image: $name', ({ image, expected }) => {
    expect(container(render(instance(image === undefined ? {} : { image })))?.image).toBe(expected);
  });

  it('copies the pod knobs from the spec', () => {
    const r = render(
      instance({
        replicas: 4,
        resources: { limits: { memory: '1Gi' }, requests: { memory: '512Mi', cpu: '1' } },
        nodeSelector: { pool: 'system' },
        tolerations: [{ key: 'dedicated', operator: 'Exists', effect: 'NoSchedule' }],
        affinity: { nodeAffinity: {} },
        priorityClassName: 'system-cluster-critical',
        podAnnotations: { 'example.com/a': '1' },
        image: { pullPolicy: 'Always' },
      }),
    );
    const pod = r.deployment.spec?.template.spec;
    expect(r.deployment.spec?.replicas).toBe(4);
    expect(container(r)?.resources).toEqual({
      limits: { memory: '1Gi' },
      requests: { cpu: '1', memory: '512Mi' },
    });
    expect(container(r)?.imagePullPolicy).toBe('Always');
    expect(pod?.nodeSelector).toEqual({ pool: 'system' });
    expect(pod?.tolerations).toEqual([{ effect: 'NoSchedule', key: 'dedicated', operator: 'Exists' }]);
    expect(pod?.affinity).toEqual({ nodeAffinity: {} });
    expect(pod?.priorityClassName).toBe('system-cluster-critical');
    expect(r.deployment.spec?.template.metadata?.annotations).toEqual({ 'example.com/a': '1' });
  });

  it('lets podLabels add labels but never replace the selector or the managed-by label', () => {
    const r = render(
      instance({
        podLabels: { team: 'x', 'app.kubernetes.io/instance': 'evil', [MANAGED_BY_LABEL]: 'someone' },
      }),
    );
    const labels = r.deployment.spec?.template.metadata?.labels;
    expect(labels?.team).toBe('x');
    expect(labels?.['app.kubernetes.io/instance']).toBe('blue');
    expect(labels?.[MANAGED_BY_LABEL]).toBe(MANAGED_BY_VALUE);
  });

  it('renders byte-identical JSON whatever order the maps arrived in, so an unchanged re-apply is a no-op', () => {
    const spec = {
      nodeSelector: { b: '2', a: '1' },
      podLabels: { z: '1', y: '2' },
      podAnnotations: { q: '1', p: '2' },
      resources: { requests: { memory: '1Gi', cpu: '1' } },
      affinity: { podAntiAffinity: { b: 1, a: 2 } },
    };
    const reversed = {
      affinity: { podAntiAffinity: { a: 2, b: 1 } },
      resources: { requests: { cpu: '1', memory: '1Gi' } },
      podAnnotations: { p: '2', q: '1' },
      podLabels: { y: '2', z: '1' },
      nodeSelector: { a: '1', b: '2' },
    };
    const settingsReversed = {
      ...SETTINGS,
      env: Object.fromEntries(Object.entries(SETTINGS.env ?? {}).reverse()),
    };
    expect(JSON.stringify(render(instance(reversed), settingsReversed))).toBe(
      JSON.stringify(render(instance(spec))),
    );
  });

  it('with the bus’s webhook-server password: a Secret in the instance’s namespace, mounted, and the user named', () => {
    const r = render(instance({ namespace: 'tenant-a' }), { ...SETTINGS, natsPassword: 's3cret' });
    expect(r.natsSecret?.metadata?.name).toBe('blue-webhook-server-nats');
    expect(r.natsSecret?.metadata?.namespace).toBe('tenant-a');
    expect(Buffer.from(r.natsSecret?.data?.password ?? '', 'base64').toString()).toBe('s3cret');
    expect(r.natsSecret?.metadata?.ownerReferences).toEqual(r.service.metadata?.ownerReferences);
    const env = Object.fromEntries((container(r)?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.SWITCHYARD_NATS_USER).toBe('webhook-server');
    expect(env.SWITCHYARD_NATS_PASSWORD_FILE).toBe('/etc/switchyard/nats/password');
    const volume = r.deployment.spec?.template.spec?.volumes?.find(
      (v) => v.secret?.secretName === 'blue-webhook-server-nats',
    );
    expect(container(r)?.volumeMounts?.find((m) => m.name === volume?.name)?.mountPath).toBe(
      '/etc/switchyard/nats',
    );
  });

  it('with the bus’s CA: carried into the same Secret, mounted, and named as nats.tls.caFile', () => {
    const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
    const r = render(instance({ namespace: 'tenant-a' }), {
      ...SETTINGS,
      natsPassword: 's3cret',
      natsCaPem: caPem,
    });
    expect(Buffer.from(r.natsSecret?.data?.['ca.crt'] ?? '', 'base64').toString()).toBe(caPem);
    expect(Buffer.from(r.natsSecret?.data?.password ?? '', 'base64').toString()).toBe('s3cret');
    const env = Object.fromEntries((container(r)?.env ?? []).map((e) => [e.name, e.value]));
    expect(env.SWITCHYARD_NATS_TLS_CA_FILE).toBe('/etc/switchyard/nats/ca.crt');
    expect(container(r)?.volumeMounts?.map((m) => m.mountPath)).toContain('/etc/switchyard/nats');
  });

  it('with the CA alone (a bus without users): the Secret holds the CA only, and no user is named', () => {
    const r = render(instance(), { ...SETTINGS, natsCaPem: 'PEM' });
    expect(Object.keys(r.natsSecret?.data ?? {})).toEqual(['ca.crt']);
    expect(container(r)?.env?.some((e) => e.name === 'SWITCHYARD_NATS_USER')).toBe(false);
    expect(container(r)?.env?.some((e) => e.name === 'SWITCHYARD_NATS_TLS_CA_FILE')).toBe(true);
  });

  it('without it: no Secret, no user, nothing mounted for NATS', () => {
    const r = render(instance());
    expect(r.natsSecret).toBeUndefined();
    expect(container(r)?.env?.some((e) => e.name.startsWith('SWITCHYARD_NATS_USER'))).toBe(false);
    expect(container(r)?.volumeMounts).toHaveLength(1);
  });
});
