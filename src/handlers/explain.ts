// Why a target is where it is, and why it has or has not moved: the config, the rule that decided,
// the pool's scores, the resolved instance, what the config's status says, what the live target
// names (and, for an XRD, what the CRDs Crossplane generated from it name: what the apiserver
// routes by), the destination's replicas and what each reports, and the gate's decision now. Read
// from a view of the bus with the same functions the handlers decide with (`resolveIn`,
// `handoverOnView`), so `switchyard explain` says what the handlers would do.
import { instanceOfService } from '../api/constants.ts';
import { conversionConfigSchema, targetNameOf } from '../api/conversion-config.ts';
import { KINDS, TARGET_OF_CONFIG } from '../api/resources.ts';
import { webhookServerSchema } from '../api/webhook-server.ts';
import { leaseState } from '../core/aggregate.ts';
import { type DecidingRule, explain, type MemberScore, subjectOf } from '../core/assignment.ts';
import { findCondition } from '../core/conditions.ts';
import { HANDOVER_READY, type HandoverPolicy } from '../core/handover.ts';
import { conversionServiceOf } from '../core/target-conversion.ts';
import { CONFIG_VIEW_KINDS, parsedList, readRoutes } from '../views/view-reads.ts';
import { type HandoverView, handoverOnView } from './handover.ts';

export interface PodReport {
  pod: string;
  ready: boolean;
  lease: 'live' | 'stale' | 'ahead';
  /** What its served-set Lease says about the target. */
  target: 'serves' | 'unsettled' | 'does-not-serve' | 'truncated' | 'undecodable' | 'viewBehind';
}

export interface TargetExplanation {
  target: string;
  /** Every config converting it, `<kind>/<name>`: more than one is a DuplicateTarget. */
  configs: string[];
  resolution: { instance: string; rule: DecidingRule } | { unresolved: string; message: string };
  /** Every pool member's score, highest first, when the pool decided. */
  scores: MemberScore[];
  /** What the config's status says now. */
  status: {
    assigned: string | undefined;
    handoverReady: { status: string; reason: string; message: string } | undefined;
    handoverDestination: string | undefined;
  };
  /** What the live target's spec.conversion names now. */
  names: { service: string | undefined; instance: string | undefined };
  /**
   * For an XRD target, the CRDs Crossplane generated from it, which are what the apiserver routes
   * its conversions by: what each names, and whether it says what the XRD says.
   */
  routedBy?: { crd: string; exists: boolean; service: string | undefined; followsTarget: boolean }[];
  /** The destination's replicas, as the gate reads them; absent when the gate has nothing to decide. */
  destination?: { instance: string; namespace: string; readyPods: string[]; pods: PodReport[] };
  gate: { decided: false; why: string } | { decided: true; action: string; reason: string; message: string };
}

/** Every target some config converts, sorted. */
export function explainableTargets(view: HandoverView): string[] {
  const configs = parsedList(view, CONFIG_VIEW_KINDS, conversionConfigSchema);
  return [...new Set(configs.map(targetNameOf))].sort();
}

/** The explanation, or undefined when no config converts the target. */
export function explainTarget(
  view: HandoverView,
  target: string,
  opts: { defaultNamespace: string; nowMs: number; policy?: Readonly<HandoverPolicy> | undefined },
): TargetExplanation | undefined {
  const claimants = parsedList(view, CONFIG_VIEW_KINDS, conversionConfigSchema).filter(
    (c) => targetNameOf(c) === target,
  );
  const [config] = claimants;
  if (config === undefined) return undefined;
  const instances = parsedList(view, ['webhookserver'], webhookServerSchema);
  const why = explain(subjectOf(config), instances);
  const resolution =
    claimants.length > 1
      ? { unresolved: 'DuplicateTarget', message: `${claimants.length} configs convert ${target}` }
      : why.resolution.ok
        ? { instance: why.resolution.instance, rule: why.resolution.decidedBy }
        : { unresolved: why.resolution.reason, message: why.resolution.message };
  const ready = findCondition(config.status?.conditions, HANDOVER_READY);
  const targetKind = TARGET_OF_CONFIG[config.kind];
  const live = view.record({ kind: targetKind.viewKind, namespace: '', name: target })?.object;
  const service = conversionServiceOf(live);
  const routes =
    live !== undefined && targetKind.viewKind === KINDS.xrd.viewKind ? readRoutes(view, live) : undefined;
  const gate = handoverOnView(view, target, opts);
  return {
    target,
    configs: claimants.map((c) => `${c.kind}/${c.metadata.name}`),
    resolution,
    scores: claimants.length > 1 ? [] : why.scores,
    status: {
      assigned: config.status?.assignedWebhookServer,
      handoverReady: ready && { status: ready.status, reason: ready.reason, message: ready.message },
      handoverDestination: config.status?.handoverDestination,
    },
    names: { service, instance: instanceOfService(service) },
    ...(routes && {
      routedBy: routes.map((r) => ({
        crd: r.crd,
        exists: r.exists,
        service: r.serviceName,
        followsTarget: r.agrees,
      })),
    }),
    ...(gate.kind === 'decided' && {
      destination: {
        instance: gate.subject.destination,
        namespace: gate.subject.namespace,
        readyPods: [...gate.subject.replicas.readyPods],
        pods: gate.subject.replicas.leases.map((l) => ({
          pod: l.replica,
          ready: gate.subject.replicas.readyPods.includes(l.replica),
          lease: leaseState(l, opts.nowMs),
          target:
            l.report.kind !== 'set'
              ? l.report.kind
              : l.report.served.has(target)
                ? 'serves'
                : l.report.unsettled.has(target)
                  ? 'unsettled'
                  : 'does-not-serve',
        })),
      },
    }),
    gate:
      gate.kind === 'skip'
        ? { decided: false, why: gate.why }
        : gate.decision.action === 'hold'
          ? { decided: true, action: 'hold', reason: gate.decision.reason, message: gate.decision.message }
          : {
              decided: true,
              action: gate.decision.action,
              reason: gate.decision.condition.reason,
              message: gate.decision.condition.message,
            },
  };
}
