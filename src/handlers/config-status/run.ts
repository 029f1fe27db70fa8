import { systemClock } from '../../runtime/clock.ts';
import { CONFIG_STATUS_VIEW_KINDS, configStatusHandler } from '../config-status.ts';
import { runHandlerProcess } from '../run-handler.ts';
import { CONFIG_STATUS_WORK } from './wakes.ts';

/** `switchyard config-status`: replicas may run side by side; any one may be killed at any moment. */
export function runConfigStatus(argv: string[]): Promise<void> {
  return runHandlerProcess(argv, {
    work: CONFIG_STATUS_WORK,
    viewKinds: CONFIG_STATUS_VIEW_KINDS,
    handler: ({ view, writer }) => configStatusHandler({ view, writer, clock: systemClock }),
    running: 'validating configs',
  });
}
