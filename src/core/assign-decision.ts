// What the assign handler writes, decided from a resolution and the status as it is: the
// config's `assignedWebhookServer`/`webhookPath` and `Assigned` condition (and, with a new
// instance, the reset of `HandoverReady`), the instance's
// assigned-target list, and whether the config moved (which is what handover work is for).
// Pure; every answer is "write exactly this" or "nothing to write", so a no-op reconcile makes
// no request at all.
//
// An unresolvable config (its pinned instance is missing, no instance qualifies, two configs
// claim its target) is never given a guess: `Assigned=False` says why and how to fix it, and
// `assignedWebhookServer` keeps naming the instance that serves the target today, because the
// target's conversion still points there (handover moves it only to a resolved instance).
//
// A move onto an instance with no ready replica is held: nothing is written, the decision (with
// what it waits for) goes on the bus, and the instance's first ready replica wakes the config
// again (assign/triggers.ts). Recording it earlier only churns: the handover cannot act on it,
// and during a join its ~2 status writes per target share the apiserver's queue with the very
// writes that start the newcomer. The status meanwhile says what is true: the source serves it.
// So a move is held only off a source that can serve: never a first assignment (nothing serves
// the target yet), nor a move off an instance that is gone or has no ready replica itself (it
// serves nothing, and holding would only keep the status naming it). On a fresh install the
// watches can record a config before the instance it resolves to; its first assignment then goes
// elsewhere, and the move that corrects it must not wait on a source that never served it.
//
// A new instance and the reset of HandoverReady are one write. Written apart, a reader would see
// `assignedWebhookServer: b` beside a True verdict about the move to a, while the target still
// names a (`kubectl wait --for=condition=HandoverReady` would return before the move). The reset
// is a False condition about b, stated with `handoverDestination: b`, as a JSON merge patch on
// exactly the version the decision read: a merge patch replaces the whole conditions list, so it
// is the list as read with two entries replaced. Not server-side apply: an apply that states
// HandoverReady makes assign an owner of it, and assign's next apply, which states only
// `Assigned`, would remove the entry the handover has not stated again since.

import type { Condition } from '../api/conditions.ts';
import { webhookPath } from '../api/constants.ts';
import type { ConfigStatus } from '../api/conversion-config.ts';
import type { WebhookServerStatus } from '../api/webhook-server.ts';
import type { Resolution } from './assignment.ts';
import { type ConditionState, findCondition, sameCondition, setCondition } from './conditions.ts';
import { assignmentChanged } from './handover.ts';
import { targetListStatus } from './status-lists.ts';

export const ASSIGNED_CONDITION = 'Assigned';

/** The part of a config's status that assign owns (its field manager's fields). */
export interface ConfigAssignmentStatus {
  assignedWebhookServer?: string;
  webhookPath?: string;
  conditions: [Condition];
}

export interface Move {
  /** Absent on a first assignment. */
  from?: string;
  to: string;
}

/**
 * A new instance, recorded with the HandoverReady reset: every status field a merge patch of the
 * read version states.
 */
export interface ReassignmentStatus {
  assignedWebhookServer: string;
  webhookPath: string;
  /** The instance the reset HandoverReady is about: the new one. */
  handoverDestination: string;
  /** The whole list as read, `Assigned` and `HandoverReady` replaced (a merge patch replaces lists). */
  conditions: Condition[];
}

export type ConfigAssignmentWrite =
  /** Server-side apply of assign's own fields (`Assigned` its only condition). */
  | { via: 'apply'; status: ConfigAssignmentStatus }
  /** A JSON merge patch of the version the decision read. */
  | { via: 'mergePatch'; status: ReassignmentStatus };

export interface ConfigAssignmentDecision {
  /** What to write; undefined when the status already says it, or the move is held. */
  write: ConfigAssignmentWrite | undefined;
  /** Set when the resolved instance differs from the one the status names, and the move is recorded now. */
  move: Move | undefined;
  /** A move not recorded yet: its destination has no ready replica. */
  held?: HeldMove;
}

export interface HeldMove {
  from: string;
  to: string;
  message: string;
}

/** What assign knows of the instances a move goes from and to. */
export interface InstanceReadiness {
  /**
   * The instance exists and its Service has a ready Pod: it can serve a target, and the handover
   * could act on a move onto it.
   */
  ready(instance: string): boolean;
}

export function assignedCondition(resolution: Resolution): ConditionState {
  if (!resolution.ok) {
    return {
      type: ASSIGNED_CONDITION,
      status: 'False',
      reason: resolution.reason,
      message: resolution.message,
    };
  }
  return {
    type: ASSIGNED_CONDITION,
    status: 'True',
    reason: resolution.decidedBy,
    message: `resolved to ConversionWebhookServer "${resolution.instance}" by ${RULE_WORDS[resolution.decidedBy]}`,
  };
}

const RULE_WORDS = {
  Pinned: 'spec.webhookServerRef',
  Pool: 'weighted rendezvous over the sharding pool',
  Default: 'the default instance',
} as const;

/**
 * @param generation the config's metadata.generation as read: the reset HandoverReady's
 *   observedGeneration, like every HandoverReady the handover states.
 */
export function decideConfigAssignment(
  status: ConfigStatus | undefined,
  target: string,
  resolution: Resolution,
  nowIso: string,
  generation: number | undefined,
  instances: InstanceReadiness,
): ConfigAssignmentDecision {
  const current = status?.assignedWebhookServer;
  const withAssigned = setCondition(status?.conditions, assignedCondition(resolution), nowIso);
  if (resolution.ok && resolution.instance !== current) {
    const to = resolution.instance;
    if (current !== undefined && instances.ready(current) && !instances.ready(to)) {
      return {
        write: undefined,
        move: undefined,
        held: {
          from: current,
          to,
          message: `${target} resolves to ${to}, which has no ready replica yet: the move is recorded once it has one, and ${current} serves ${target} meanwhile`,
        },
      };
    }
    return {
      write: {
        via: 'mergePatch',
        status: {
          assignedWebhookServer: to,
          webhookPath: webhookPath(target),
          handoverDestination: to,
          conditions: setCondition(withAssigned, assignmentChanged(target, to, current), nowIso, generation),
        },
      },
      move: moveOf(current, to),
    };
  }
  const path = resolution.ok ? webhookPath(target) : status?.webhookPath;
  const condition = findCondition(withAssigned, ASSIGNED_CONDITION) as Condition;
  const unchanged =
    path === status?.webhookPath &&
    sameCondition(condition, findCondition(status?.conditions, ASSIGNED_CONDITION));
  if (unchanged) return { write: undefined, move: undefined };
  return {
    write: {
      via: 'apply',
      status: {
        ...(current !== undefined && { assignedWebhookServer: current }),
        ...(path !== undefined && { webhookPath: path }),
        conditions: [condition],
      },
    },
    move: undefined,
  };
}

function moveOf(from: string | undefined, to: string): Move {
  return from === undefined ? { to } : { from, to };
}

/** The part of an instance's status that assign owns. */
export interface InstanceAssignmentStatus {
  assignedTargets?: string[];
  assignedTargetCount: number;
  assignedTargetsDigest: string;
}

/** The instance's assigned-target fields, or undefined when the status already says them. */
export function decideInstanceAssignment(
  status: WebhookServerStatus | undefined,
  targets: Iterable<string>,
): InstanceAssignmentStatus | undefined {
  const list = targetListStatus(targets);
  const unchanged =
    status?.assignedTargetCount === list.count &&
    status.assignedTargetsDigest === list.digest &&
    sameList(status.assignedTargets, list.targets);
  if (unchanged) return undefined;
  return {
    ...(list.targets !== undefined && { assignedTargets: list.targets }),
    assignedTargetCount: list.count,
    assignedTargetsDigest: list.digest,
  };
}

function sameList(a: readonly string[] | undefined, b: readonly string[] | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.every((name, i) => name === b[i]);
}
