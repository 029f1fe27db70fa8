// The record of a handler's own status write wakes that handler once more for the same key.
//
// assign writes an instance's assigned targets from the configs, lease-aggregate its served
// targets from the Leases: each writes one object from *other* objects, and decides "nothing to
// write" by comparing with the status its view holds. That status may not include the handler's
// own last write yet. Found by the lifecycle test (issue 27): a config pinned to an instance and
// deleted at once; the write woken by the pin, decided while the config existed, landed after the
// deletion (its precondition is the instance's version, which had not changed), and the look
// woken by the deletion compared "no target" with a status that did not hold that write yet, and
// wrote nothing. The instance listed a target nothing converts until the next resync, 30 min.
//
// The look this wakes sees the write and everything recorded before it, and writes nothing
// unless something slipped in between; a write it does make wakes one more look, which finds
// nothing to do. A config's assignment is decided from other objects too (its rivals for the
// target, the instances), so assign's writes of a config's status echo the same way. Pure, like
// every trigger function.
import type { RecordedObject } from '../bus/messages.ts';
import { INSTANCE_KIND, isConfigKind } from './assign/world.ts';
import type { ObjectWorkKey } from './work-keys.ts';

/** The instance status fields each concern owns. */
const OWNED_STATUS = {
  assign: ['assignedTargets', 'assignedTargetCount', 'assignedTargetsDigest'],
  assignOfConfig: ['assignedWebhookServer', 'webhookPath'],
  leaseAggregate: ['reportingReplicas', 'servedTargets', 'servedTargetCount', 'servedTargetsDigest'],
} as const;
/** lease-aggregate's condition on the instance, and assign's on a config. */
const SERVED_TARGETS_KNOWN = 'ServedTargetsKnown';
const ASSIGNED = 'Assigned';

export interface StatusEchoes {
  /** The instance or config whose assign-owned status this record changed. */
  assign: ObjectWorkKey[];
  /** Instances whose lease-aggregate-owned status this record changed. */
  leaseAggregate: string[];
}

const NONE: StatusEchoes = { assign: [], leaseAggregate: [] };

export function statusEchoes(
  change: { kind: string; op: 'upsert' | 'delete'; object: RecordedObject },
  previous: RecordedObject | undefined,
): StatusEchoes {
  if (change.op !== 'upsert' || previous === undefined) return NONE;
  const now = statusOf(change.object);
  const before = statusOf(previous);
  const key = { kind: change.kind, name: change.object.metadata.name };
  const moved = (fields: readonly string[]) => fields.some((f) => !sameJson(now[f], before[f]));
  const conditionMoved = (type: string) => !sameJson(conditionOf(now, type), conditionOf(before, type));
  if (isConfigKind(change.kind))
    return {
      assign: moved(OWNED_STATUS.assignOfConfig) || conditionMoved(ASSIGNED) ? [key] : [],
      leaseAggregate: [],
    };
  if (change.kind !== INSTANCE_KIND) return NONE;
  return {
    assign: moved(OWNED_STATUS.assign) ? [key] : [],
    leaseAggregate:
      moved(OWNED_STATUS.leaseAggregate) || conditionMoved(SERVED_TARGETS_KNOWN) ? [key.name] : [],
  };
}

function statusOf(object: RecordedObject): Record<string, unknown> {
  const status = (object as { status?: unknown }).status;
  return typeof status === 'object' && status !== null ? (status as Record<string, unknown>) : {};
}

function conditionOf(status: Record<string, unknown>, type: string): unknown {
  const conditions = status.conditions;
  return Array.isArray(conditions)
    ? conditions.find((c) => (c as { type?: unknown } | null)?.type === type)
    : undefined;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
