// What a recorded change wakes in the instances handler: the instances whose children, status
// or deletion decision it can change. Pure, like every trigger function (assign/triggers.ts):
// the router calls it with the record and the object's previous record, and publishes one work
// item per instance.
//
//   * An instance's own record, unless only its status moved: the handler's status writes (and
//     lease-aggregate's, assign's) would otherwise wake it again for nothing.
//   * A recorded Deployment labelled with the instance label (before or after the change): its
//     status is what the instance's status reports, and a deleted one must be re-created.
//   * A target whose spec.conversion names an instance's Service: its published caBundle is
//     what a CA rotation waits for.
//   * While an instance is being deleted, any config or target change: the deletion decision
//     reads them all, and a finalizer must go once the last dependent moves away, with no one
//     touching the instance.
import { instanceOfService, WEBHOOK_SERVER_LABEL } from '../../api/constants.ts';
import { isTargetViewKind } from '../../api/resources.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { isConfigKind } from '../assign/world.ts';
import type { RecordedChange } from '../lease-aggregate/triggers.ts';

type Loose = {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { conversion?: { webhook?: { clientConfig?: { service?: { name?: string } } } } };
};

/** Everything but status and what every write touches (resourceVersion). */
function withoutStatus(object: RecordedObject): string {
  const { status: _status, metadata, ...rest } = object as RecordedObject & { status?: unknown };
  const { resourceVersion: _rv, ...meta } = metadata as RecordedObject['metadata'] & {
    resourceVersion?: string;
  };
  return JSON.stringify({ ...rest, metadata: meta });
}

function onlyStatusMoved(change: RecordedChange, previous: RecordedObject | undefined): boolean {
  return (
    change.op === 'upsert' &&
    previous !== undefined &&
    withoutStatus(change.object) === withoutStatus(previous)
  );
}

function instancesNamedBy(kind: string, object: Loose | undefined): (string | undefined)[] {
  if (!object) return [];
  if (kind === 'deployment') return [object.metadata?.labels?.[WEBHOOK_SERVER_LABEL]];
  if (isTargetViewKind(kind))
    return [instanceOfService(object.spec?.conversion?.webhook?.clientConfig?.service?.name)];
  return [];
}

/** The instances (sorted, unique) `change` wakes; `deleting` are those with a deletionTimestamp. */
export function instancesTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
  deleting: readonly string[],
): string[] {
  if (change.kind === 'webhookserver')
    return onlyStatusMoved(change, previous) ? [] : [change.object.metadata.name];
  const names = [
    ...instancesNamedBy(change.kind, change.object as Loose),
    ...instancesNamedBy(change.kind, previous as Loose | undefined),
    ...(isConfigKind(change.kind) || isTargetViewKind(change.kind) ? deleting : []),
  ];
  return [...new Set(names.filter((n): n is string => typeof n === 'string' && n !== ''))].sort();
}

/** The instances being deleted, as the router's view holds them: a deletion decision is pending. */
export function deletingInstances(instances: readonly RecordedObject[]): string[] {
  return instances
    .filter((i) => (i.metadata as { deletionTimestamp?: string }).deletionTimestamp !== undefined)
    .map((i) => i.metadata.name);
}
