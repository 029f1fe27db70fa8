// What wakes instances, and where its work goes: the instances whose children, certificates,
// status or deletion a recorded change can alter (triggers.ts), including an instance being
// deleted whose last target was just repointed away.
import { workItemSchema } from '../../bus/messages.ts';
import { workSubject } from '../../bus/subjects.ts';
import { INSTANCE_KIND } from '../assign/world.ts';
import { type ConcernWork, workConsumers } from '../concern.ts';
import { INSTANCES } from '../instances.ts';
import { deletingInstances, instancesTriggers } from './triggers.ts';

export const INSTANCES_WORK: ConcernWork = {
  concern: INSTANCES,
  schema: workItemSchema,
  consumers: (partitions) => workConsumers(INSTANCES, partitions, 60_000),
  partitionsOf: 'instances',
  workSubject: (instance, partitions) => workSubject(INSTANCES, instance, partitions),
  logFieldsOf: (instance) => ({ instance }),
  wakes: ({ change, previous, view }) =>
    instancesTriggers(change, previous, deletingInstances(view.list(INSTANCE_KIND))).map((key) => ({ key })),
  resyncKeys: (view) => view.list(INSTANCE_KIND).map((o) => o.metadata.name),
};
