// The handover gate: when may a target's spec.conversion be pointed at the instance the
// resolver now picks, and what does the config's HandoverReady condition say meanwhile.
//
// A move to B is patched only once every *ready Pod* of B (the Pods B's Service sends
// conversions to) has a live Lease reporting the target; until then the source keeps serving,
// because its replicas hold a plan while the live target still names its Service (see
// `shouldHoldPlan`). Counting Pods, not replicas: a terminating Pod's still-live Lease must not
// stand in for a ready Pod that never reported. Any Service the target names that is not B's
// is a source, ours, a deleted instance's or a foreign one: deleting a pool member must never
// repoint its targets unverified. Only a target that names no Service at all is a first apply,
// patched as soon as B has a ready Pod.
//
// Two exceptions decide the rest. If B publishes nothing at all (an old fleet mid-upgrade, or
// a namespace missing the Lease Role), blocking forever would be a regression, so after a grace
// period the move proceeds and says so: HandoverUnverified. The grace counts only time during
// which B had ready Pods and no Lease at all: waiting for readiness, or for an earlier
// destination, does not use it up. A truncated, undecodable or clock-skewed report is
// different: B is publishing, and what it says cannot be used, so the move blocks. So does a
// destination whose Leases are all stale: it publishes (its Role works), but nothing renews.
//
// The gate acts only on the instance the config's status names (`status.assignedWebhookServer`):
// assign writes a new assignment together with a False HandoverReady about it, so a True verdict
// is only ever stated about the instance the status names and the target names (docs/handover.md,
// "What HandoverReady promises"). While the resolver's answer and the status differ, assign has
// not recorded the move yet: the gate holds, writes nothing, and is woken by assign's write.
//
// The decision is pure and takes time as `nowMs`. What it must remember between looks (when
// this wait began, since when B has been silent) is `HandoverProgress`: the handler stores it
// in the config's `status.handover` with the condition it writes, and passes it back, so any
// replica resumes the same clocks after a restart. A young wait is not written
// (core/handover-status.ts); it resumes from assign's AssignmentChanged, and the confirmation
// counts from the replicas' record times (`stableSinceMs`), which every replica reads alike. `recheckAtMs` says when time alone can change the answer (grace end, stall
// threshold, a Lease expiring), for a durable delayed re-check; events do the rest.
import { createHash } from 'node:crypto';
import type { ConditionStatus } from '../api/conditions.ts';
import { webhookServiceName } from '../api/constants.ts';
import type { HandoverProgress } from '../api/conversion-config.ts';
import { type HandoverVerdict, VERDICT_REASONS, type VerdictReason } from '../api/handover-verdict.ts';
import { aggregate, leaseState, nextLeaseTransitionMs, type ReplicaReport } from './aggregate.ts';
import { describeLaggingRoutes, type RouteState } from './routing.ts';

export const HANDOVER_READY = 'HandoverReady';

export interface HandoverPolicy {
  /** How long B may have ready Pods and no Lease at all before a move proceeds unverified. */
  unreportedGraceMs: number;
  /** A move still waiting after this long is called stalled, so operators can alert on it. */
  stallAfterMs: number;
  /**
   * How long every ready Pod of B must go on serving the target, the same Pods ready throughout,
   * before a verified move is patched (0: at once).
   */
  confirmMs: number;
}

/**
 * Grace 90 s. The reference waits 30 s from the start of the move; here the clock starts only
 * once B has ready Pods, so readiness does not eat into it. A replica publishes its Lease as it
 * starts and retries a failed write on each 30 s heartbeat: 90 s is the first write and two
 * retries. Silence by then means B does not publish at all, not that one write failed, which
 * 30 s (one heartbeat) cannot tell apart during a rollout. Stall after 10 min: far beyond any
 * rollout of webhook-server replicas that compile within seconds.
 *
 * Confirm 10 s: a live Lease and a ready endpoint say nothing about the last seconds. A
 * destination replica killed or hung just before the gate looked still counts, with a Lease that
 * stays live for its duration (90 s) and an endpoint that stays ready until its readiness probe
 * fails (three failures a second apart, each up to a 2 s timeout: 6–9 s for a hung one, about
 * 1 s for a dead one, then the EndpointSlice and the bus). Repointed in that window, the
 * apiserver sent conversions to it and they failed (the chaos suite: 1–10 failed conversions per
 * case, issue 27). Waiting until the same ready Pods have served the target for 10 s lets that
 * fault show first; a fault after it is a replica dying while it serves, which no gate foresees.
 */
export const DEFAULT_HANDOVER_POLICY: Readonly<HandoverPolicy> = Object.freeze({
  unreportedGraceMs: 90_000,
  stallAfterMs: 10 * 60_000,
  confirmMs: 10_000,
});

export type HandoverReason =
  | VerdictReason
  | 'AssignmentChanged'
  | 'TargetNotFound'
  | 'TargetNotEstablished'
  | 'DestinationNotReady'
  | 'AwaitingCrossplane'
  | 'RoutingDrifted'
  | 'HandoverAwaitingReports'
  | 'HandoverPending'
  | 'HandoverUnknown'
  | 'HandoverStalled';

export interface HandoverCondition {
  type: typeof HANDOVER_READY;
  status: ConditionStatus;
  reason: HandoverReason;
  message: string;
}

/**
 * `patch`: point the target at the destination (if it does not say so already), then state the
 * True verdict. `wait`: touch nothing, state the False condition. `hold`: touch and state nothing.
 */
export type HandoverAction = 'patch' | 'wait' | 'hold';

export type HandoverDecision = GateDecision | HoldDecision;

export type GateDecision = PatchDecision | WaitDecision;

/** A True verdict: how the target came (or already was) to name the destination. */
export interface VerdictCondition extends HandoverCondition {
  status: 'True';
  reason: VerdictReason;
}

export interface PatchDecision {
  action: 'patch';
  condition: VerdictCondition;
  /** Nothing waits once the target names the destination: the stored progress is removed. */
  progress: undefined;
  recheckAtMs: undefined;
}

export interface WaitDecision {
  action: 'wait';
  condition: HandoverCondition;
  /** What to store in the config's status.handover; undefined: remove it (nothing waits). */
  progress: HandoverProgress | undefined;
  /** When time alone may change this decision (epoch ms); undefined when only an event can. */
  recheckAtMs: number | undefined;
}

/** The status does not name the destination yet: assign's write of it wakes the gate again. */
export interface HoldDecision {
  action: 'hold';
  reason: 'AwaitingAssignment';
  message: string;
}

/** The destination as the gate sees it: which Pods take conversions, and what each published. */
export interface DestinationReplicas {
  /**
   * The destination's ready Pods: endpoints of its Service's EndpointSlices with
   * `conditions.ready` true, by `targetRef.name` (`targetRef.kind` Pod).
   */
  readyPods: readonly string[];
  /** Every served-set Lease of the destination; each names its Pod in `replica` (holderIdentity). */
  leases: readonly ReplicaReport[];
  /**
   * Since when the ready Pods and their reports have stood as they are (epoch ms): the latest
   * recorded change of the Service's EndpointSlices or of a ready Pod's Lease. The confirmation
   * counts from it, so it runs from the replicas' own reports, without a status write to keep it.
   */
  stableSinceMs?: number | undefined;
}

export interface HandoverInput {
  target: string;
  /** The instance the resolver assigns the target to now. */
  destination: string;
  /** The Service the live target's spec.conversion webhook points at; undefined if none. */
  currentServiceName: string | undefined;
  replicas: DestinationReplicas;
  nowMs: number;
  /** status.handover as the last decision returned it, if any. */
  progress?: HandoverProgress | undefined;
  /** The current HandoverReady condition, if any: a verdict on the last move outlives it. */
  previous?: HandoverCondition | undefined;
  /**
   * The instance `previous` is about (status.handoverDestination). A True verdict is kept only
   * when it is about `destination`; one about an earlier destination, or about none recorded, is
   * not the truth about what the target names now.
   */
  previousDestination?: string | undefined;
  /**
   * status.assignedWebhookServer as read. Nothing is repointed and nothing stated unless it is
   * `destination`: a True verdict must describe the instance the status names.
   */
  assigned: string | undefined;
  /**
   * The verdict the target carries from its last repoint (HANDOVER_VERDICT_ANNOTATION), written
   * in the same apply as its spec.conversion: what a look after a lost status write states again.
   */
  recorded?: HandoverVerdict | undefined;
  policy?: Readonly<HandoverPolicy>;
  /**
   * For a target the apiserver does not route by itself (a Crossplane XRD): each CRD it does route
   * by, compared with the target's own conversion (core/routing.ts). Undefined for a CRD target.
   */
  routes?: readonly RouteState[] | undefined;
  /** Why the target cannot take a first apply yet (it or a CRD it routes by is not Established); undefined when it can. */
  notEstablished?: string | undefined;
}

export function decideHandover(input: HandoverInput): HandoverDecision {
  if (input.assigned !== input.destination) {
    const recorded = input.assigned === undefined ? 'names no instance yet' : `names ${input.assigned}`;
    const when =
      input.assigned !== undefined && input.replicas.readyPods.length === 0
        ? `, which it does once ${input.destination} has a ready Pod`
        : '';
    return {
      action: 'hold',
      reason: 'AwaitingAssignment',
      message: `${input.target} resolves to ${input.destination} and its config's status ${recorded}: waiting for assign to record the move${when}`,
    };
  }
  const clock = resumeClock(input);
  if (input.currentServiceName === webhookServiceName(input.destination)) return routed(clock, noMove(input));
  const { target, destination } = input;
  if (input.replicas.readyPods.length === 0) {
    return waitFor(clock, 'DestinationNotReady', `${describe(input)}: ${destination} has no ready Pods`);
  }
  const source = sourceServiceOf(input);
  if (source === undefined) {
    if (input.notEstablished !== undefined)
      return waitFor(clock, 'TargetNotEstablished', `${describe(input)}: ${input.notEstablished}`);
    return patch('FirstApply', `no Service serves ${target} yet; pointing it at ${destination}`);
  }
  return gateMove(clock, source);
}

/**
 * What the config states once the target itself has been pointed at the destination with
 * `verdict`: the verdict where the target is what the apiserver routes by; for an XRD, the verdict
 * only once every generated CRD says the same (`routesAfter`, compared with the conversion as
 * patched), and until then that the move waits for Crossplane.
 */
export function decideAfterRepoint(
  input: HandoverInput,
  verdict: VerdictCondition,
  routesAfter: readonly RouteState[] | undefined,
): GateDecision {
  return routed(resumeClock(input), patch(verdict.reason, verdict.message), routesAfter);
}

/**
 * A move is verified by what the apiserver routes by: for an XRD, every CRD Crossplane generated
 * from it must name what the XRD names before a True verdict may be stated. Until then the
 * apiserver still calls whatever those CRDs name (the source keeps its plan for them:
 * core/expected-set.ts), and the config says what is missing.
 */
function routed(
  clock: WaitClock,
  verdict: PatchDecision,
  routes: readonly RouteState[] | undefined = clock.input.routes,
): GateDecision {
  if (routes === undefined || routes.every((r) => r.agrees)) return verdict;
  const { input } = clock;
  const { target, destination } = input;
  const lagging = describeLaggingRoutes(routes);
  if (drifted(input, routes)) {
    return waitFor(
      clock,
      'RoutingDrifted',
      `${target} names ${destination}, and the CRDs Crossplane generated from it did, but no longer: ${lagging}. ` +
        'Changed by someone other than Crossplane, or Crossplane rendered it again; Crossplane puts back what the XRD ' +
        'says when it next reconciles it, and the replicas that CRD names keep serving meanwhile',
    );
  }
  return waitFor(
    clock,
    'AwaitingCrossplane',
    `${target} names ${destination} (${verdict.condition.reason}); the apiserver routes by the CRDs Crossplane ` +
      `generates from it, which do not yet: ${lagging}`,
  );
}

/**
 * A generated CRD that followed the target to this destination (the last verdict stated was True
 * about it) and now names another Service, or none: not a copy Crossplane has still to make.
 */
function drifted(input: HandoverInput, routes: readonly RouteState[]): boolean {
  const { previous } = input;
  if (previous === undefined || !isVerdict(previous) || input.previousDestination !== input.destination)
    return false;
  const service = webhookServiceName(input.destination);
  return routes.some((r) => r.exists && !r.agrees && r.serviceName !== service);
}

/**
 * The Service conversions of the target go to before the move: the target's own, or, where it
 * names none, one a CRD it routes by still names (an XRD whose conversion was removed while
 * Crossplane has not copied that yet). Undefined only when nothing names a Service: a first apply.
 */
function sourceServiceOf(input: HandoverInput): string | undefined {
  return input.currentServiceName ?? input.routes?.find((r) => r.serviceName !== undefined)?.serviceName;
}

/**
 * The data-plane rule: a replica holds a compiled plan for a target while its instance is the
 * one assigned, or while anything the apiserver may route the target by still names its
 * instance's Service (compared by Service name only): the target's own spec.conversion and, for
 * an XRD, every CRD Crossplane generated from it (`servicesNamingTarget`, core/routing.ts). The
 * second half keeps the losing side serving until the repoint reaches what the apiserver reads,
 * however long Crossplane takes to copy it, and covers moves made by hand-editing
 * webhookServerRef.
 */
export function shouldHoldPlan(
  instance: string,
  assignedInstance: string | undefined,
  namingServices: readonly string[],
): boolean {
  return assignedInstance === instance || namingServices.includes(webhookServiceName(instance));
}

/** The clocks of the wait for this destination, resumed from status.handover when it is for the same one. */
interface WaitClock {
  input: HandoverInput;
  policy: Readonly<HandoverPolicy>;
  waitingSinceMs: number;
  silentSinceMs: number | undefined;
}

function resumeClock(input: HandoverInput): WaitClock {
  const policy = input.policy ?? DEFAULT_HANDOVER_POLICY;
  const saved = input.progress?.destination === input.destination ? input.progress : undefined;
  return {
    input,
    policy,
    waitingSinceMs: pastTime(saved?.waitingSince, input.nowMs),
    silentSinceMs: saved?.silentSince === undefined ? undefined : pastTime(saved.silentSince, input.nowMs),
  };
}

// A stored time that does not parse, or lies ahead of this reader's clock, restarts at now:
// a wait may come out longer than it was, never shorter.
function pastTime(iso: string | undefined, nowMs: number): number {
  const ms = iso === undefined ? Number.NaN : Date.parse(iso);
  return Number.isNaN(ms) ? nowMs : Math.min(ms, nowMs);
}

function describe(input: HandoverInput): string {
  const from = input.currentServiceName === undefined ? '' : ` from Service ${input.currentServiceName}`;
  return `moving ${input.target}${from} to ${input.destination}`;
}

/**
 * The target does not exist (deleted, or not created yet): nothing names any instance, so no
 * verdict about an earlier incarnation may stand. Its creation wakes the gate again.
 */
export function decideMissingTarget(input: {
  target: string;
  /** Its Kind, as the message names it. */
  kind: string;
  destination: string;
}): WaitDecision {
  return {
    action: 'wait',
    condition: {
      type: HANDOVER_READY,
      status: 'False',
      reason: 'TargetNotFound',
      message: `${input.kind} "${input.target}" does not exist; it is pointed at ${input.destination} once it is created`,
    },
    progress: undefined,
    recheckAtMs: undefined,
  };
}

/**
 * The False condition assign states with a new assignment, in the same write: until the gate has
 * looked, nothing is verified about `to`, and a True verdict about the instance before must not
 * stand beside the new name.
 */
export function assignmentChanged(target: string, to: string, from: string | undefined): HandoverCondition {
  const was = from === undefined ? '' : ` (was ${from})`;
  return {
    type: HANDOVER_READY,
    status: 'False',
    reason: 'AssignmentChanged',
    message: `assigned to ${to}${was}; ${target} is pointed at it once ${to} can serve it`,
  };
}

// The verdict of the move that brought the target here, as the target recorded it with the
// repoint, or as the status kept it while it is about this destination. A True verdict about
// another one would name the wrong instance: say what is known instead, that the target already
// names this destination.
function noMove(input: HandoverInput): PatchDecision {
  const { previous, recorded } = input;
  if (recorded?.instance === input.destination) return patch(recorded.reason, recorded.message);
  if (previous !== undefined && isVerdict(previous) && input.previousDestination === input.destination)
    return done(previous);
  return patch(
    'NoMove',
    `${input.target} is already served by ${input.destination} (Service ${webhookServiceName(input.destination)})`,
  );
}

function gateMove(clock: WaitClock, source: string): GateDecision {
  const { input } = clock;
  const { destination, target, nowMs } = input;
  const { readyPods, leases } = input.replicas;
  const move = `moving ${target} from Service ${source} to ${destination}`;
  if (leases.length === 0) return awaitFirstLease(clock, move);
  if (leases.every((l) => leaseState(l, nowMs) === 'stale')) {
    return waitFor(
      clock,
      'HandoverPending',
      `${move}: all ${leases.length} Leases of ${destination} are stale. Its replicas publish but none renews ` +
        "(wedged, or this reader's clock runs ahead of theirs), so the move waits instead of proceeding unverified",
    );
  }
  const ready = new Set(readyPods);
  const ofReadyPods = leases.filter((l) => ready.has(l.replica));
  const agg = aggregate(ofReadyPods, readyPods.length, nowMs);
  if (agg.kind === 'unknown') {
    const who = agg.unreadable.map((u) => `${u.replica} (${u.why}: ${u.detail})`).join(', ');
    return waitFor(
      clock,
      'HandoverUnknown',
      `${move}: blocked, cannot read what ${destination} serves: ${who}`,
    );
  }
  const unreported = readyPods.filter(
    (pod) => !ofReadyPods.some((l) => l.replica === pod && liveAt(l, nowMs)),
  );
  if (unreported.length > 0) {
    return waitFor(
      clock,
      'HandoverPending',
      `${move}: ${readyPods.length - unreported.length} of ${readyPods.length} ready Pods report; ` +
        `no live report from ${listed(unreported)}`,
    );
  }
  if (!agg.servedTargets.includes(target)) {
    const why = agg.unsettledTargets.includes(target)
      ? 'some Pods report it in a part of their set this view cannot settle yet'
      : 'not every ready Pod can serve it yet';
    return waitFor(clock, 'HandoverPending', `${move}: ${why}`);
  }
  return confirmServed(clock, move);
}

// Every ready Pod serves the target: patch once the same Pods have done so for confirmMs. Counted
// from when the Pods and their reports last changed, as recorded, when the caller knows it (a
// Pod that flapped or a report that changed since restarts it), and never from before this wait
// began: a replica that hung just before the move was recorded must have the whole confirmation
// to fail its readiness probe. Otherwise from the gate's first look at these Pods, kept in the
// progress.
function confirmServed(clock: WaitClock, move: string): GateDecision {
  const { input, policy } = clock;
  const { readyPods } = input.replicas;
  const served = `${move}: all ${readyPods.length} ready Pods of ${input.destination} serve it`;
  if (policy.confirmMs <= 0) return patch('HandoverReady', served);
  const pods = podsDigest(readyPods);
  const saved = input.progress?.destination === input.destination ? input.progress.confirming : undefined;
  const stable = input.replicas.stableSinceMs;
  const sinceMs =
    stable !== undefined
      ? Math.min(Math.max(stable, clock.waitingSinceMs), input.nowMs)
      : saved?.pods === pods
        ? pastTime(saved.since, input.nowMs)
        : input.nowMs;
  const confirmedAtMs = sinceMs + policy.confirmMs;
  if (input.nowMs >= confirmedAtMs)
    return patch('HandoverReady', `${served}, and did for ${policy.confirmMs / 1000}s`);
  return waitFor(
    clock,
    'HandoverPending',
    `${served}; confirming that they go on serving it for ${policy.confirmMs / 1000}s before the repoint`,
    { confirming: { since: new Date(sinceMs).toISOString(), pods }, recheckAtMs: confirmedAtMs },
  );
}

/** The ready Pods as one short value: a confirmation stands only while the very same Pods are ready. */
function podsDigest(pods: readonly string[]): string {
  return createHash('sha256')
    .update([...pods].sort().join('\n'))
    .digest('base64url')
    .slice(0, 16);
}

// B has ready Pods and not one Lease: the only state in which the grace runs.
function awaitFirstLease(clock: WaitClock, move: string): GateDecision {
  const { input, policy } = clock;
  const silentSinceMs = clock.silentSinceMs ?? input.nowMs;
  const graceEndsMs = silentSinceMs + policy.unreportedGraceMs;
  if (input.nowMs >= graceEndsMs) {
    return patch(
      'HandoverUnverified',
      `${move} without verification: no Pod of ${input.destination} published a served set while ready ` +
        `for ${policy.unreportedGraceMs / 1000}s (replicas from before Lease publishing, or no Lease Role in its namespace)`,
    );
  }
  return waitFor(
    { ...clock, silentSinceMs },
    'HandoverAwaitingReports',
    `${move}: waiting for ${input.destination}'s ready Pods to publish what they serve`,
    { graceEndsMs },
  );
}

function liveAt(lease: ReplicaReport, nowMs: number): boolean {
  return leaseState(lease, nowMs) === 'live';
}

const LISTED_PODS = 5;

function listed(pods: readonly string[]): string {
  const sorted = [...pods].sort();
  const shown = sorted.slice(0, LISTED_PODS).join(', ');
  return sorted.length > LISTED_PODS ? `${shown} and ${sorted.length - LISTED_PODS} more` : shown;
}

function isVerdict(condition: HandoverCondition): condition is VerdictCondition {
  return condition.status === 'True' && (VERDICT_REASONS as readonly string[]).includes(condition.reason);
}

function patch(reason: VerdictReason, message: string): PatchDecision {
  return done({ type: HANDOVER_READY, status: 'True', reason, message });
}

function done(condition: VerdictCondition): PatchDecision {
  return { action: 'patch', condition, progress: undefined, recheckAtMs: undefined };
}

// A wait that outlasts stallAfterMs keeps waiting, under a reason that says it is stuck. An
// unreadable report is its own verdict (it blocks by design) and keeps its reason.
function waitFor(
  clock: WaitClock,
  reason: HandoverReason,
  message: string,
  extra: {
    graceEndsMs?: number;
    confirming?: NonNullable<HandoverProgress['confirming']>;
    recheckAtMs?: number;
  } = {},
): WaitDecision {
  const { input, policy, waitingSinceMs, silentSinceMs } = clock;
  const { graceEndsMs, confirming } = extra;
  const stallsAtMs = reason === 'HandoverUnknown' ? undefined : waitingSinceMs + policy.stallAfterMs;
  const stalled = stallsAtMs !== undefined && input.nowMs >= stallsAtMs;
  const minutes = Math.floor((input.nowMs - waitingSinceMs) / 60_000);
  const leaseTransitions = input.replicas.leases.map((l) => nextLeaseTransitionMs(l, input.nowMs));
  return {
    action: 'wait',
    condition: {
      type: HANDOVER_READY,
      status: 'False',
      reason: stalled ? 'HandoverStalled' : reason,
      message: stalled ? `${message} (stalled: waiting for ${minutes} min, was ${reason})` : message,
    },
    progress: {
      destination: input.destination,
      waitingSince: new Date(waitingSinceMs).toISOString(),
      ...(graceEndsMs !== undefined && silentSinceMs !== undefined
        ? { silentSince: new Date(silentSinceMs).toISOString() }
        : {}),
      ...(confirming && { confirming }),
    },
    recheckAtMs: earliestAfter(input.nowMs, [
      stallsAtMs,
      graceEndsMs,
      extra.recheckAtMs,
      ...leaseTransitions,
    ]),
  };
}

function earliestAfter(nowMs: number, times: ReadonlyArray<number | undefined>): number | undefined {
  let earliest: number | undefined;
  for (const t of times)
    if (t !== undefined && t > nowMs && (earliest === undefined || t < earliest)) earliest = t;
  return earliest;
}
