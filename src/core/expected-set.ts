// The set of targets a replica of an instance is expected to hold a plan for, from a view.
//
// The served-set codec only works if the webhook-server that encodes and the aggregate that
// decodes compute this set identically (a bucket whose digests differ is "cannot tell"), so
// there is exactly one function, and both call it with the view they have. The view is plain
// data (configs, instances, existing targets with the Service they name), so either side can
// build it from its informers or from recorded messages, and a replay computes the same set.
//
// A target is expected on an instance when its config is usable, the target exists, and either
// the resolver assigns it there or what the apiserver routes it by still names the instance's
// Service (for an XRD, the XRD or a CRD Crossplane generated from it: core/routing.ts) (the
// data plane holds a plan while either is true: `shouldHoldPlan`). It is expected nowhere when
// its config is Invalid (nothing to compile), its target does not exist yet (no schemas to
// compile against), or two configs claim it (no single plan to expect).
//
// Being wrong here never makes a reader overstate: a replica lists what it serves beyond the
// expectation as extras and what it lacks as missing. A wrong rule only costs bytes.
import { webhookServiceName } from '../api/constants.ts';
import type { ConversionConfig } from '../api/conversion-config.ts';
import {
  assignSubjects,
  type ConfigSubject,
  fleetOf,
  type InstanceLike,
  type Resolution,
  sameInstanceLikes,
  subjectOf,
} from './assignment.ts';
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
   * The targets (CRDs and XRDs) that exist, by name, with the Services their conversions may go
   * to now, sorted: the target's own spec.conversion and, for an XRD, the CRDs generated from it
   * (`servicesNamingTarget`, core/routing.ts); empty when none names one.
   */
  targets: ReadonlyMap<string, readonly string[]>;
}

export function viewConfigOf(config: ConversionConfig): ViewConfig {
  const { config: id, target, pinnedTo } = subjectOf(config);
  return { config: id, target, pinnedTo, usable: config.status?.phase !== 'Invalid' };
}

/** What assignment reads of an instance, and nothing else (its status changes often). */
export function instanceLikeOf(instance: InstanceLike): InstanceLike {
  const { sharding } = instance.spec;
  return {
    metadata: { name: instance.metadata.name },
    spec: {
      default: instance.spec.default,
      sharding: sharding && { enabled: sharding.enabled, weight: sharding.weight },
    },
  };
}

/** Whether two views hold the same facts, so that every set derived from one holds for the other. */
export function sameExpectation(a: ExpectationView, b: ExpectationView): boolean {
  return (
    sameItems(a.configs, b.configs, sameViewConfig) &&
    sameInstanceLikes(a.instances, b.instances) &&
    a.targets.size === b.targets.size &&
    [...a.targets].every(([name, services]) => sameNames(services, b.targets.get(name)))
  );
}

function sameNames(a: readonly string[], b: readonly string[] | undefined): boolean {
  return b !== undefined && a.length === b.length && a.every((name, i) => name === b[i]);
}

function sameItems<T>(a: readonly T[], b: readonly T[], same: (x: T, y: T) => boolean): boolean {
  return a.length === b.length && a.every((x, i) => same(x, b[i] as T));
}

function sameViewConfig(a: ViewConfig, b: ViewConfig): boolean {
  return a.config === b.config && a.target === b.target && a.pinnedTo === b.pinnedTo && a.usable === b.usable;
}

/**
 * Prepared sets carried from one view to the next, by instance: the targets a set was prepared
 * from and the set. Owned by the caller; `expectedSets` reads and updates it.
 */
export type ExpectedSetCache = Map<string, { targets: ReadonlySet<string>; set: ExpectedSet }>;

const NO_TARGETS: ReadonlySet<string> = new Set();

/**
 * view → instance → the expected set, prepared for the codec. Computed once per view; with a
 * cache, an instance whose targets are the ones it had in an earlier view gets that view's set
 * back (the same object), and with it every bucketing and decode already made against it.
 */
export function expectedSets(
  view: ExpectationView,
  cache: ExpectedSetCache = new Map(),
): (instance: string) => ExpectedSet {
  const byInstance = expectedTargetsByInstance(view);
  for (const instance of cache.keys()) {
    if (!view.instances.some((i) => i.metadata.name === instance)) cache.delete(instance);
  }
  return (instance) => {
    const targets = byInstance.get(instance) ?? NO_TARGETS;
    const kept = cache.get(instance);
    if (kept && sameSet(kept.targets, targets)) return kept.set;
    const set = expectedSetOf(targets);
    cache.set(instance, { targets, set });
    return set;
  };
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a === b) return true;
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

const resolutionsByView = new WeakMap<ExpectationView, Map<string, Resolution>>();

/** The resolver over the view's configs and instances, once per view. */
export function resolutionsOf(view: ExpectationView): ReadonlyMap<string, Resolution> {
  let resolutions = resolutionsByView.get(view);
  if (!resolutions) {
    resolutions = assignSubjects(view.configs, fleetOf(view.instances));
    resolutionsByView.set(view, resolutions);
  }
  return resolutions;
}

function expectedTargetsByInstance(view: ExpectationView): Map<string, Set<string>> {
  const resolutions = resolutionsOf(view);
  const unusable = new Set(view.configs.filter((c) => !c.usable).map((c) => c.target));
  const instanceByService = new Map(
    view.instances.map((i) => [webhookServiceName(i.metadata.name), i.metadata.name]),
  );
  const out = new Map<string, Set<string>>();
  for (const [target, resolution] of resolutions) {
    if (!resolution.ok && resolution.reason === 'DuplicateTarget') continue;
    if (unusable.has(target) || !view.targets.has(target)) continue;
    const assigned = resolution.ok ? resolution.instance : undefined;
    const services = view.targets.get(target) ?? [];
    const named = services.map((service) => instanceByService.get(service));
    // The candidates are the data plane's: shouldHoldPlan decides, so the two cannot drift.
    for (const instance of new Set([assigned, ...named])) {
      if (instance === undefined || !shouldHoldPlan(instance, assigned, services)) continue;
      const set = out.get(instance) ?? new Set<string>();
      set.add(target);
      out.set(instance, set);
    }
  }
  return out;
}
