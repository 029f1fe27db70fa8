// Every handler concern's registration (<concern>/wakes.ts): the router routes each record to
// all of them, resync and the CLI find each one's pacer and consumers here. A new concern is one
// folder and one line below.
import { ASSIGN_WORK } from './assign/wakes.ts';
import type { ConcernWork } from './concern.ts';
import { CONFIG_STATUS_WORK } from './config-status/wakes.ts';
import { HANDOVER_WORK } from './handover/wakes.ts';
import { INSTANCES_WORK } from './instances/wakes.ts';
import { LEASE_AGGREGATE_WORK } from './lease-aggregate/wakes.ts';

export const CONCERNS: readonly ConcernWork[] = [
  ASSIGN_WORK,
  LEASE_AGGREGATE_WORK,
  HANDOVER_WORK,
  CONFIG_STATUS_WORK,
  INSTANCES_WORK,
];
