// What wakes the handover, and where its work goes: a key is a target (a CRD or XRD name). The
// router wakes it for a target or a config whose conversion it may have to change
// (triggers.ts); assign wakes it for a move, lease-aggregate when a report releases a waiting
// target, and instances when a target must trust a renewed bundle (cause `trust`), all through
// enqueue-work.ts, so the same work for the same record has the same id whoever publishes it.
import { type HandoverWork, handoverWorkSchema } from '../../bus/messages.ts';
import { workSubject } from '../../bus/subjects.ts';
import { CONFIG_KINDS, configSubjectOf } from '../assign/world.ts';
import { type ConcernWork, workConsumers } from '../concern.ts';
import { HANDOVER } from '../handover.ts';
import { handoverTriggers } from './triggers.ts';

export const HANDOVER_WORK: ConcernWork<HandoverWork> = {
  concern: HANDOVER,
  schema: handoverWorkSchema,
  consumers: (partitions) => workConsumers(HANDOVER, partitions),
  partitionsOf: 'handover',
  workSubject: (target, partitions) => workSubject(HANDOVER, target, partitions),
  logFieldsOf: (target) => ({ target }),
  wakes: ({ change, previous, world }) => handoverTriggers(change, previous, world).map((key) => ({ key })),
  /** Every target a config claims, once however many configs claim it. */
  resyncKeys(view) {
    const targets = new Set<string>();
    for (const kind of CONFIG_KINDS)
      for (const o of view.list(kind)) {
        const target = configSubjectOf(kind, o)?.target;
        if (target !== undefined) targets.add(target);
      }
    return [...targets];
  },
};
