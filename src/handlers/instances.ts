// The instances handler: a ConversionWebhookServer made real (docs/instances.md). Per instance:
// the finalizer, the two certificate Secrets, every rendered child server-side applied, and the
// workload part of the status (core/instances/status.ts), written only when it changes; while
// the instance is being deleted, the deletion decision instead (core/instances/deletion.ts) and,
// once nothing holds it, the replicas stopped before the finalizer goes (core/instances/teardown.ts).
//
// Keyed by instance (`work.instances.<p>.<instance>`), so one instance is handled by one replica
// at a time. The router wakes it (instances/triggers.ts) on the instance's own changes, its
// Deployment's, and the configs and targets a pending deletion reads. Time is the one cause
// without an event: a certificate's renewal point, returned as a durable re-check.
//
// Children are applied whole (writer.ts): each is a pure function of the instance, and an apply
// of an unchanged rendering is a no-op for the apiserver. A wake whose rendering this process
// applied lately sends none (instances/applied-renderings.ts): most wakes are targets repointed, which
// change no child. Writes derived from the instance as read (the finalizer, the status) are
// conditional on its resourceVersion.
import type { KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import type { JetStreamClient } from '@nats-io/jetstream';
import { API_VERSION, IN_USE_FINALIZER } from '../api/constants.ts';
import { KINDS, TARGET_VIEW_KINDS } from '../api/resources.ts';
import { WEBHOOK_SERVER_KIND, type WebhookServer } from '../api/webhook-server.ts';
import type { WorkItem } from '../bus/messages.ts';
import {
  describeError,
  done,
  type Handler,
  type HandlerContext,
  recheckAfter,
  recheckAt,
} from '../bus/runtime/index.ts';
import type { ObjectView } from '../bus/view.ts';
import { type ConditionState, findCondition, sameCondition, setCondition } from '../core/conditions.ts';
import { INSTANCE_NAMESPACE_LABEL, INSTANCE_NAMESPACE_OPTED_IN } from '../core/instance-admission.ts';
import { readCertificates } from '../core/instances/certificate-facts.ts';
import { childNames } from '../core/instances/children.ts';
import { DELETION_BLOCKED, decideDeletion } from '../core/instances/deletion.ts';
import { type RenderedInstance, type RenderSettings, renderInstance } from '../core/instances/render.ts';
import type { CertificateIssuer } from '../core/instances/serving-cert.ts';
import { instanceStatus } from '../core/instances/status.ts';
import { decideStop, stoppingCondition, wasStopped } from '../core/instances/teardown.ts';
import { conversionServiceOf, liveConversionOf } from '../core/target-conversion.ts';
import { isForbidden, isNamespaceNotFound } from '../kube/errors.ts';
import type { KubeWriter, ResourceRef } from '../kube/writer.ts';
import type { Clock } from '../runtime/clock.ts';
import { readInstance, readTargetServices } from '../views/view-reads.ts';
import { CONFIG_KINDS, configSubjectOf, INSTANCE_KIND, instanceOf } from './assign/world.ts';
import { enqueueWork } from './enqueue-work.ts';
import { HANDOVER_WORK } from './handover/wakes.ts';
import { type AppliedRenderings, renderingFingerprint } from './instances/applied-renderings.ts';
import { ensureCertificates } from './instances/certificates.ts';
import { SECRETS, type SecretReader } from './instances/secrets.ts';

export const INSTANCES = 'instances';

/** What the view must hold: the instances, their Deployments, and what a deletion decision reads. */
export const INSTANCES_VIEW_KINDS = [INSTANCE_KIND, 'deployment', ...CONFIG_KINDS, ...TARGET_VIEW_KINDS];

const REFS = {
  serviceAccount: { apiVersion: 'v1', resource: 'serviceaccounts', namespaced: true },
  role: { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'roles', namespaced: true },
  roleBinding: { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'rolebindings', namespaced: true },
  service: { apiVersion: 'v1', resource: 'services', namespaced: true },
  podDisruptionBudget: { apiVersion: 'policy/v1', resource: 'poddisruptionbudgets', namespaced: true },
  networkPolicy: { apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', namespaced: true },
  deployment: { apiVersion: 'apps/v1', resource: 'deployments', namespaced: true },
} as const satisfies Record<string, ResourceRef>;

export interface InstancesDeps {
  view: Pick<ObjectView, 'waitFor' | 'record' | 'list' | 'renewTime'>;
  writer: Pick<KubeWriter, 'apply' | 'applyStatus' | 'mergePatch'>;
  secrets: SecretReader;
  issuer: CertificateIssuer;
  clock: Clock;
  /**
   * The settings as of this wake, asked once per wake: the NATS CA in them follows a file that
   * changes while the process runs (instances/nats-ca.ts).
   */
  settings: () => RenderSettings;
  /** Where handover work is published, on the handover's partitions (bus.partitions.handover). */
  handover: { js: Pick<JetStreamClient, 'publish'>; partitions: number };
  /** What this process applied lately, per instance: one per process, shared by every wake. */
  applied: AppliedRenderings;
}

/** The dependencies of one wake: the settings as they were when it began. */
type WakeDeps = Omit<InstancesDeps, 'settings'> & { settings: RenderSettings };

interface DeletionMeta {
  deletionTimestamp?: string;
  finalizers?: string[];
}

export function instancesHandler(deps: InstancesDeps): Handler<WorkItem> {
  return async (item, ctx) => {
    await deps.view.waitFor(item.seq);
    const read = readInstance(deps.view, item.key);
    // Gone: its children went with it (owner references).
    if (read.kind === 'absent') return done;
    if (read.kind === 'unreadable') {
      ctx.log.warn({ reason: read.reason }, 'instance unreadable; not reconciled');
      return done;
    }
    const wake: WakeDeps = { ...deps, settings: deps.settings() };
    const meta = read.object.metadata as DeletionMeta;
    if (meta.deletionTimestamp !== undefined) return handleDeletion(wake, read.object, ctx);
    return reconcile(wake, await ensureFinalizer(wake, read.object, ctx), ctx);
  };
}

/** The finalizer first: an instance must not be deletable past its dependents for a moment. */
async function ensureFinalizer(deps: WakeDeps, instance: WebhookServer, ctx: HandlerContext) {
  const finalizers = (instance.metadata as DeletionMeta).finalizers ?? [];
  if (finalizers.includes(IN_USE_FINALIZER)) return instance;
  const patched = await deps.writer.mergePatch<WebhookServer>(
    KINDS.webhookserver,
    { name: instance.metadata.name, resourceVersion: instance.metadata.resourceVersion ?? '' },
    { metadata: { finalizers: [...finalizers, IN_USE_FINALIZER] } },
    { signal: ctx.signal },
  );
  ctx.log.info('finalizer added');
  // The patched object: its resourceVersion is what the status write is conditional on.
  return {
    ...instance,
    metadata: { ...instance.metadata, resourceVersion: patched.metadata.resourceVersion },
  };
}

/** How often an instance whose namespace does not exist is looked at again. */
const NAMESPACE_RECHECK_MS = 60_000;

async function reconcile(deps: WakeDeps, instance: WebhookServer, ctx: HandlerContext) {
  const rendered = renderInstance(instance, deps.settings);
  if (!rendered.ok) {
    ctx.log.warn({ reason: rendered.error }, 'instance does not render');
    return done;
  }
  const r = rendered.value;
  const nowMs = deps.clock.now();
  const name = instance.metadata.name;
  const fingerprint = renderingFingerprint([...accessChildren(r), r.deployment]);
  const recorded = deploymentOf(deps.view, instance, deps.settings.defaultNamespace);
  const fresh = recorded !== undefined && deps.applied.isFresh(name, fingerprint, deps.clock.monotonic());
  try {
    if (!fresh) await applyAccess(deps, r, ctx.signal);
  } catch (err) {
    // Namespaces are not recorded on the bus, so no event says when one appears or opts in: look
    // again later rather than retry at once, which would hold the partition and starve others.
    if (isNamespaceNotFound(err)) {
      ctx.log.warn(
        { namespace: r.names.namespace },
        'the instance’s namespace does not exist; looking again later',
      );
      return recheckAfter(NAMESPACE_RECHECK_MS, `namespace ${r.names.namespace} does not exist`);
    }
    if (isForbidden(err)) {
      ctx.log.warn(
        { namespace: r.names.namespace, err: describeError(err) },
        `the instance’s namespace has not opted in to instances (label ${INSTANCE_NAMESPACE_LABEL}=${INSTANCE_NAMESPACE_OPTED_IN} and the ` +
          'switchyard:instances RoleBinding, docs/security.md); looking again later',
      );
      return recheckAfter(
        NAMESPACE_RECHECK_MS,
        `namespace ${r.names.namespace} refuses the instances identity`,
      );
    }
    throw err;
  }
  const { recheckAtMs, bundlePem } = await ensureCertificates(
    { secrets: deps.secrets, writer: deps.writer, issuer: deps.issuer },
    {
      instance: instance.metadata.name,
      namespace: r.names.namespace,
      service: r.names.workload,
      caSecret: r.caSecret,
      servingSecret: r.servingSecret,
      publishedBundles: publishedBundles(deps.view, r.names.workload),
      nowMs,
      signal: ctx.signal,
    },
  );
  await wakeHandoverOfUntrusting(deps, r.names.workload, bundlePem, ctx);
  // Last: its Pods mount the serving Secret.
  const deployment =
    fresh && recorded
      ? recorded
      : await deps.writer.apply(REFS.deployment, r.deployment, { signal: ctx.signal });
  if (!fresh) deps.applied.remember(name, fingerprint, deps.clock.monotonic());
  await writeStatus(deps, instance, deployment, undefined, ctx);
  if (recheckAtMs === undefined) return done;
  return recheckAt(recheckAtMs, deps.clock.now(), 'a certificate reaches its renewal point');
}

/**
 * Everything but the certificate Secrets and the Deployment: the identity, its Lease access, the
 * handover's read of the serving Secret (before the Secret exists: the read waits on a grant,
 * never the reverse), the Service, the budget, the replicas' NetworkPolicy, their NATS
 * credentials.
 */
async function applyAccess(deps: WakeDeps, r: RenderedInstance, signal: AbortSignal): Promise<void> {
  for (const wave of accessWaves(r)) {
    // A wave at once: a newcomer's Pods wait on all of it (one write after the other took 4 s
    // of a 300-target rebalance). Every write settles before the first failure is thrown, so
    // none is left in flight behind a retry.
    const writes = await Promise.allSettled(
      wave.flatMap(([ref, child]) => (child ? [deps.writer.apply(ref, child, { signal })] : [])),
    );
    const failed = writes.find((w) => w.status === 'rejected');
    if (failed) throw failed.reason;
  }
}

/**
 * The access children in the order the apiserver needs them: a RoleBinding is refused (404)
 * until the Role it grants exists, since the apiserver reads the Role to check that the writer
 * is not escalating its own permissions.
 */
function accessWaves(r: RenderedInstance): [ResourceRef, KubernetesObject | undefined][][] {
  return [
    [
      [REFS.serviceAccount, r.serviceAccount],
      [REFS.role, r.role],
      [REFS.role, r.trustBundleRole],
      [REFS.service, r.service],
      [REFS.podDisruptionBudget, r.podDisruptionBudget],
      // Before the Deployment: no replica starts open to ports it does not serve.
      [REFS.networkPolicy, r.networkPolicy],
      [SECRETS, r.natsSecret],
    ],
    [
      [REFS.roleBinding, r.roleBinding],
      [REFS.roleBinding, r.trustBundleRoleBinding],
    ],
  ];
}

function accessChildren(r: RenderedInstance): (KubernetesObject | undefined)[] {
  return accessWaves(r).flatMap((wave) => wave.map(([, child]) => child));
}

/**
 * Handover work for every target naming the instance's Service whose caBundle is not the
 * serving Secret's bundle. Nothing else republishes a rotated bundle (the bus records no
 * Secrets), and the serving certificate moves to a new CA only once every such target trusts it
 * (core/instances/serving-cert.ts): without this the old leaf would expire untrusted-new.
 * Level-triggered: the targets' patches are records that wake this instance again, and it
 * finds nothing left to send. The handover re-applies spec.conversion with the bundle it reads.
 */
async function wakeHandoverOfUntrusting(
  deps: WakeDeps,
  service: string,
  bundlePem: string | undefined,
  ctx: HandlerContext,
): Promise<void> {
  if (bundlePem === undefined) return;
  const bundle = Buffer.from(bundlePem).toString('base64');
  const targets = TARGET_VIEW_KINDS.flatMap((kind) => deps.view.list(kind))
    .filter((t) => conversionServiceOf(t) === service)
    .filter((t) => liveConversionOf(t)?.webhook?.clientConfig?.caBundle !== bundle)
    .map((t) => t.metadata.name);
  // Its own cause in the id: plain work for the target caused by the same record must not shadow it.
  for (const target of targets)
    await enqueueWork(deps.handover.js, HANDOVER_WORK, deps.handover.partitions, {
      key: target,
      causeSeq: ctx.seq,
      cause: 'trust',
      fields: { trust: true },
    });
  if (targets.length > 0)
    ctx.log.info({ targets: targets.length }, 'targets woken to trust the current bundle');
}

/**
 * Per target naming the instance's Service: the fingerprints of the CAs in its published caBundle.
 * Each distinct bundle is parsed once: an instance's targets publish the same one or two, and
 * parsing X.509 per target took a wake 174 ms at the p99 with 2,500 targets (BENCHMARKS.md).
 */
function publishedBundles(view: InstancesDeps['view'], service: string): string[][] {
  const parsed = new Map<string, string[]>();
  return TARGET_VIEW_KINDS.flatMap((kind) => view.list(kind))
    .filter((t) => conversionServiceOf(t) === service)
    .map((t) => {
      const caBundle = liveConversionOf(t)?.webhook?.clientConfig?.caBundle ?? '';
      let fingerprints = parsed.get(caBundle);
      if (fingerprints === undefined) {
        const facts = readCertificates(Buffer.from(caBundle, 'base64').toString('utf8')) ?? [];
        fingerprints = facts.map((c) => c.fingerprint);
        parsed.set(caBundle, fingerprints);
      }
      return fingerprints;
    });
}

/**
 * A deleted instance goes in order (core/instances/teardown.ts): held while targets depend on it
 * (deletion.ts); then its Deployment scaled to 0 and the finalizer kept until the replicas have
 * stopped, so each withdraws its Lease while its ServiceAccount and Role still exist; then the
 * finalizer released, and the garbage collector removes the rest.
 */
async function handleDeletion(deps: WakeDeps, instance: WebhookServer, ctx: HandlerContext) {
  const finalizers = (instance.metadata as DeletionMeta).finalizers ?? [];
  // Not held by us: nothing to decide, the apiserver deletes it.
  if (!finalizers.includes(IN_USE_FINALIZER)) return done;
  const decision = decideDeletion({
    instance,
    fleet: deps.view.list(INSTANCE_KIND).map(instanceOf),
    configs: CONFIG_KINDS.flatMap((kind) =>
      deps.view.list(kind).flatMap((o) => configSubjectOf(kind, o) ?? []),
    ),
    targetServices: readTargetServices(deps.view),
  });
  if (decision.action === 'block') {
    const deployment = await restoreStoppedReplicas(deps, instance, ctx);
    await writeStatus(deps, instance, deployment, decision.condition, ctx);
    return done;
  }
  const deployment = await scaleToZero(deps, instance, ctx);
  const stop = decideStop({
    deployment,
    deletionCondition: findCondition(instance.status?.conditions, DELETION_BLOCKED),
    nowMs: deps.clock.now(),
  });
  if (stop.action === 'wait') {
    await writeStatus(deps, instance, deployment, stoppingCondition(decision.condition, stop), ctx, {
      stopping: true,
    });
    ctx.log.info({ ...stop.left, reason: decision.reason }, 'waiting for the replicas to stop');
    return recheckAt(stop.recheckAtMs, deps.clock.now(), 'the wait for the replicas to stop ends');
  }
  await deps.writer.mergePatch(
    KINDS.webhookserver,
    { name: instance.metadata.name, resourceVersion: instance.metadata.resourceVersion ?? '' },
    { metadata: { finalizers: finalizers.filter((f) => f !== IN_USE_FINALIZER) } },
    { signal: ctx.signal },
  );
  const fields = { reason: decision.reason, dependents: decision.dependents.count, stop: stop.reason };
  if (stop.reason === 'StopWaitExpired')
    ctx.log.warn({ ...fields, ...stop.left }, `finalizer released: ${stop.message}`);
  else ctx.log.info(fields, 'finalizer released');
  return done;
}

/**
 * The Deployment scaled to 0, as the apiserver returns it: fresher than the view, and ours even
 * while the view still holds a namesake's. Undefined when there is nothing to scale: the instance
 * no longer renders (it never got a Deployment this way), or its namespace is gone and took the
 * Pods with it.
 */
async function scaleToZero(
  deps: WakeDeps,
  instance: WebhookServer,
  ctx: HandlerContext,
): Promise<V1Deployment | undefined> {
  const rendered = renderInstance({ ...instance, spec: { ...instance.spec, replicas: 0 } }, deps.settings);
  if (!rendered.ok) {
    ctx.log.warn({ reason: rendered.error }, 'instance does not render: no Deployment to scale down');
    return undefined;
  }
  try {
    return await deps.writer.apply(REFS.deployment, rendered.value.deployment, { signal: ctx.signal });
  } catch (err) {
    if (!isNamespaceNotFound(err)) throw err;
    return undefined;
  }
}

/**
 * A deletion blocked again after its replicas were scaled to 0 (a target came to depend on the
 * instance meanwhile) gets them back: what depends on it needs them serving. Returns the
 * Deployment as it now is.
 */
async function restoreStoppedReplicas(deps: WakeDeps, instance: WebhookServer, ctx: HandlerContext) {
  const recorded = deploymentOf(deps.view, instance, deps.settings.defaultNamespace);
  if (!wasStopped(instance, recorded)) return recorded;
  const rendered = renderInstance(instance, deps.settings);
  if (!rendered.ok) return recorded;
  deps.applied.forget(instance.metadata.name);
  const restored = await deps.writer.apply(REFS.deployment, rendered.value.deployment, {
    signal: ctx.signal,
  });
  ctx.log.info({ replicas: instance.spec.replicas }, 'deletion blocked again: replicas restored');
  return restored;
}

function deploymentOf(view: InstancesDeps['view'], instance: WebhookServer, defaultNamespace: string) {
  const { namespace, workload } = childNames(instance, defaultNamespace);
  const record = view.record({ kind: 'deployment', namespace, name: workload });
  return record && !record.omitted ? (record.object as V1Deployment) : undefined;
}

/**
 * The fields this concern owns, applied whole: a server-side apply drops what its manager
 * stated before and leaves out now, so DeletionBlocked is stated only while a deletion waits.
 */
async function writeStatus(
  deps: WakeDeps,
  instance: WebhookServer,
  deployment: V1Deployment | undefined,
  deletion: ConditionState | undefined,
  ctx: HandlerContext,
  options: { stopping?: boolean } = {},
): Promise<void> {
  const nowIso = new Date(deps.clock.now()).toISOString();
  const workload = instanceStatus(instance, deployment, nowIso, options);
  const blocked = deletion && deletionCondition(instance, deletion, nowIso);
  const conditions = [...workload.status.conditions, ...(blocked ? [blocked] : [])];
  const deletionChanged =
    blocked !== undefined &&
    !sameCondition(blocked, findCondition(instance.status?.conditions, blocked.type));
  if (!workload.changed && !deletionChanged) return;
  await deps.writer.applyStatus(
    KINDS.webhookserver,
    {
      apiVersion: API_VERSION,
      kind: WEBHOOK_SERVER_KIND,
      metadata: { name: instance.metadata.name },
      status: { ...workload.status, conditions },
    },
    {
      signal: ctx.signal,
      ...(instance.metadata.resourceVersion && { resourceVersion: instance.metadata.resourceVersion }),
    },
  );
  ctx.log.info(
    { readyReplicas: workload.status.readyReplicas, deletion: deletion?.reason },
    'instance status written',
  );
}

/** The deletion condition as set over the current list: its transition time moves only on a flip. */
function deletionCondition(instance: WebhookServer, deletion: ConditionState, nowIso: string) {
  const list = setCondition(instance.status?.conditions, deletion, nowIso, instance.metadata.generation);
  return findCondition(list, deletion.type);
}
