import type { Config } from '../../config/schema.ts';
import type { HandoverPolicy } from '../../core/handover.ts';
import { systemClock } from '../../runtime/clock.ts';
import { HANDOVER_VIEW_KINDS, handoverHandler } from '../handover.ts';
import { operatorNamespace } from '../operator-namespace.ts';
import { runHandlerProcess } from '../run-handler.ts';
import { reusedTrustBundles, trustBundleReader } from './trust-bundle.ts';
import { HANDOVER_WORK } from './wakes.ts';

/**
 * `switchyard handover`: replicas may run side by side; any one may be killed at any moment
 * (the runtime redelivers, re-checks are stored on the bus).
 */
export function runHandover(argv: string[]): Promise<void> {
  return runHandlerProcess(argv, {
    work: HANDOVER_WORK,
    viewKinds: HANDOVER_VIEW_KINDS,
    handler: ({ config, view, writer, clients }) =>
      handoverHandler({
        view,
        writer,
        trustBundle: reusedTrustBundles(trustBundleReader(clients.writes), systemClock.monotonic),
        clock: systemClock,
        events: clients.events.recorder,
        policy: handoverPolicyOf(config.handover),
        defaultNamespace: operatorNamespace(),
      }),
    running: 'handing over',
  });
}

/** The gate's policy from the process configuration (seconds there, milliseconds in the gate). */
export function handoverPolicyOf(config: Config['handover']): HandoverPolicy {
  return {
    unreportedGraceMs: config.unreportedGraceSeconds * 1000,
    stallAfterMs: config.stallAfterSeconds * 1000,
    confirmMs: config.confirmSeconds * 1000,
  };
}
