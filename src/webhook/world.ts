// The world a replica holds plans from, read off its bus view: the configs, the instances as the
// resolver sees them, and the live targets by name. Derived again only when one of those kinds
// changed (views/view-reads.ts), so a burst of status writes costs a pointer comparison each.
import { conversionConfigSchema } from '../api/conversion-config.ts';
import { TARGET_VIEW_KINDS } from '../api/resources.ts';
import { webhookServerSchema } from '../api/webhook-server.ts';
import type { ObjectView } from '../bus/view.ts';
import { instanceLikeOf } from '../core/expected-set.ts';
import { CONFIG_VIEW_KINDS, derivedFromView, parsedList, readTargetServices } from '../views/view-reads.ts';
import type { PlanWorld } from './plans.ts';

/** What a replica's view must hold. */
export const REPLICA_VIEW_KINDS = [...CONFIG_VIEW_KINDS, 'webhookserver', ...TARGET_VIEW_KINDS] as const;

const WORLD = {};

export function planWorldOf(view: Pick<ObjectView, 'list' | 'record'>): PlanWorld {
  return derivedFromView(view, REPLICA_VIEW_KINDS, WORLD, () => {
    const targets = new Map<string, unknown>();
    for (const kind of TARGET_VIEW_KINDS) {
      for (const object of view.list(kind)) {
        // Recorded without its content (too large for the bus): no versions to compile against.
        if (view.record({ kind, namespace: '', name: object.metadata.name })?.omitted) continue;
        targets.set(object.metadata.name, object);
      }
    }
    return {
      configs: parsedList(view, CONFIG_VIEW_KINDS, conversionConfigSchema),
      instances: parsedList(view, ['webhookserver'], webhookServerSchema).map(instanceLikeOf),
      targets,
      services: readTargetServices(view),
    };
  });
}
