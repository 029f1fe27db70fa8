// What a recorded change wakes in config-status: the config itself (its spec, or the
// assignment assign wrote into its status, which the phase reads), and every config of a
// target whose definition changed (its versions and schemas are what the rules compile
// against; its spec.conversion is what `Applied` reads), or one of the CRDs Crossplane generated
// from an XRD target changed (what `Applied` reads for an XRD: core/routing.ts). Pure; the router
// publishes the keys.
import { isTargetViewKind, KINDS } from '../../api/resources.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import { xrdOfGeneratedCrd } from '../../core/routing.ts';
import { type AssignWorld, CONFIG_KINDS, type KeyedSubject } from '../assign/world.ts';
import type { ObjectWorkKey } from '../work-keys.ts';

export function configStatusTriggers(
  change: { kind: string; object: RecordedObject },
  world: Pick<AssignWorld, 'configs'>,
): ObjectWorkKey[] {
  if ((CONFIG_KINDS as readonly string[]).includes(change.kind))
    return [{ kind: change.kind, name: change.object.metadata.name }];
  if (!isTargetViewKind(change.kind)) return [];
  const byTarget = keysByTarget(world.configs);
  const generatedFrom = change.kind === KINDS.crd.viewKind ? xrdOfGeneratedCrd(change.object) : undefined;
  return [
    ...(byTarget.get(change.object.metadata.name) ?? []),
    ...((generatedFrom !== undefined &&
      generatedFrom !== change.object.metadata.name &&
      byTarget.get(generatedFrom)) ||
      []),
  ];
}

const indexes = new WeakMap<readonly KeyedSubject[], Map<string, ObjectWorkKey[]>>();

/** The configs' keys by the target they name, once per world (a target record is frequent). */
function keysByTarget(configs: readonly KeyedSubject[]): ReadonlyMap<string, ObjectWorkKey[]> {
  let index = indexes.get(configs);
  if (!index) {
    index = new Map();
    for (const c of configs) {
      const keys = index.get(c.target);
      if (keys) keys.push(c.key);
      else index.set(c.target, [c.key]);
    }
    indexes.set(configs, index);
  }
  return index;
}
