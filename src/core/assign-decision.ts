// What the assign handler writes, decided from a resolution and the status as it is: the
// config's `assignedWebhookServer`/`webhookPath` and `Assigned` condition, the instance's
// assigned-target list, and whether the config moved (which is what handover work is for).
// Pure; every answer is "write exactly this" or "nothing to write", so a no-op reconcile makes
// no request at all.
//
// An unresolvable config (its pinned instance is missing, no instance qualifies, two configs
// claim its target) is never given a guess: `Assigned=False` says why and how to fix it, and
// `assignedWebhookServer` keeps naming the instance that serves the target today, because the
// target's conversion still points there (handover moves it only to a resolved instance).

import type { Condition } from '../api/conditions.ts';
import { webhookPath } from '../api/constants.ts';
import type { ConfigStatus } from '../api/conversion-config.ts';
import type { WebhookServerStatus } from '../api/webhook-server.ts';
import type { Resolution } from './assignment.ts';
import { type ConditionState, findCondition, sameCondition, setCondition } from './conditions.ts';
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

export interface ConfigAssignmentDecision {
  /** What to apply; undefined when the status already says it. */
  write: ConfigAssignmentStatus | undefined;
  /** Set when the resolved instance differs from the one the status names. */
  move: Move | undefined;
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

export function decideConfigAssignment(
  status: ConfigStatus | undefined,
  target: string,
  resolution: Resolution,
  nowIso: string,
): ConfigAssignmentDecision {
  const current = status?.assignedWebhookServer;
  const assigned = resolution.ok ? resolution.instance : current;
  const path = resolution.ok ? webhookPath(target) : status?.webhookPath;
  const condition = findCondition(
    setCondition(status?.conditions, assignedCondition(resolution), nowIso),
    ASSIGNED_CONDITION,
  ) as Condition;
  const unchanged =
    assigned === current &&
    path === status?.webhookPath &&
    sameCondition(condition, findCondition(status?.conditions, ASSIGNED_CONDITION));
  const move =
    resolution.ok && resolution.instance !== current ? moveOf(current, resolution.instance) : undefined;
  if (unchanged) return { write: undefined, move };
  return {
    write: {
      ...(assigned !== undefined && { assignedWebhookServer: assigned }),
      ...(path !== undefined && { webhookPath: path }),
      conditions: [condition],
    },
    move,
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
