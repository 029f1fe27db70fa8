// What wakes lease-aggregate, and where its work goes: the instances whose served sets or ready
// replicas a recorded change can alter (triggers.ts), and the instance whose lease-aggregate-owned
// status the change wrote (an echo of its own write, status-echo.ts). Few per record: never paced.
import { workItemSchema } from '../../bus/messages.ts';
import { workSubject } from '../../bus/subjects.ts';
import { INSTANCE_KIND } from '../assign/world.ts';
import { type ConcernWork, type Wake, workConsumers } from '../concern.ts';
import { LEASE_AGGREGATE } from '../lease-aggregate.ts';
import { statusEchoes } from '../status-echo.ts';
import { leaseAggregateTriggers } from './triggers.ts';

export const LEASE_AGGREGATE_WORK: ConcernWork = {
  concern: LEASE_AGGREGATE,
  schema: workItemSchema,
  consumers: (partitions) => workConsumers(LEASE_AGGREGATE, partitions),
  partitionsOf: 'leaseAggregate',
  workSubject: (instance, partitions) => workSubject(LEASE_AGGREGATE, instance, partitions),
  logFieldsOf: (instance) => ({ instance }),
  wakes({ change, previous }): Wake[] {
    const instances = leaseAggregateTriggers(change, previous);
    const echoes = statusEchoes(change, previous).leaseAggregate.filter((i) => !instances.includes(i));
    return [...instances.map((key) => ({ key })), ...echoes.map((key) => ({ key, cause: 'echo' }))];
  },
  resyncKeys: (view) => view.list(INSTANCE_KIND).map((o) => o.metadata.name),
};
