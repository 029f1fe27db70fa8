import { workItemSchema } from '../bus/messages.ts';
import { systemClock } from '../runtime/clock.ts';
import {
  LEASE_AGGREGATE,
  LEASE_AGGREGATE_VIEW_KINDS,
  leaseAggregateConsumers,
  leaseAggregateHandler,
} from './lease-aggregate.ts';
import { operatorNamespace } from './operator-namespace.ts';
import { LEASE_AGGREGATE_RESYNC } from './resync-concerns.ts';
import { runHandlerProcess } from './run-handler.ts';

/**
 * `switchyard lease-aggregate`: replicas may run side by side; any one may be killed at any
 * moment (the runtime redelivers, re-checks are stored on the bus).
 */
export function runLeaseAggregate(argv: string[]): Promise<void> {
  return runHandlerProcess(argv, {
    concern: LEASE_AGGREGATE,
    viewKinds: LEASE_AGGREGATE_VIEW_KINDS,
    consumers: (config) => leaseAggregateConsumers(config.bus.partitions.leaseAggregate),
    schema: workItemSchema,
    handler: ({ config, view, writer, bus }) =>
      leaseAggregateHandler({
        view,
        writer,
        js: bus.js,
        clock: systemClock,
        handoverPartitions: config.bus.partitions.handover,
        defaultNamespace: operatorNamespace(),
      }),
    resync: LEASE_AGGREGATE_RESYNC,
    running: 'aggregating',
  });
}
