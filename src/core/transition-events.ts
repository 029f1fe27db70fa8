// Which Kubernetes Event a handler records for what it just did: only transitions a user acts
// on (a target repointed, a move assigned, a handover that stopped making progress), never a
// re-check that changed nothing. Each Event has a key naming the transition, so a redelivered
// message or a second replica deciding the same thing records it once (kube/event-recorder.ts).
// Pure: the handler adds which objects the Event is about and sends it.
import type { HandoverCondition, HandoverReason } from './handover.ts';

export interface TransitionEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
  key: string;
}

/** Waiting states a user must look at; the others (pending, awaiting reports) resolve themselves. */
const WARNING_WAITS: ReadonlySet<HandoverReason> = new Set([
  'HandoverStalled',
  'HandoverUnknown',
  'RoutingDrifted',
]);

/**
 * When a waiting handover turns into a state that needs a person: stalled, undecidable, or a CRD
 * generated from an XRD target changed behind Crossplane's back.
 */
export function handoverWaitEvent(input: {
  target: string;
  previousReason: string | undefined;
  condition: HandoverCondition;
  /** The condition's lastTransitionTime as written: one Event per entry into the state. */
  since: string;
}): TransitionEvent | undefined {
  const { target, previousReason, condition, since } = input;
  if (!WARNING_WAITS.has(condition.reason) || previousReason === condition.reason) return undefined;
  return {
    type: 'Warning',
    reason: condition.reason,
    action: 'GateHandover',
    note: `${target}: ${condition.message}`,
    key: `wait/${target}/${condition.reason}/${since}`,
  };
}

/** How many names an aggregated Event lists; the rest are counted. */
const NAMES_LISTED = 10;

function someOf(names: readonly string[]): string {
  const shown = names.slice(0, NAMES_LISTED).join(', ');
  return names.length > NAMES_LISTED ? `${shown} and ${names.length - NAMES_LISTED} more` : shown;
}

/**
 * When assign writes an instance's assigned-target list (on the instance's `readVersion`): one
 * Event per change of the list, however many targets it gained or lost, not one per target (a
 * join of 1,000 targets recorded 212 Events, as many apiserver writes as the moves' statuses).
 * The lists, when the status carries them (up to STATUS_LIST_MAX), say which targets came and went.
 */
export function assignedTargetsEvent(input: {
  instance: string;
  readVersion: string;
  before: { targets?: readonly string[] | undefined; count?: number | undefined } | undefined;
  after: { targets?: readonly string[] | undefined; count: number; digest: string };
}): TransitionEvent {
  const { instance, readVersion, before, after } = input;
  const was = before?.count ?? 0;
  let change = `was ${was}`;
  if (before?.targets !== undefined && after.targets !== undefined) {
    const had = new Set(before.targets);
    const has = new Set(after.targets);
    const added = after.targets.filter((t) => !had.has(t));
    const removed = before.targets.filter((t) => !has.has(t));
    change = [
      ...(added.length > 0 ? [`+${added.length}: ${someOf(added)}`] : []),
      ...(removed.length > 0 ? [`−${removed.length}: ${someOf(removed)}`] : []),
    ].join('; ');
  }
  return {
    type: 'Normal',
    reason: 'AssignedTargetsChanged',
    action: 'AssignTargets',
    note: `${after.count} targets resolve to instance ${instance} (${change}); the handover repoints each once ${instance} serves it`,
    key: `assign/${instance}/${readVersion}/${after.digest}`,
  };
}

/** One repoint, as a batch of them reports it. */
export interface RepointDone {
  target: string;
  from: string | undefined;
  reason: string;
}

/**
 * The repoints onto one instance with one verdict, over a short window, as one Event about the
 * instance: a rebalance of 1,000 targets recorded one Event per moved target before. `first`
 * names the batch (its first repoint's target and the version its patch was conditional on), so a
 * batch recorded twice is one Event.
 */
export function repointBatchEvent(input: {
  instance: string;
  service: string;
  reason: string;
  repoints: readonly RepointDone[];
  first: { target: string; readVersion: string };
}): TransitionEvent {
  const { instance, service, reason, repoints, first } = input;
  const names = repoints.map((r) => (r.from ? `${r.target} (was ${r.from})` : r.target));
  return {
    type: reason === 'HandoverUnverified' ? 'Warning' : 'Normal',
    reason,
    action: 'RepointConversion',
    note: `${repoints.length} targets now convert through Service ${service} of instance ${instance}: ${someOf(names)}`,
    key: `repoint/${instance}/${reason}/${first.target}/${first.readVersion}`,
  };
}
