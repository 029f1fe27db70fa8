// The set of targets a replica of an instance is expected to hold a plan for, from a view.
//
// The served-set codec only works if the webhook-server that encodes and the aggregate that
// decodes compute this set identically (a bucket whose digests differ is "cannot tell"), so
// there is exactly one function, and both call it with the view they have. The view is plain
// data (configs, instances, existing targets with the Service they name), so either side can
// build it from its informers or from recorded messages, and a replay computes the same set.
//
// A target is expected on an instance when its config is usable, the target exists, and either
// the resolver assigns it there or the live target still names the instance's Service (the
// data plane holds a plan while either is true: `shouldHoldPlan`). It is expected nowhere when
// its config is Invalid (nothing to compile), its target does not exist yet (no schemas to
// compile against), or two configs claim it (no single plan to expect).
//
// Being wrong here never makes a reader overstate: a replica lists what it serves beyond the
// expectation as extras and what it lacks as missing. A wrong rule only costs bytes.
import { webhookServiceName } from '../api/constants.ts';
import type { ConversionConfig } from '../api/conversion-config.ts';
import { assignSubjects, type ConfigSubject, fleetOf, type InstanceLike, subjectOf } from './assignment.ts';
import { shouldHoldPlan } from './handover.ts';
import { type ExpectedSet, expectedSetOf } from './served-set-codec.ts';

export interface ViewConfig extends ConfigSubject {
  /** False once validation has marked the config Invalid: no replica can build a plan from it. */
  usable: boolean;
}

export interface ExpectationView {
  configs: readonly ViewConfig[];
  instances: readonly InstanceLike[];
  /**
   * The targets (CRDs and XRDs) that exist, by name, with the Service their
   * spec.conversion webhook names now; undefined when it names none.
   */
  targets: ReadonlyMap<string, string | undefined>;
}

export function viewConfigOf(config: ConversionConfig): ViewConfig {
  const { config: id, target, pinnedTo } = subjectOf(config);
  return { config: id, target, pinnedTo, usable: config.status?.phase !== 'Invalid' };
}

/** view → instance → the expected set, prepared for the codec. Computed once per view. */
export function expectedSets(view: ExpectationView): (instance: string) => ExpectedSet {
  const byInstance = expectedTargetsByInstance(view);
  const prepared = new Map<string, ExpectedSet>();
  return (instance) => {
    let set = prepared.get(instance);
    if (set === undefined) {
      set = expectedSetOf(byInstance.get(instance) ?? []);
      prepared.set(instance, set);
    }
    return set;
  };
}

function expectedTargetsByInstance(view: ExpectationView): Map<string, Set<string>> {
  const resolutions = assignSubjects(view.configs, fleetOf(view.instances));
  const unusable = new Set(view.configs.filter((c) => !c.usable).map((c) => c.target));
  const instanceByService = new Map(
    view.instances.map((i) => [webhookServiceName(i.metadata.name), i.metadata.name]),
  );
  const out = new Map<string, Set<string>>();
  for (const [target, resolution] of resolutions) {
    if (!resolution.ok && resolution.reason === 'DuplicateTarget') continue;
    if (unusable.has(target) || !view.targets.has(target)) continue;
    const assigned = resolution.ok ? resolution.instance : undefined;
    const namedService = view.targets.get(target);
    const named = namedService === undefined ? undefined : instanceByService.get(namedService);
    // The candidates are the data plane's: shouldHoldPlan decides, so the two cannot drift.
    for (const instance of new Set([assigned, named])) {
      if (instance === undefined || !shouldHoldPlan(instance, assigned, namedService)) continue;
      const set = out.get(instance) ?? new Set<string>();
      set.add(target);
      out.set(instance, set);
    }
  }
  return out;
}
