// What wakes config-status, and where its work goes: the configs whose phase and conditions a
// recorded change can alter (triggers.ts): the config itself, and the configs of a target or an
// instance that changed.
import { workItemSchema } from '../../bus/messages.ts';
import { CONFIG_KINDS } from '../assign/world.ts';
import { type ConcernWork, workConsumers } from '../concern.ts';
import { CONFIG_STATUS } from '../config-status.ts';
import { formatWorkKey, objectKeyLogFields, objectKeyOf, objectWorkSubject } from '../work-keys.ts';
import { configStatusTriggers } from './triggers.ts';

export const CONFIG_STATUS_WORK: ConcernWork = {
  concern: CONFIG_STATUS,
  schema: workItemSchema,
  consumers: (partitions) => workConsumers(CONFIG_STATUS, partitions),
  partitionsOf: 'configStatus',
  workSubject: (key, partitions) => objectWorkSubject(CONFIG_STATUS, objectKeyOf(key), partitions),
  logFieldsOf: objectKeyLogFields,
  wakes: ({ change, world }) => configStatusTriggers(change, world).map((k) => ({ key: formatWorkKey(k) })),
  resyncKeys: (view) =>
    CONFIG_KINDS.flatMap((kind) =>
      view.list(kind).map((o) => formatWorkKey({ kind, name: o.metadata.name })),
    ),
};
