import { systemClock } from '../../runtime/clock.ts';
import { LEASE_AGGREGATE_VIEW_KINDS, leaseAggregateHandler } from '../lease-aggregate.ts';
import { operatorNamespace } from '../operator-namespace.ts';
import { runHandlerProcess } from '../run-handler.ts';
import { LEASE_AGGREGATE_WORK } from './wakes.ts';

/**
 * `switchyard lease-aggregate`: replicas may run side by side; any one may be killed at any
 * moment (the runtime redelivers, re-checks are stored on the bus).
 */
export function runLeaseAggregate(argv: string[]): Promise<void> {
  return runHandlerProcess(argv, {
    work: LEASE_AGGREGATE_WORK,
    viewKinds: LEASE_AGGREGATE_VIEW_KINDS,
    handler: ({ config, view, writer, bus }) =>
      leaseAggregateHandler({
        view,
        writer,
        js: bus.js,
        clock: systemClock,
        handoverPartitions: config.bus.partitions.handover,
        defaultNamespace: operatorNamespace(),
      }),
    running: 'aggregating',
  });
}
