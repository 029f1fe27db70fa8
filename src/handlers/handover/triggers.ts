// What a recorded change wakes in handover, besides the moves assign announces and the reports
// lease-aggregate passes on:
//
// * the target of a config whose spec changed (its review versions, its rules and so whether it
//   compiles; a generation the HandoverReady condition must be stated for again);
// * the target of a config whose status.assignedWebhookServer changed: the gate acts only once
//   the status names the destination, and assign's write of it is what it waits for (assign's
//   own work item may be taken before that write is in the view);
// * a target whose own spec changed while a config converts it: how a target created after its
//   config is first applied, how a hand-edited spec.conversion is put back, and how a schema
//   change that makes a config compile releases its handover (none moves the assignment);
// * a target deleted while a config converts it: no verdict may stand about an object that is
//   gone (its condition says TargetNotFound).
//
// Otherwise spec changes only, read from metadata.generation: other status writes and heartbeats
// wake nothing. The handover's own patch bumps the target's generation and wakes one no-op look.
// Pure, like every trigger function; the router publishes one item per target.
import { isTargetViewKind } from '../../api/resources.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { type AssignWorld, CONFIG_KINDS } from '../assign/world.ts';

export function handoverTriggers(
  change: { kind: string; op: 'upsert' | 'delete'; object: RecordedObject },
  previous: RecordedObject | undefined,
  world: Pick<AssignWorld, 'configs'>,
): string[] {
  const name = change.object.metadata.name;
  if ((CONFIG_KINDS as readonly string[]).includes(change.kind)) {
    if (change.op === 'delete') return [];
    if (!specChanged(change.object, previous) && assignedOf(change.object) === assignedOf(previous))
      return [];
    return world.configs
      .filter((c) => c.key.kind === change.kind && c.key.name === name)
      .map((c) => c.target);
  }
  if (!isTargetViewKind(change.kind) || !world.configs.some((c) => c.target === name)) return [];
  return change.op === 'delete' || specChanged(change.object, previous) ? [name] : [];
}

function specChanged(object: RecordedObject, previous: RecordedObject | undefined): boolean {
  if (previous === undefined) return true;
  const generation = object.metadata.generation;
  return generation === undefined || generation !== previous.metadata.generation;
}

function assignedOf(config: RecordedObject | undefined): unknown {
  return (config as { status?: { assignedWebhookServer?: unknown } } | undefined)?.status
    ?.assignedWebhookServer;
}
