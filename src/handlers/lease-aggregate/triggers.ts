// What a recorded change wakes in lease-aggregate: the instances whose aggregate it can change.
// Pure, like every trigger function (assign/triggers.ts): the router calls it with the record
// and the object's previous record, and publishes one work item per instance.
//
// An instance's aggregate reads its Leases (content changes and revivals are records;
// renewals are heartbeats and wake nothing), its Service's EndpointSlices (ready Pods), its own
// spec (namespace, replicas), and the expected sets, which move with the configs assigned to it
// and the targets naming its Service. Each trigger names the instances before and after the
// change, so a Lease relabelled, a slice moved or a config reassigned wakes both sides. Loose on
// purpose: a woken instance whose aggregate did not change writes nothing.
import { instanceOfService, SERVICE_NAME_LABEL, WEBHOOK_SERVER_LABEL } from '../../api/constants.ts';
import type { RecordedObject } from '../../bus/messages.ts';

export interface RecordedChange {
  kind: string;
  op: 'upsert' | 'delete';
  object: RecordedObject;
}

type Loose = {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: {
    webhookServerRef?: { name?: string };
    conversion?: { webhook?: { clientConfig?: { service?: { name?: string } } } };
  };
  status?: { assignedWebhookServer?: string };
};

function instancesNamedBy(kind: string, object: Loose | undefined): (string | undefined)[] {
  if (!object) return [];
  switch (kind) {
    case 'lease':
      return [object.metadata?.labels?.[WEBHOOK_SERVER_LABEL]];
    case 'endpointslice':
      return [instanceOfService(object.metadata?.labels?.[SERVICE_NAME_LABEL])];
    case 'webhookserver':
      return [object.metadata?.name];
    case 'crdconfig':
    case 'xrdconfig':
      return [object.status?.assignedWebhookServer, object.spec?.webhookServerRef?.name];
    case 'crd':
    case 'xrd':
      return [instanceOfService(object.spec?.conversion?.webhook?.clientConfig?.service?.name)];
    default:
      return [];
  }
}

/** An instance's own record wakes it only when more than its status moved (status is written by handlers). */
function instanceSpecUnchanged(change: RecordedChange, previous: RecordedObject | undefined): boolean {
  if (change.kind !== 'webhookserver' || change.op !== 'upsert' || !previous) return false;
  const { status: _now, metadata: m1, ...rest1 } = change.object as Loose & { metadata?: object };
  const { status: _before, metadata: m2, ...rest2 } = previous as Loose & { metadata?: object };
  return JSON.stringify(rest1) === JSON.stringify(rest2) && sameLabels(m1, m2);
}

function sameLabels(a: object | undefined, b: object | undefined): boolean {
  const labels = (m: object | undefined) => JSON.stringify((m as Loose['metadata'])?.labels ?? {});
  return labels(a) === labels(b);
}

/**
 * A config's record wakes instances only when what the expected sets read from it moved: its
 * target, its pin, whether it is Invalid, and the instance assign wrote. The handover's and
 * config-status's other status writes (three or so per config in a move) change no aggregate,
 * and each woken instance re-reads every config: a 1,000-config move spent most of
 * lease-aggregate's CPU on them (bench/handover.ts).
 */
function configExpectationUnchanged(change: RecordedChange, previous: RecordedObject | undefined): boolean {
  if (!['crdconfig', 'xrdconfig'].includes(change.kind) || change.op !== 'upsert' || !previous) return false;
  return JSON.stringify(expectationOf(change.object)) === JSON.stringify(expectationOf(previous));
}

function expectationOf(object: RecordedObject) {
  const o = object as Loose & {
    spec?: { targetCRD?: unknown; targetXRD?: unknown };
    status?: { phase?: string };
  };
  return [
    o.spec?.targetCRD,
    o.spec?.targetXRD,
    o.spec?.webhookServerRef?.name,
    o.status?.phase === 'Invalid',
    o.status?.assignedWebhookServer,
  ];
}

/** The instances (sorted, unique) whose aggregate `change` may have changed. */
export function leaseAggregateTriggers(
  change: RecordedChange,
  previous: RecordedObject | undefined,
): string[] {
  if (instanceSpecUnchanged(change, previous) || configExpectationUnchanged(change, previous)) return [];
  const names = [
    ...instancesNamedBy(change.kind, change.object as Loose),
    ...instancesNamedBy(change.kind, previous as Loose | undefined),
  ];
  return [...new Set(names.filter((n): n is string => typeof n === 'string' && n !== ''))].sort();
}
