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
//   gone (its condition says TargetNotFound);
// * a target that became Established or stopped being so: a first apply waits for it;
// * a CRD Crossplane generated from an XRD target (the composite's, named as the XRD, and the
//   claim's, owned by it): the apiserver routes the XRD's conversions by them, and a move is
//   verified only once Crossplane has copied it into each (core/routing.ts).
//
// Otherwise spec changes only, read from metadata.generation: other status writes and heartbeats
// wake nothing. The handover's own patch bumps the target's generation and wakes one no-op look.
// Pure, like every trigger function; the router publishes one item per target.
import { isTargetViewKind, KINDS } from '../../api/resources.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { isEstablished, xrdOfGeneratedCrd } from '../../core/routing.ts';
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
  if (!isTargetViewKind(change.kind)) return [];
  const targets = [name, ...(change.kind === KINDS.crd.viewKind ? [xrdOfGeneratedCrd(change.object)] : [])];
  const converted = targets.filter((t) => t !== undefined && world.configs.some((c) => c.target === t));
  if (converted.length === 0) return [];
  const woken =
    change.op === 'delete' ||
    specChanged(change.object, previous) ||
    isEstablished(change.object) !== isEstablished(previous);
  return woken ? [...new Set(converted as string[])] : [];
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
