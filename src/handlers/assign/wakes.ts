// What wakes assign, and where its work goes: the configs and instances whose assignment a
// recorded change can alter (triggers.ts), the configs an instance change reaches through the
// paced fan-out, and the config or instance whose assign-owned status the change wrote (an echo
// of assign's own write, status-echo.ts).
import { workItemSchema } from '../../bus/messages.ts';
import { type ConcernWork, type Wake, workConsumers } from '../concern.ts';
import { statusEchoes } from '../status-echo.ts';
import {
  formatWorkKey,
  objectFanoutSubject,
  objectKeyLogFields,
  objectKeyOf,
  objectWorkSubject,
} from '../work-keys.ts';
import { assignTriggers } from './triggers.ts';
import { ASSIGN_CONCERN, CONFIG_KINDS, INSTANCE_KIND } from './world.ts';

export const ASSIGN_WORK: ConcernWork = {
  concern: ASSIGN_CONCERN,
  schema: workItemSchema,
  consumers: (partitions) => workConsumers(ASSIGN_CONCERN, partitions),
  partitionsOf: 'assign',
  workSubject: (key, partitions) => objectWorkSubject(ASSIGN_CONCERN, objectKeyOf(key), partitions),
  fanoutSubject: (key) => objectFanoutSubject(ASSIGN_CONCERN, objectKeyOf(key)),
  logFieldsOf: objectKeyLogFields,
  wakes({ change, previous, world }): Wake[] {
    const triggers = assignTriggers(change, previous, world);
    const now = triggers.now.map(formatWorkKey);
    const woken = new Set(now);
    const echoes = statusEchoes(change, previous)
      .assign.map(formatWorkKey)
      .filter((key) => !woken.has(key));
    return [
      ...now.map((key) => ({ key })),
      ...echoes.map((key) => ({ key, cause: 'echo' })),
      ...triggers.paced.map((k) => ({ key: formatWorkKey(k), paced: true as const })),
    ];
  },
  resyncKeys: (view) =>
    [...CONFIG_KINDS, INSTANCE_KIND].flatMap((kind) =>
      view.list(kind).map((o) => formatWorkKey({ kind, name: o.metadata.name })),
    ),
};
