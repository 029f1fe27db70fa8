// Every key of each handler concern, as its view holds it, with the work item the router would
// publish for it (same subjects, same payloads: router.ts), for the concern's resync rounds
// (resync.ts). A key whose object is gone is simply not listed: its deletion was a record, and
// whatever it left behind is some remaining key's business (an instance's list, a target's
// config).
import type { HandoverWork, WorkItem } from '../bus/messages.ts';
import { ASSIGN_CONCERN, CONFIG_KINDS, configSubjectOf, INSTANCE_KIND } from './assign-world.ts';
import { CONFIG_STATUS, configStatusSubject } from './config-status.ts';
import { HANDOVER } from './handover.ts';
import { INSTANCES, instancesSubject } from './instances.ts';
import { LEASE_AGGREGATE, leaseAggregateSubject } from './lease-aggregate.ts';
import type { ResyncItem, ResyncSpec, ResyncView } from './resync.ts';
import { formatWorkKey, handoverWorkSubject, type ObjectWorkKey, objectWorkSubject } from './work-keys.ts';

function configKeys(view: ResyncView): ObjectWorkKey[] {
  return CONFIG_KINDS.flatMap((kind) => view.list(kind).map((o) => ({ kind, name: o.metadata.name })));
}

function instanceNames(view: ResyncView): string[] {
  return view.list(INSTANCE_KIND).map((o) => o.metadata.name);
}

function item(key: string, seq: number, subject: string): ResyncItem {
  const payload: WorkItem = { key, seq };
  return { key, subject, payload };
}

/** Every config and every instance (`crdconfig/<name>`, `xrdconfig/<name>`, `webhookserver/<name>`). */
export const ASSIGN_RESYNC: ResyncSpec = {
  concern: ASSIGN_CONCERN,
  items: (view, seq, partitions) =>
    [...configKeys(view), ...instanceNames(view).map((name) => ({ kind: INSTANCE_KIND, name }))].map((k) =>
      item(formatWorkKey(k), seq, objectWorkSubject(ASSIGN_CONCERN, k, partitions.assign)),
    ),
};

/** Every instance: its aggregate of served sets and ready replicas. */
export const LEASE_AGGREGATE_RESYNC: ResyncSpec = {
  concern: LEASE_AGGREGATE,
  items: (view, seq, partitions) =>
    instanceNames(view).map((name) =>
      item(name, seq, leaseAggregateSubject(name, partitions.leaseAggregate)),
    ),
};

/** Every instance: its children, certificates, status and deletion. */
export const INSTANCES_RESYNC: ResyncSpec = {
  concern: INSTANCES,
  items: (view, seq, partitions) =>
    instanceNames(view).map((name) => item(name, seq, instancesSubject(name, partitions.instances))),
};

/** Every config: its phase and conditions. */
export const CONFIG_STATUS_RESYNC: ResyncSpec = {
  concern: CONFIG_STATUS,
  items: (view, seq, partitions) =>
    configKeys(view).map((k) => item(formatWorkKey(k), seq, configStatusSubject(k, partitions.configStatus))),
};

/** Every target a config claims (once, however many configs claim it): its spec.conversion and the move. */
export const HANDOVER_RESYNC: ResyncSpec = {
  concern: HANDOVER,
  items: (view, seq, partitions) => {
    const targets = new Set<string>();
    for (const kind of CONFIG_KINDS)
      for (const o of view.list(kind)) {
        const target = configSubjectOf(kind, o)?.target;
        if (target !== undefined) targets.add(target);
      }
    return [...targets].map((target) => {
      const payload: HandoverWork = { key: target, seq };
      return { key: target, subject: handoverWorkSubject(target, partitions.handover), payload };
    });
  },
};

/** Every handler concern's resync: each one's process runs it (run-*.ts, cli/assign.ts). */
export const RESYNC_SPECS: readonly ResyncSpec[] = [
  ASSIGN_RESYNC,
  LEASE_AGGREGATE_RESYNC,
  HANDOVER_RESYNC,
  CONFIG_STATUS_RESYNC,
  INSTANCES_RESYNC,
];
