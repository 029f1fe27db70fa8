// The config-status handler: per config, the engine's verdict against the live target and the
// phase, written into the config's status (`Validated` condition, `phase`, and the compile's
// verdicts: `schemaHash`, `overallLossless`, `spokeStatuses`, in the same apply) only when they
// change. Nothing here touches a target: the handover handler does that, and only for a config
// whose rules compile (the same verdict, core/config-validation.ts).
//
// Woken by the router for a config's own records and for its target's (config-status-
// triggers.ts). A config's own status writes (this handler's, assign's, handover's) wake it
// too; it then finds nothing changed and writes nothing, so the loop ends there.
import {
  type ConversionConfig,
  conversionConfigSchema,
  driftPolicyOf,
  targetNameOf,
} from '../api/conversion-config.ts';
import { ownKind, TARGET_OF_CONFIG, TARGET_VIEW_KINDS } from '../api/resources.ts';
import type { WorkItem } from '../bus/messages.ts';
import { done, type Handler, PermanentError } from '../bus/runtime/index.ts';
import type { ObjectView } from '../bus/view.ts';
import { decideConfigStatus, instanceServing } from '../core/config-status.ts';
import type { KubeWriter } from '../kube/writer.ts';
import type { Clock } from '../runtime/clock.ts';
import { ConfigVerdicts } from '../views/config-verdicts.ts';
import { readRecorded, readRoutedService } from '../views/view-reads.ts';
import { CONFIG_KINDS, INSTANCE_KIND } from './assign/world.ts';
import { parseWorkKey } from './work-keys.ts';

export const CONFIG_STATUS = 'config-status';

/** What the view must hold: the configs, their targets, and the instances whose Services they may name. */
export const CONFIG_STATUS_VIEW_KINDS = [...CONFIG_KINDS, ...TARGET_VIEW_KINDS, INSTANCE_KIND];

export interface ConfigStatusDeps {
  view: Pick<ObjectView, 'waitFor' | 'record' | 'list' | 'whole'>;
  writer: Pick<KubeWriter, 'applyStatus'>;
  clock: Clock;
}

export function configStatusHandler(deps: ConfigStatusDeps): Handler<WorkItem> {
  const verdicts = new ConfigVerdicts({ verdicts: true });
  return async (item, ctx) => {
    const key = parseWorkKey(item.key);
    if (!key || !(CONFIG_KINDS as readonly string[]).includes(key.kind)) {
      throw new PermanentError(
        `config-status has no key ${JSON.stringify(item.key)}: expected <crdconfig|xrdconfig>/<name>`,
      );
    }
    await deps.view.waitFor(item.seq);
    const read = readRecorded(deps.view, key, conversionConfigSchema);
    // Gone: nothing to state.
    if (read.kind === 'absent') return done;
    if (read.kind === 'unreadable') {
      ctx.log.warn(
        { config: item.key, reason: read.reason },
        'config unreadable; admission should have refused it',
      );
      return done;
    }
    const config = read.object;
    await verdicts.prepare(deps.view, config);
    const validation = verdicts.of(deps.view, config);
    if (validation === undefined) throw new Error(`no verdict on ${item.key} after reading its target again`);
    const write = decideConfigStatus({
      current: config.status,
      generation: config.metadata.generation,
      validation,
      driftPolicy: driftPolicyOf(config.spec),
      servingInstance: instanceServing(
        readRoutedService(deps.view, TARGET_OF_CONFIG[config.kind].viewKind, liveTarget(deps.view, config)),
        deps.view.list(INSTANCE_KIND).map((i) => i.metadata.name),
      ),
      nowIso: new Date(deps.clock.now()).toISOString(),
    });
    if (!write) return done;
    const ref = ownKind(key.kind);
    if (!ref) return done;
    await deps.writer.applyStatus(
      ref,
      { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: key.name }, status: write },
      // Decided on exactly this version of the config: a stale attempt gets 409.
      { signal: ctx.signal, resourceVersion: config.metadata.resourceVersion },
    );
    ctx.log.info(
      {
        config: item.key,
        phase: write.phase,
        validated: write.conditions[0]?.reason,
        overallLossless: write.overallLossless,
      },
      'status written',
    );
    return done;
  };
}

function liveTarget(view: ConfigStatusDeps['view'], config: ConversionConfig): unknown {
  const record = view.record({
    kind: TARGET_OF_CONFIG[config.kind].viewKind,
    namespace: '',
    name: targetNameOf(config),
  });
  return record && !record.omitted ? record.object : undefined;
}
