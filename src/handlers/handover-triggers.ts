// What a recorded change wakes in handover, besides the moves assign announces and the reports
// lease-aggregate passes on: the target of a config whose spec changed (its review versions,
// its rules and so whether it compiles), and a target whose own spec changed while a config
// converts it. The second is how a target created after its config is first applied, how a
// hand-edited spec.conversion is put back, and how a schema change that makes a config compile
// releases its handover: none of them moves the assignment, so assign announces nothing.
//
// Spec changes only, read from metadata.generation: status writes and heartbeats wake nothing.
// The handover's own patch bumps the target's generation and wakes one no-op look. Pure, like
// every trigger function; the router publishes one item per target.
import type { RecordedObject } from '../bus/messages.ts';
import { type AssignWorld, CONFIG_KINDS } from './assign-world.ts';

const TARGET_KINDS = ['crd', 'xrd'];

export function handoverTriggers(
  change: { kind: string; op: 'upsert' | 'delete'; object: RecordedObject },
  previous: RecordedObject | undefined,
  world: Pick<AssignWorld, 'configs'>,
): string[] {
  if (change.op === 'delete' || !specChanged(change.object, previous)) return [];
  const name = change.object.metadata.name;
  if ((CONFIG_KINDS as readonly string[]).includes(change.kind))
    return world.configs
      .filter((c) => c.key.kind === change.kind && c.key.name === name)
      .map((c) => c.target);
  if (TARGET_KINDS.includes(change.kind) && world.configs.some((c) => c.target === name)) return [name];
  return [];
}

function specChanged(object: RecordedObject, previous: RecordedObject | undefined): boolean {
  if (previous === undefined) return true;
  const generation = object.metadata.generation;
  return generation === undefined || generation !== previous.metadata.generation;
}
