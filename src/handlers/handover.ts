// handover: repoint a target's spec.conversion at the instance the resolver picks, once the
// gate (`core/handover.ts`) says the destination can serve it (BRIEF §6).
//
// Keyed by target (`work.handover.<p>.<target>`), so one target is handed over by one replica
// at a time. Assign sends work when a config's resolved instance changes, lease-aggregate when
// what a waiting target's destination serves changes, the router when the target's or its
// config's spec changes (handover/triggers.ts); time (the grace, the stall bound, a Lease
// expiring) comes back as the handler's own durable re-check. The message is only a trigger:
// every input is read from the view at or after the causing record.
//
// The destination is the resolver's answer on the view, the same pure function assign runs
// (BRIEF §3), and the gate acts on it only once the config's status.assignedWebhookServer names
// it too: assign records a new instance together with a False HandoverReady about it, so a True
// verdict is only ever stated about the instance the status names. Assign publishes this work
// before its status write; until the view holds that write the gate holds, and the write's
// record wakes it again (handover/triggers.ts).
//
// Order of effects: the target first, the config's status second. The status records what the
// target says; written first, a crash in between would report a patch that never happened. The
// verdict goes onto the target in the same apply as its spec.conversion (api/handover-verdict.ts),
// so a status write lost to a concurrent writer (409) or a crash is stated again by the next
// look. Both writes are conditional on the resourceVersion the decision read (docs/handlers.md).
import type { KubernetesObject } from '@kubernetes/client-node';
import { API_VERSION, HANDOVER_VERDICT_ANNOTATION } from '../api/constants.ts';
import {
  type ConversionConfig,
  conversionConfigSchema,
  type HandoverProgress,
  targetNameOf,
} from '../api/conversion-config.ts';
import { encodeVerdict, verdictOf } from '../api/handover-verdict.ts';
import {
  KINDS,
  type KindResource,
  RESOURCE_OF_CONFIG,
  TARGET_OF_CONFIG,
  TARGET_VIEW_KINDS,
} from '../api/resources.ts';
import { type WebhookServer, webhookServerSchema } from '../api/webhook-server.ts';
import type { HandoverWork } from '../bus/messages.ts';
import {
  done,
  type Handler,
  type HandlerContext,
  type Outcome,
  recheckAfter,
  recheckAt,
} from '../bus/runtime/index.ts';
import type { ObjectView } from '../bus/view.ts';
import { assignSubjects, fleetOf, subjectOf } from '../core/assignment.ts';
import { findCondition } from '../core/conditions.ts';
import { mayTouchTarget } from '../core/config-validation.ts';
import {
  type DestinationReplicas,
  decideAfterRepoint,
  decideHandover,
  decideMissingTarget,
  type GateDecision,
  HANDOVER_READY,
  type HandoverCondition,
  type HandoverDecision,
  type HandoverInput,
  type HandoverPolicy,
  type VerdictCondition,
} from '../core/handover.ts';
import { decideHandoverStatus, progressOf } from '../core/handover-status.ts';
import { decideInstanceAggregate } from '../core/instance-aggregate.ts';
import { notEstablished, type RouteState } from '../core/routing.ts';
import {
  conversionServiceOf,
  conversionUpToDate,
  desiredConversion,
  keptCaBundleOf,
  liveConversionOf,
  type WebhookConversion,
} from '../core/target-conversion.ts';
import { handoverWaitEvent } from '../core/transition-events.ts';
import type { EventSink, ObjectRef } from '../kube/event-recorder.ts';
import type { KubeWriter } from '../kube/writer.ts';
import { countHandoverDecision, countHandoverRepoint } from '../metrics/worker-metrics.ts';
import type { Clock } from '../runtime/clock.ts';
import { ConfigVerdicts } from '../views/config-verdicts.ts';
import { parseRecorded } from '../views/parse-cache.ts';
import {
  CONFIG_VIEW_KINDS,
  derivedFromView,
  parsedList,
  readExpectedSets,
  readInstance,
  readInstanceLeases,
  readReadyPods,
  readReplicasStableSinceMs,
  readRoutes,
} from '../views/view-reads.ts';
import { RepointEvents } from './handover/repoint-events.ts';

export const HANDOVER = 'handover';

/** What the view must hold: configs and instances (the resolver), targets, the destination's replicas. */
export const HANDOVER_VIEW_KINDS = [
  'crdconfig',
  'xrdconfig',
  'webhookserver',
  ...TARGET_VIEW_KINDS,
  'lease',
  'endpointslice',
] as const;

/**
 * The trust bundle the instance's replicas serve under: the `ca.crt` of its serving Secret,
 * base64 as the Secret's data holds it; or why it cannot be read yet (the Secret or the key is
 * missing, or the grant to read it is not in place yet).
 */
export type TrustBundleReader = (
  instance: string,
  namespace: string,
  signal: AbortSignal,
  /** `fresh`: a bundle read earlier will not do (the work says the bundle may have changed). */
  opts?: { fresh?: boolean },
) => Promise<TrustBundle>;

export type TrustBundle = { kind: 'found'; caBundle: string } | { kind: 'unavailable'; why: string };

export type HandoverView = Pick<ObjectView, 'waitFor' | 'record' | 'list' | 'renewTime' | 'whole'>;

export interface HandoverDeps {
  view: HandoverView;
  writer: Pick<KubeWriter, 'apply' | 'applyStatus'>;
  trustBundle: TrustBundleReader;
  clock: Clock;
  events: EventSink;
  policy: Readonly<HandoverPolicy>;
  /** Where an instance without spec.namespace runs: the operator's namespace. */
  defaultNamespace: string;
}

/**
 * How long to wait for an instance's trust bundle that cannot be read yet. The instances
 * handler writes the serving Secret, and the Role letting this handler read it, as it renders
 * the instance, within seconds; no event announces either (the view records no Secrets, no
 * Roles), so the handler looks again.
 */
const TRUST_BUNDLE_RETRY_MS = 10_000;

export function handoverHandler(deps: HandoverDeps): Handler<HandoverWork> {
  const verdicts = new ConfigVerdicts();
  const repoints = new RepointEvents(deps.events);
  return async (item, ctx) => {
    await deps.view.waitFor(item.seq);
    const claimant = configsByTarget(deps.view).get(item.key)?.[0];
    if (claimant) await verdicts.prepare(deps.view, claimant);
    const nowMs = deps.clock.now();
    const gate = handoverOnView(deps.view, item.key, {
      defaultNamespace: deps.defaultNamespace,
      nowMs,
      policy: deps.policy,
      verdicts,
    });
    if (gate.kind === 'skip') {
      ctx.log.debug({ why: gate.why }, 'nothing to hand over');
      return done;
    }
    if (gate.decision.action === 'hold') {
      countHandoverDecision('hold', gate.decision.reason);
      ctx.log.info({ why: gate.decision.message }, 'holding the handover');
      return done;
    }
    let decision: GateDecision = gate.decision;
    const { config, destination, targetKind } = gate.kind === 'decided' ? gate.subject : gate;
    countHandoverDecision(decision.action, decision.condition.reason);
    const regarding = objectRefOf(config);
    const related = { apiVersion: targetKind.apiVersion, kind: targetKind.kind, name: item.key };
    if (decision.action === 'patch' && gate.kind === 'decided') {
      const pointed = await pointTarget(deps, repoints, item, gate, decision.condition, ctx, nowMs);
      if (pointed.kind === 'no-bundle') return pointed.outcome;
      // The target now says `desired`; for an XRD the apiserver follows only once Crossplane has
      // copied it into the CRDs generated from it, and until then the verdict waits.
      decision = decideAfterRepoint(
        gate.input,
        decision.condition,
        routesAfter(deps.view, gate, pointed.desired),
      );
    }
    const status = decideHandoverStatus({
      current: config.status,
      decision,
      destination,
      generation: config.metadata.generation,
      nowIso: new Date(nowMs).toISOString(),
    });
    if (status.changed) {
      await deps.writer.applyStatus(
        RESOURCE_OF_CONFIG[config.kind],
        {
          apiVersion: API_VERSION,
          kind: config.kind,
          metadata: { name: config.metadata.name },
          status: status.status,
        },
        // Decided on exactly this version: a True verdict beside an assignment written since would
        // say two things at once. A 409 after a repoint loses nothing: the retry finds the target
        // moved and states the verdict the repoint left on it.
        { signal: ctx.signal, resourceVersion: config.metadata.resourceVersion },
      );
      const waitEvent = handoverWaitEvent({
        target: item.key,
        previousReason: findCondition(config.status?.conditions, HANDOVER_READY)?.reason,
        condition: decision.condition,
        since: status.status.conditions[0].lastTransitionTime,
      });
      if (waitEvent) deps.events.record({ regarding, related, ...waitEvent });
    }
    const recheckAtMs = nextLookMs(decision, deps.clock.now());
    if (recheckAtMs === undefined) return done;
    return recheckAt(recheckAtMs, deps.clock.now(), `handover: ${decision.condition.reason}`);
  };
}

/**
 * A move that waits on its destination is looked at again at least this often, besides the
 * times the gate names: every event that can let it through wakes it, but a wake-up lost to a
 * killed worker or a frozen bus otherwise waited for the next Lease expiry (90 s, twice in the
 * chaos suite, issue 27). A look that decides the same writes nothing.
 */
const WAITING_MOVE_LOOK_MS = 10_000;

/** When to look at the target again: the gate's own time, and a waiting move's next look at the latest. */
export function nextLookMs(
  decision: { action: string; condition: { reason: string }; recheckAtMs: number | undefined },
  nowMs: number,
): number | undefined {
  const waitsOnDestination = decision.action === 'wait' && decision.condition.reason !== 'TargetNotFound';
  if (!waitsOnDestination) return decision.recheckAtMs;
  return Math.min(decision.recheckAtMs ?? Number.POSITIVE_INFINITY, nowMs + WAITING_MOVE_LOOK_MS);
}

/**
 * Points the target at the destination unless its conversion already says exactly that, with the
 * verdict beside it; a re-check when the destination's trust bundle cannot be read yet.
 */
async function pointTarget(
  deps: HandoverDeps,
  repoints: RepointEvents,
  item: HandoverWork,
  gate: Extract<HandoverOnView, { kind: 'decided' }>,
  condition: VerdictCondition,
  ctx: HandlerContext,
  nowMs: number,
): Promise<{ kind: 'pointed'; desired: WebhookConversion } | { kind: 'no-bundle'; outcome: Outcome }> {
  const { config, destination, namespace, live, targetKind } = gate.subject;
  // One read of the destination's Secret per move, not per decision: most decisions find the
  // target already moved (its own patch and status write wake it again).
  let caBundle = item.trust ? undefined : keptCaBundleOf(live, destination, namespace);
  if (caBundle === undefined) {
    const bundle = await deps.trustBundle(destination, namespace, ctx.signal, { fresh: item.trust });
    if (bundle.kind === 'unavailable') {
      ctx.log.info({ destination, why: bundle.why }, 'no trust bundle of the destination yet');
      return {
        kind: 'no-bundle',
        outcome: recheckAfter(TRUST_BUNDLE_RETRY_MS, `no trust bundle of ${destination} yet: ${bundle.why}`),
      };
    }
    caBundle = bundle.caBundle;
  }
  const desired = desiredConversion({
    target: item.key,
    instance: destination,
    namespace,
    caBundle,
    conversionReviewVersions: config.spec.conversionReviewVersions,
  });
  if (conversionUpToDate(liveConversionOf(live), desired)) return { kind: 'pointed', desired };
  const verdict = encodeVerdict({
    instance: destination,
    reason: condition.reason,
    message: condition.message,
  });
  await deps.writer.apply(
    targetKind,
    {
      apiVersion: targetKind.apiVersion,
      kind: targetKind.kind,
      metadata: { name: item.key, annotations: { [HANDOVER_VERDICT_ANNOTATION]: verdict } },
      spec: { conversion: desired },
    } as KubernetesObject,
    // Decided on exactly this version of the target: a newer one gets 409 and a new decision.
    { signal: ctx.signal, resourceVersion: live.metadata.resourceVersion },
  );
  const from = gate.currentServiceName;
  ctx.log.info({ from, to: destination, reason: condition.reason }, 'conversion repointed');
  countHandoverRepoint(condition.reason, waitedSeconds(config.status?.handover, destination, nowMs));
  repoints.add(destination, live.metadata.resourceVersion, {
    target: item.key,
    from,
    reason: condition.reason,
  });
  return { kind: 'pointed', desired };
}

/**
 * What the CRDs an XRD target routes by say compared with the XRD as the repoint left it;
 * undefined for a CRD target, which routes by itself.
 */
function routesAfter(
  view: HandoverView,
  gate: Extract<HandoverOnView, { kind: 'decided' }>,
  desired: WebhookConversion,
): readonly RouteState[] | undefined {
  if (gate.input.routes === undefined) return undefined;
  const live = gate.subject.live as { spec?: Record<string, unknown> };
  return readRoutes(view, { ...live, spec: { ...live.spec, conversion: desired } });
}

/** How long the move to `destination` had waited, from the progress the gate kept; 0 if it never waited. */
function waitedSeconds(progress: HandoverProgress | undefined, destination: string, nowMs: number): number {
  if (progress?.destination !== destination) return 0;
  return (nowMs - Date.parse(progress.waitingSince)) / 1000;
}

/** A target the gate decides on: its config, destination and live object, as read from the view. */
export interface HandoverSubject {
  kind: 'handover';
  config: ConversionConfig & { metadata: { resourceVersion: string } };
  destination: string;
  namespace: string;
  targetKind: KindResource;
  live: { metadata: { resourceVersion: string } };
  replicas: DestinationReplicas;
}

/** A target that does not exist, while a config converts it and resolves it. */
export interface MissingTarget {
  kind: 'missing';
  config: ConversionConfig & { metadata: { resourceVersion: string } };
  destination: string;
  targetKind: KindResource;
}

type Subject = { kind: 'skip'; why: string } | HandoverSubject | MissingTarget;

export type HandoverOnView =
  | { kind: 'skip'; why: string }
  | {
      kind: 'decided';
      subject: HandoverSubject;
      currentServiceName: string | undefined;
      /** What the gate decided from: what the handler decides again from once it has repointed. */
      input: HandoverInput;
      decision: HandoverDecision;
    }
  | (MissingTarget & { decision: GateDecision });

/**
 * The gate's decision for a target on the view as it is now: what the handler acts on, and what
 * `switchyard explain` prints, so both always say the same.
 */
export function handoverOnView(
  view: HandoverView,
  target: string,
  opts: {
    defaultNamespace: string;
    nowMs: number;
    policy?: Readonly<HandoverPolicy> | undefined;
    /** The verdicts on configs the caller prepared; a view holding targets whole needs none. */
    verdicts?: ConfigVerdicts;
  },
): HandoverOnView {
  const verdicts = opts.verdicts ?? new ConfigVerdicts();
  const subject = readSubject(view, target, opts.defaultNamespace, opts.nowMs, verdicts);
  if (subject.kind === 'skip') return subject;
  if (subject.kind === 'missing') {
    const { destination, targetKind } = subject;
    return { ...subject, decision: decideMissingTarget({ target, kind: targetKind.kind, destination }) };
  }
  const { config } = subject;
  const currentServiceName = conversionServiceOf(subject.live);
  const routes =
    subject.targetKind.viewKind === KINDS.xrd.viewKind ? readRoutes(view, subject.live) : undefined;
  const input: HandoverInput = {
    target,
    destination: subject.destination,
    currentServiceName,
    assigned: config.status?.assignedWebhookServer,
    recorded: verdictOf(subject.live),
    replicas: subject.replicas,
    nowMs: opts.nowMs,
    progress: progressOf(config.status, subject.destination),
    previous: findCondition(config.status?.conditions, HANDOVER_READY) as HandoverCondition | undefined,
    previousDestination: config.status?.handoverDestination,
    policy: opts.policy,
    routes,
    notEstablished: notEstablished(
      { kind: subject.targetKind.kind, name: target, live: subject.live },
      routes,
    ),
  };
  return { kind: 'decided', subject, currentServiceName, input, decision: decideHandover(input) };
}

/**
 * Everything the gate needs about one target; that it does not exist (its condition says so); or
 * why there is nothing to do: no config, a target the resolver cannot place (assign reports why),
 * a config that does not compile against it (nothing touches a target then), a destination not
 * in the view.
 */
function readSubject(
  view: HandoverView,
  target: string,
  defaultNamespace: string,
  nowMs: number,
  verdicts: ConfigVerdicts,
): Subject {
  // Only the configs claiming this target: a second one makes it a DuplicateTarget, the rest
  // cannot change its resolution.
  const claimants = configsByTarget(view).get(target) ?? [];
  const config = claimants[0];
  if (config === undefined) return { kind: 'skip', why: 'no config converts it' };
  const instances = parsedList(view, ['webhookserver'], webhookServerSchema);
  const resolution = assignSubjects(claimants.map(subjectOf), fleetOf(instances)).get(target);
  if (resolution === undefined || !resolution.ok)
    return { kind: 'skip', why: resolution?.message ?? 'unresolved' };
  const targetKind = TARGET_OF_CONFIG[config.kind];
  const { resourceVersion: configVersion } = config.metadata;
  if (!configVersion) return { kind: 'skip', why: 'recorded without a resourceVersion' };
  const configRead = { ...config, metadata: { ...config.metadata, resourceVersion: configVersion } };
  const record = view.record({ kind: targetKind.viewKind, namespace: '', name: target });
  if (record === undefined)
    return { kind: 'missing', config: configRead, destination: resolution.instance, targetKind };
  const live = record.object as { metadata: { resourceVersion?: string } };
  if (record.omitted) return { kind: 'skip', why: 'the target is recorded without its content' };
  const validation = verdicts.of(view, config);
  if (validation === undefined) return { kind: 'skip', why: 'the verdict on the config was not read yet' };
  if (!mayTouchTarget(validation)) return { kind: 'skip', why: `config verdict ${validation.verdict}` };
  const instance = readInstance(view, resolution.instance);
  if (instance.kind !== 'found')
    return { kind: 'skip', why: `destination ${resolution.instance} ${instance.kind}` };
  const { resourceVersion: targetVersion } = live.metadata;
  if (!targetVersion) return { kind: 'skip', why: 'recorded without a resourceVersion' };
  const namespace = instance.object.spec.namespace ?? defaultNamespace;
  return {
    kind: 'handover',
    config: configRead,
    destination: resolution.instance,
    namespace,
    targetKind,
    live: { ...live, metadata: { ...live.metadata, resourceVersion: targetVersion } },
    replicas: destinationReplicas(view, instance.object, namespace, nowMs),
  };
}

const BY_TARGET = {};

/** The parsed configs by the target they name, derived again only when a config changed. */
function configsByTarget(view: Pick<HandoverView, 'list'>): ReadonlyMap<string, ConversionConfig[]> {
  return derivedFromView(view, CONFIG_VIEW_KINDS, BY_TARGET, (lists) => {
    const out = new Map<string, ConversionConfig[]>();
    for (const object of lists.flat()) {
      const parsed = parseRecorded(conversionConfigSchema, object);
      if (!parsed.success) continue;
      const target = targetNameOf(parsed.data);
      const claimants = out.get(target);
      if (claimants) claimants.push(parsed.data);
      else out.set(target, [parsed.data]);
    }
    return out;
  });
}

/** What an Event about a config names (configs are cluster-scoped: their Events go to `default`). */
function objectRefOf(config: ConversionConfig): ObjectRef {
  return { apiVersion: API_VERSION, kind: config.kind, name: config.metadata.name, uid: config.metadata.uid };
}

// Decoded by the lease-aggregate decision, against the same expected set the replicas encoded
// with: the gate and the instance's status read the same Leases the same way.
function destinationReplicas(
  view: HandoverView,
  instance: WebhookServer,
  namespace: string,
  nowMs: number,
): DestinationReplicas {
  const name = instance.metadata.name;
  const readyPods = readReadyPods(view, name, namespace);
  const { replicas } = decideInstanceAggregate({
    leases: readInstanceLeases(view, name, namespace),
    readyPods,
    expected: readExpectedSets(view)(name),
    current: instance.status,
    nowMs,
  });
  return { ...replicas, stableSinceMs: readReplicasStableSinceMs(view, name, namespace, readyPods) };
}
