// What a ConversionWebhookServer renders into: the objects the instances handler server-side
// applies, as a pure function of the instance and the operator's settings.
//
// Deterministic by construction: the same instance renders byte-identical JSON, whatever order
// its maps arrived in, so re-applying an unchanged instance is a no-op for the apiserver (no new
// resourceVersion, no rollout, no watch event to wake anyone). Maps are emitted with sorted keys;
// lists keep the user's order, because order means something there (arguments, tolerations).
//
// Each piece and why (docs/instances.md says more):
//   Deployment      the replicas; a rollout surges one new Pod before stopping an old one, so
//                   conversions never lose a replica to an update;
//   Service         `<instance>-webhook-server`, port 443, what targets' clientConfig names;
//   ServiceAccount  the replicas' identity, unless spec.serviceAccountName brings one;
//   Role, Binding   get/create/update/patch on leases in this namespace and nothing else: the
//                   one write a replica makes (BRIEF §4);
//   Role, Binding   get on exactly the serving Secret, for the handover's ServiceAccount: the
//                   trust bundle (ca.crt) it publishes as a target's caBundle, and no other Secret;
//   PDB             maxUnavailable 1 (see podDisruptionBudget);
//   NetworkPolicy   ingress to the replicas on the ports they serve only; egress open
//                   (network-policy.ts says why);
//   Secrets         the serving certificate's and its CA's desired shape; their data comes from
//                   serving-cert.ts decisions and the issuer, never from here.
import type {
  V1Container,
  V1Deployment,
  V1EnvVar,
  V1NetworkPolicy,
  V1ObjectMeta,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1Probe,
  V1ResourceRequirements,
  V1Role,
  V1RoleBinding,
  V1Secret,
  V1Service,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import {
  LIVENESS_PATH,
  READINESS_PATH,
  SERVING_CERT_DIR,
  SWITCHYARD_NODE_OPTIONS,
  WEBHOOK_SERVER_COMMAND,
  WEBHOOK_SERVER_PORT,
  WEBHOOK_SERVER_PORT_NAME,
  WEBHOOK_SERVICE_PORT,
} from '../../api/constants.ts';
import type { WebhookServer } from '../../api/webhook-server.ts';
import { compareNames } from '../name-list.ts';
import {
  type ChildNames,
  childLabels,
  childNames,
  ownerReferenceTo,
  reservedLabelKeys,
  selectorLabels,
} from './children.ts';
import { replicaNetworkPolicy } from './network-policy.ts';
import { tlsSecretOf } from './serving-cert.ts';

export interface ImageRef {
  repository: string;
  tag?: string | undefined;
  digest?: string | undefined;
}

export interface RenderSettings {
  /** Where an instance without spec.namespace runs: the operator's own namespace. */
  defaultNamespace: string;
  /** The project's image; spec.image overrides parts of it. */
  image: ImageRef;
  /** Process configuration every replica gets as environment variables (e.g. SWITCHYARD_NATS_URL). */
  env?: Readonly<Record<string, string>> | undefined;
  /** The handover handler's ServiceAccount: the one identity that may read the serving Secret. */
  handoverServiceAccount: Readonly<ServiceAccountRef>;
  /**
   * The password of the bus's `webhook-server` user, when the bus has users (docs/install.md):
   * rendered into a Secret of the instance's namespace that every replica mounts.
   */
  natsPassword?: string | undefined;
  /**
   * The CA the bus's certificate chains to (PEM), when NATS requires TLS: carried into the same
   * Secret, so every replica verifies the server as the handler does (`nats.tls.caFile`).
   */
  natsCaPem?: string | undefined;
}

export interface ServiceAccountRef {
  name: string;
  namespace: string;
}

export interface RenderedInstance {
  names: ChildNames;
  /** Absent when spec.serviceAccountName brings the identity: a shared account is never owned here. */
  serviceAccount: V1ServiceAccount | undefined;
  role: V1Role;
  roleBinding: V1RoleBinding;
  /** `get` on the serving Secret by name, for the handover's ServiceAccount (settings). */
  trustBundleRole: V1Role;
  trustBundleRoleBinding: V1RoleBinding;
  service: V1Service;
  deployment: V1Deployment;
  podDisruptionBudget: V1PodDisruptionBudget;
  /** Ingress to the Deployment's Pods on their container ports only (network-policy.ts). */
  networkPolicy: V1NetworkPolicy;
  /** Desired shape only (name, type, labels, owner); data is the issuer's. */
  servingSecret: V1Secret;
  caSecret: V1Secret;
  /** The replicas' NATS password and CA, data included; absent when the bus has neither users nor TLS. */
  natsSecret: V1Secret | undefined;
}

export type RenderResult = { ok: true; value: RenderedInstance } | { ok: false; error: string };

export const CONTAINER_NAME = 'webhook-server';
const CERT_VOLUME = 'serving-cert';
const NATS_VOLUME = 'nats-credentials';
const NATS_PASSWORD_KEY = 'password';
const NATS_CA_KEY = 'ca.crt';
/** Where every Switchyard container finds its NATS password (deploy/workers mount it there too). */
export const NATS_CREDENTIALS_DIR = '/etc/switchyard/nats';
const WEBHOOK_SERVER_NATS_USER = 'webhook-server';
/** The user and group the container runs as (the distroless "nonroot" ids). */
export const RUN_AS_ID = 65532;

/**
 * Used when spec.resources is unset. Requests only: a memory limit would turn a target-heavy
 * instance into an OOM loop; users who want one set spec.resources.
 */
export const DEFAULT_RESOURCES: Readonly<V1ResourceRequirements> = Object.freeze({
  requests: { cpu: '100m', memory: '128Mi' },
});

/**
 * Startup: 1 s × 300 = the reference operator's 5-minute budget to compile every assigned plan
 * before liveness applies, probed every second: every move to a new instance waits until its
 * replicas are ready and have reported, so a replica's readiness is seen within a second or two
 * of it (a 5 s period cost the demo's newcomer ~5 s per move). Readiness every second too: a
 * started replica joins the Service, and a newcomer's moves begin, at most a second after it is
 * ready (kubelet runs readiness, not startup, once started), and a replica that stops serving
 * leaves the Service (and the handover gate's ready Pods) within 3 s.
 * Liveness restarts only a process that stopped answering for 30 s.
 */
const STARTUP = { periodSeconds: 1, failureThreshold: 300 };
const READINESS = { periodSeconds: 1, failureThreshold: 3 };
const LIVENESS = { periodSeconds: 10, failureThreshold: 3 };
/**
 * Endpoint removal reaches the apiserver's webhook client after the Pod is told to stop; the
 * preStop sleep keeps serving meanwhile. The grace leaves the process 30 s to drain after it.
 */
const PRE_STOP_SLEEP_SECONDS = 5;
export const TERMINATION_GRACE_SECONDS = 45;

export function renderInstance(instance: WebhookServer, settings: RenderSettings): RenderResult {
  const uid = instance.metadata.uid;
  if (uid === undefined || uid === '') {
    return {
      ok: false,
      error: `ConversionWebhookServer ${instance.metadata.name} has no uid: render it as read from the apiserver`,
    };
  }
  const names = childNames(instance, settings.defaultNamespace);
  const meta = (name: string): V1ObjectMeta => ({
    name,
    namespace: names.namespace,
    labels: childLabels(instance.metadata.name),
    ownerReferences: [ownerReferenceTo(instance, uid)],
  });
  const workload = deployment(meta(names.workload), instance, names, settings);
  return {
    ok: true,
    value: {
      names,
      serviceAccount:
        instance.spec.serviceAccountName === undefined
          ? serviceAccount(meta(names.serviceAccount))
          : undefined,
      role: leaseWriterRole(meta(names.leaseWriter)),
      roleBinding: leaseWriterBinding(meta(names.leaseWriter), names),
      trustBundleRole: trustBundleRole(meta(names.trustBundleReader), names),
      trustBundleRoleBinding: trustBundleBinding(
        meta(names.trustBundleReader),
        names,
        settings.handoverServiceAccount,
      ),
      service: service(meta(names.workload), instance.metadata.name),
      deployment: workload,
      podDisruptionBudget: podDisruptionBudget(meta(names.workload), instance.metadata.name),
      networkPolicy: replicaNetworkPolicy(meta(names.workload), workload),
      servingSecret: tlsSecretOf(meta(names.servingSecret)),
      caSecret: tlsSecretOf(meta(names.caSecret)),
      natsSecret: hasNatsSecret(settings) ? natsSecret(meta(names.natsSecret), settings) : undefined,
    },
  };
}

function hasNatsSecret(settings: RenderSettings): boolean {
  return settings.natsPassword !== undefined || settings.natsCaPem !== undefined;
}

function natsSecret(metadata: V1ObjectMeta, settings: RenderSettings): V1Secret {
  const data: Record<string, string> = {};
  if (settings.natsPassword !== undefined) data[NATS_PASSWORD_KEY] = settings.natsPassword;
  if (settings.natsCaPem !== undefined) data[NATS_CA_KEY] = settings.natsCaPem;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata,
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

function serviceAccount(metadata: V1ObjectMeta): V1ServiceAccount {
  return { apiVersion: 'v1', kind: 'ServiceAccount', metadata };
}

/** The exact permissions of a replica: its own served-set Lease, nothing to list or watch. */
export const LEASE_WRITER_RULES = Object.freeze([
  Object.freeze({
    apiGroups: Object.freeze(['coordination.k8s.io']),
    resources: Object.freeze(['leases']),
    verbs: Object.freeze(['get', 'create', 'update', 'patch']),
  }),
]);

function leaseWriterRole(metadata: V1ObjectMeta): V1Role {
  const rules = LEASE_WRITER_RULES.map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
  }));
  return { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata, rules };
}

function leaseWriterBinding(metadata: V1ObjectMeta, names: ChildNames): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: names.leaseWriter },
    subjects: [{ kind: 'ServiceAccount', name: names.serviceAccount, namespace: names.namespace }],
  };
}

/**
 * What the handover may read in the instance's namespace: the serving Secret, by name, `get`
 * only (list and watch cannot be narrowed by name, so none is granted). It needs the `ca.crt`
 * there; RBAC grants whole objects, so the grant also covers the serving key (a ConfigMap holding
 * the bundle alone would narrow that further). Never the CA Secret, whose key mints certificates.
 */
export function trustBundleRules(names: Pick<ChildNames, 'servingSecret'>) {
  return [{ apiGroups: [''], resources: ['secrets'], resourceNames: [names.servingSecret], verbs: ['get'] }];
}

function trustBundleRole(metadata: V1ObjectMeta, names: ChildNames): V1Role {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'Role',
    metadata,
    rules: trustBundleRules(names),
  };
}

function trustBundleBinding(
  metadata: V1ObjectMeta,
  names: ChildNames,
  handover: Readonly<ServiceAccountRef>,
): V1RoleBinding {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata,
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: names.trustBundleReader },
    subjects: [{ kind: 'ServiceAccount', name: handover.name, namespace: handover.namespace }],
  };
}

function service(metadata: V1ObjectMeta, instance: string): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata,
    spec: {
      type: 'ClusterIP',
      selector: selectorLabels(instance),
      ports: [
        {
          name: WEBHOOK_SERVER_PORT_NAME,
          port: WEBHOOK_SERVICE_PORT,
          protocol: 'TCP',
          targetPort: WEBHOOK_SERVER_PORT_NAME,
        },
      ],
    },
  };
}

/**
 * maxUnavailable 1, whatever the replica count. At one replica a budget cannot protect anything
 * without blocking every node drain forever (minAvailable 1 on a single Pod makes `kubectl drain`
 * and the cluster autoscaler wait indefinitely), so it allows the eviction; at many it spaces
 * voluntary evictions one at a time, so N − 1 replicas keep serving. maxUnavailable rather than
 * a minAvailable tracks spec.replicas with no re-render. Pods that are not ready may always be
 * evicted (AlwaysAllow): a crash-looping replica serves nothing and must not block a drain.
 */
function podDisruptionBudget(metadata: V1ObjectMeta, instance: string): V1PodDisruptionBudget {
  return {
    apiVersion: 'policy/v1',
    kind: 'PodDisruptionBudget',
    metadata,
    spec: {
      maxUnavailable: 1,
      selector: { matchLabels: selectorLabels(instance) },
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
    },
  };
}

function deployment(
  metadata: V1ObjectMeta,
  instance: WebhookServer,
  names: ChildNames,
  settings: RenderSettings,
): V1Deployment {
  const spec = instance.spec;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: selectorLabels(instance.metadata.name) },
      // Surge first: an update never takes a serving replica away before its successor is ready.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
      template: {
        metadata: {
          labels: podLabels(instance),
          ...(spec.podAnnotations === undefined ? {} : { annotations: sortedMap(spec.podAnnotations) }),
        },
        spec: podSpec(instance, names, settings),
      },
    },
  };
}

/** The user's pod labels, then ours: selector and attribution labels cannot be overridden. */
function podLabels(instance: WebhookServer): Record<string, string> {
  const reserved = reservedLabelKeys();
  const user = Object.entries(instance.spec.podLabels ?? {}).filter(([k]) => !reserved.has(k));
  return sortedMap({ ...Object.fromEntries(user), ...childLabels(instance.metadata.name) });
}

function podSpec(instance: WebhookServer, names: ChildNames, settings: RenderSettings): V1PodSpec {
  const spec = instance.spec;
  const optional: Partial<V1PodSpec> = {};
  if (spec.nodeSelector !== undefined) optional.nodeSelector = sortedMap(spec.nodeSelector);
  if (spec.tolerations !== undefined) optional.tolerations = canonical(spec.tolerations);
  if (spec.affinity !== undefined) optional.affinity = canonical(spec.affinity);
  if (spec.priorityClassName !== undefined) optional.priorityClassName = spec.priorityClassName;
  return {
    serviceAccountName: names.serviceAccount,
    // The token is needed: the replica writes its Lease with it.
    automountServiceAccountToken: true,
    // A namespace with many Services would otherwise hand every replica thousands of variables.
    enableServiceLinks: false,
    terminationGracePeriodSeconds: TERMINATION_GRACE_SECONDS,
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUN_AS_ID,
      runAsGroup: RUN_AS_ID,
      fsGroup: RUN_AS_ID,
      seccompProfile: { type: 'RuntimeDefault' },
    },
    // Soft: spread replicas over nodes when possible, never leave one unscheduled for it.
    topologySpreadConstraints: [
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: selectorLabels(instance.metadata.name) },
      },
    ],
    ...optional,
    containers: [container(instance, settings)],
    volumes: [
      // Group-readable by the container's group only; the kubelet refreshes the files when the
      // Secret is rotated, and the webhook-server reloads them.
      { name: CERT_VOLUME, secret: { secretName: names.servingSecret, defaultMode: 0o440 } },
      ...(hasNatsSecret(settings)
        ? [{ name: NATS_VOLUME, secret: { secretName: names.natsSecret, defaultMode: 0o440 } }]
        : []),
    ],
  };
}

function container(instance: WebhookServer, settings: RenderSettings): V1Container {
  const spec = instance.spec;
  return {
    name: CONTAINER_NAME,
    image: imageOf(instance, settings.image),
    ...(spec.image?.pullPolicy === undefined ? {} : { imagePullPolicy: spec.image.pullPolicy }),
    args: [...webhookServerArgs(instance.metadata.name), ...(spec.extraArgs ?? [])],
    env: [
      ...downwardApiEnv(),
      ...nodeOptionsEnv(settings.env),
      ...settingsEnv(settings.env),
      ...natsUserEnv(settings),
      ...natsTlsEnv(settings),
    ],
    ports: [{ name: WEBHOOK_SERVER_PORT_NAME, containerPort: WEBHOOK_SERVER_PORT, protocol: 'TCP' }],
    resources: canonical(spec.resources ?? DEFAULT_RESOURCES) as V1ResourceRequirements,
    startupProbe: httpsProbe(LIVENESS_PATH, STARTUP),
    readinessProbe: httpsProbe(READINESS_PATH, READINESS),
    livenessProbe: httpsProbe(LIVENESS_PATH, LIVENESS),
    lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SLEEP_SECONDS } } },
    securityContext: {
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      runAsNonRoot: true,
      capabilities: { drop: ['ALL'] },
    },
    volumeMounts: [
      { name: CERT_VOLUME, mountPath: SERVING_CERT_DIR, readOnly: true },
      ...(hasNatsSecret(settings)
        ? [{ name: NATS_VOLUME, mountPath: NATS_CREDENTIALS_DIR, readOnly: true }]
        : []),
    ],
  };
}

/** The replicas verify the bus's certificate against the CA in their Secret. */
function natsTlsEnv(settings: RenderSettings): V1EnvVar[] {
  if (settings.natsCaPem === undefined) return [];
  return [{ name: 'SWITCHYARD_NATS_TLS_CA_FILE', value: `${NATS_CREDENTIALS_DIR}/${NATS_CA_KEY}` }];
}

/** The replicas connect as the bus's `webhook-server` user, with the password from their Secret. */
function natsUserEnv(settings: RenderSettings): V1EnvVar[] {
  if (settings.natsPassword === undefined) return [];
  return [
    { name: 'SWITCHYARD_NATS_USER', value: WEBHOOK_SERVER_NATS_USER },
    { name: 'SWITCHYARD_NATS_PASSWORD_FILE', value: `${NATS_CREDENTIALS_DIR}/${NATS_PASSWORD_KEY}` },
  ];
}

/** The managed flags; spec.extraArgs come after them. */
export function webhookServerArgs(instance: string): string[] {
  return [
    WEBHOOK_SERVER_COMMAND,
    `--instance=${instance}`,
    `--port=${WEBHOOK_SERVER_PORT}`,
    `--tls-dir=${SERVING_CERT_DIR}`,
  ];
}

/** POD_NAME names the replica's Lease; POD_UID makes the Pod its owner (collected with it). */
function downwardApiEnv(): V1EnvVar[] {
  const field = (name: string, fieldPath: string): V1EnvVar => ({
    name,
    valueFrom: { fieldRef: { fieldPath } },
  });
  return [
    field('POD_NAME', 'metadata.name'),
    field('POD_NAMESPACE', 'metadata.namespace'),
    field('POD_UID', 'metadata.uid'),
  ];
}

/** The project's NODE_OPTIONS, unless the operator's settings name their own. */
function nodeOptionsEnv(env: Readonly<Record<string, string>> | undefined): V1EnvVar[] {
  return env?.NODE_OPTIONS === undefined ? [{ name: 'NODE_OPTIONS', value: SWITCHYARD_NODE_OPTIONS }] : [];
}

function settingsEnv(env: Readonly<Record<string, string>> | undefined): V1EnvVar[] {
  return Object.entries(sortedMap(env ?? {})).map(([name, value]) => ({ name, value }));
}

/** A digest pins the image and wins over a tag; the project's tag applies when neither is given. */
export function imageOf(instance: WebhookServer, project: ImageRef): string {
  const own = instance.spec.image ?? {};
  const repository = own.repository ?? project.repository;
  const pinned = own.digest !== undefined || own.tag !== undefined ? own : project;
  if (pinned.digest !== undefined) return `${repository}@${pinned.digest}`;
  if (pinned.tag !== undefined) return `${repository}:${pinned.tag}`;
  return repository;
}

function httpsProbe(path: string, timing: { periodSeconds: number; failureThreshold: number }): V1Probe {
  return {
    httpGet: { path, port: WEBHOOK_SERVER_PORT_NAME, scheme: 'HTTPS' },
    ...timing,
    timeoutSeconds: 2,
  };
}

function sortedMap(map: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(map).sort(([a], [b]) => compareNames(a, b)));
}

/** Opaque user objects (resources, affinity, tolerations) with every map's keys sorted. */
function canonical<T>(value: T): T {
  if (Array.isArray(value)) return value.map(canonical) as T;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => compareNames(a, b));
    return Object.fromEntries(entries.map(([k, v]) => [k, canonical(v)])) as T;
  }
  return value;
}
