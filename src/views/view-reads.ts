// Reading the plain data the core decisions take off an ObjectView: the recorded objects are
// untyped, so each read validates with the resource's schema and skips what does not parse (a
// record another writer put there, or one recorded without its content) instead of guessing.
// Shared by the handlers and the webhook-server replicas: both read the same configs, instances,
// targets and Leases off the same records, so both compute the same expected sets.
import { type ZodType, z } from 'zod';
import {
  SERVED_SET_ANNOTATION,
  SERVICE_NAME_LABEL,
  WEBHOOK_SERVER_LABEL,
  webhookServiceName,
} from '../api/constants.ts';
import { conversionConfigSchema } from '../api/conversion-config.ts';
import { KINDS, TARGET_VIEW_KINDS } from '../api/resources.ts';
import { type WebhookServer, webhookServerSchema } from '../api/webhook-server.ts';
import type { RecordedObject } from '../bus/messages.ts';
import type { ObjectView } from '../bus/view.ts';
import {
  type ExpectationView,
  type ExpectedSetCache,
  expectedSets,
  instanceLikeOf,
  sameExpectation,
  viewConfigOf,
} from '../core/expected-set.ts';
import type { LeaseFacts } from '../core/instance-aggregate.ts';
import { generatedCrdNames, type RouteState, routeStatesOf, servicesNamingTarget } from '../core/routing.ts';
import type { ExpectedSet } from '../core/served-set-codec.ts';
import { conversionServiceOf } from '../core/target-conversion.ts';
import { parseRecorded } from './parse-cache.ts';

type ViewReads = Pick<ObjectView, 'record' | 'list' | 'renewTime'>;

/** Where the view records the two config kinds. */
export const CONFIG_VIEW_KINDS = ['crdconfig', 'xrdconfig'] as const;

/** The label the EndpointSlice controller puts on a Service's slices. */

interface Meta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const metaOf = (o: RecordedObject) => o.metadata as Meta;

/** The objects of `kinds` that parse with `schema`, in view order. */
export function parsedList<T>(
  view: Pick<ObjectView, 'list'>,
  kinds: readonly string[],
  schema: ZodType<T>,
): T[] {
  return kinds.flatMap((kind) =>
    view.list(kind).flatMap((o) => {
      const parsed = parseRecorded(schema, o);
      return parsed.success ? [parsed.data] : [];
    }),
  );
}

/**
 * One object as the view holds it, as every handler reads the key of its work item (controller-
 * runtime's get-or-not-found, once): absent (deleted, or never recorded: nothing to do, its
 * deletion was a record of its own), unreadable (recorded without its content, or it does not
 * parse: a fix is a new record and a new trigger), or found and parsed.
 */
export type RecordRead<T> =
  | { kind: 'found'; object: T }
  | { kind: 'absent' }
  | { kind: 'unreadable'; reason: string };

export function readRecorded<T>(
  view: Pick<ObjectView, 'record'>,
  ref: { kind: string; namespace?: string; name: string },
  schema: ZodType<T>,
): RecordRead<T> {
  const record = view.record({ kind: ref.kind, namespace: ref.namespace ?? '', name: ref.name });
  if (record === undefined) return { kind: 'absent' };
  if (record.omitted) return { kind: 'unreadable', reason: 'recorded without its content (too large)' };
  const parsed = parseRecorded(schema, record.object);
  return parsed.success
    ? { kind: 'found', object: parsed.data }
    : { kind: 'unreadable', reason: z.prettifyError(parsed.error) };
}

/** A ConversionWebhookServer (cluster-scoped) as the view holds it. */
export function readInstance(view: ViewReads, name: string): RecordRead<WebhookServer> {
  return readRecorded(view, { kind: 'webhookserver', name }, webhookServerSchema);
}

/**
 * The served-set Leases of an instance: in its namespace, labelled with its name. Only its own
 * namespace: anyone who may write Leases elsewhere must not speak for the instance. renewTime
 * is the latest the view knows, heartbeats included.
 */
export function readInstanceLeases(view: ViewReads, instance: string, namespace: string): LeaseFacts[] {
  return view
    .list('lease')
    .filter((l) => metaOf(l).namespace === namespace && metaOf(l).labels?.[WEBHOOK_SERVER_LABEL] === instance)
    .map((l) => {
      const name = metaOf(l).name;
      const spec = (l as { spec?: { holderIdentity?: string; leaseDurationSeconds?: number } }).spec;
      const renewTime = view.renewTime({ kind: 'lease', namespace, name });
      const renewTimeMs = renewTime === undefined ? undefined : Date.parse(renewTime);
      return {
        name,
        holder: spec?.holderIdentity,
        renewTimeMs: Number.isNaN(renewTimeMs) ? undefined : renewTimeMs,
        leaseDurationSeconds: spec?.leaseDurationSeconds,
        servedSet: metaOf(l).annotations?.[SERVED_SET_ANNOTATION],
      };
    });
}

/**
 * Since when an instance's ready Pods and what they report have stood as they are now: the latest
 * time the watchers recorded a change of its Service's EndpointSlices or of a ready Pod's Lease
 * (renewals are heartbeats, not changes). A Pod that turned unready, restarted or was replaced,
 * and a report that changed, each moved it forward; a record observed late only moves it later.
 * Undefined when none of them is recorded.
 */
export function readReplicasStableSinceMs(
  view: ViewReads,
  instance: string,
  namespace: string,
  readyPods: readonly string[],
): number | undefined {
  const service = webhookServiceName(instance);
  const ready = new Set(readyPods);
  let latest: number | undefined;
  const observe = (kind: string, object: RecordedObject) => {
    const observedAt = view.record({ kind, namespace, name: metaOf(object).name })?.observedAt;
    const ms = observedAt === undefined ? Number.NaN : Date.parse(observedAt);
    if (!Number.isNaN(ms) && (latest === undefined || ms > latest)) latest = ms;
  };
  for (const slice of view.list('endpointslice'))
    if (metaOf(slice).namespace === namespace && metaOf(slice).labels?.[SERVICE_NAME_LABEL] === service)
      observe('endpointslice', slice);
  for (const lease of view.list('lease')) {
    const holder = (lease as { spec?: { holderIdentity?: string } }).spec?.holderIdentity;
    if (
      metaOf(lease).namespace === namespace &&
      metaOf(lease).labels?.[WEBHOOK_SERVER_LABEL] === instance &&
      holder !== undefined &&
      ready.has(holder)
    )
      observe('lease', lease);
  }
  return latest;
}

interface SliceEndpoint {
  conditions?: { ready?: boolean | null };
  targetRef?: { kind?: string; name?: string };
}

/**
 * The ready Pods one EndpointSlice lists: endpoints whose `conditions.ready` is not false (an
 * unset one counts as ready, as the EndpointSlice API asks consumers to read it: a Pod counted
 * ready must report, so that errs toward waiting) with a Pod as their target. One rule for the
 * gate's read and for the trigger that releases held moves.
 */
export function readyPodsOfSlice(slice: RecordedObject | undefined): string[] {
  const pods: string[] = [];
  for (const e of (slice as { endpoints?: SliceEndpoint[] } | undefined)?.endpoints ?? [])
    if (e.conditions?.ready !== false && e.targetRef?.kind === 'Pod' && e.targetRef.name)
      pods.push(e.targetRef.name);
  return pods;
}

/**
 * The ready Pods of an instance's Service: the union over its EndpointSlices of endpoints whose
 * `conditions.ready` is not false, by Pod name. An unset `ready` counts as ready, as the
 * EndpointSlice API asks consumers to read it: a Pod counted ready must report, so that errs
 * toward waiting.
 */
export function readReadyPods(view: ViewReads, instance: string, namespace: string): string[] {
  const service = webhookServiceName(instance);
  const pods = new Set<string>();
  for (const slice of view.list('endpointslice')) {
    if (metaOf(slice).namespace !== namespace || metaOf(slice).labels?.[SERVICE_NAME_LABEL] !== service)
      continue;
    for (const pod of readyPodsOfSlice(slice)) pods.add(pod);
  }
  return [...pods];
}

type Lists = ReadonlyArray<readonly RecordedObject[]>;
const derived = new WeakMap<object, Map<object, { lists: Lists; value: unknown }>>();

/**
 * `compute` over the view's objects of `kinds`, again only when one of them was recorded anew
 * since the last call for `slot`. The view replaces an object with a new one on each record and
 * hands out the same list while a kind is unchanged, so comparing references is exact: a pointer
 * per kind, a pointer per object when the list itself is new. What it spares: every decision
 * derives the whole fleet (expected sets, the resolver over every config); handover work for
 * many targets arrives at once and, on one event loop, each decision waited for the ones before
 * it to recompute the same thing (bench/handover.ts: p99 from 187 ms at 90 configs to 812 ms at
 * 1,200).
 *
 * `same(previous, next)`, when given, keeps the previous value when a change of the objects left
 * what was derived from them equal: readers that memoize on the value (by reference) stay warm
 * through the writes that do not concern them, as a status write does not concern the resolver.
 * Callers must not modify what it returns.
 */
export function derivedFromView<T>(
  view: Pick<ObjectView, 'list'>,
  kinds: readonly string[],
  slot: object,
  compute: (lists: Lists) => T,
  same?: (previous: T, next: T) => boolean,
): T {
  let bySlot = derived.get(view);
  if (!bySlot) {
    bySlot = new Map();
    derived.set(view, bySlot);
  }
  const lists = kinds.map((kind) => view.list(kind));
  const cached = bySlot.get(slot) as { lists: Lists; value: T } | undefined;
  if (cached && sameLists(cached.lists, lists)) return cached.value;
  const next = compute(lists);
  const value = cached && same?.(cached.value, next) ? cached.value : next;
  bySlot.set(slot, { lists, value });
  return value;
}

function sameLists(a: Lists, b: Lists): boolean {
  return (
    a.length === b.length &&
    a.every((list, i) => {
      const other = b[i] as readonly RecordedObject[];
      return list === other || (list.length === other.length && list.every((o, j) => o === other[j]));
    })
  );
}

const EXPECTATION_KINDS = ['crdconfig', 'xrdconfig', 'webhookserver', ...TARGET_VIEW_KINDS] as const;
const EXPECTATION = {};

/** `derive(parsed)` once per recorded object; undefined when it does not parse with `schema`. */
function factsPerRecord<S, F>(
  schema: ZodType<S>,
  derive: (parsed: S) => F,
): (object: RecordedObject) => F | undefined {
  const facts = new WeakMap<RecordedObject, F | undefined>();
  return (object) => {
    if (!facts.has(object)) {
      const parsed = parseRecorded(schema, object);
      facts.set(object, parsed.success ? derive(parsed.data) : undefined);
    }
    return facts.get(object);
  };
}

/** What the expectation reads of a config and of an instance. */
const configFactsOf = factsPerRecord(conversionConfigSchema, viewConfigOf);
const instanceFactsOf = factsPerRecord(webhookServerSchema, instanceLikeOf);

/**
 * The expectation view (`core/expected-set.ts`) from the recorded configs, instances and
 * targets. The same object while what it holds is equal: status writes (assign's, the
 * handover's, lease-aggregate's) change records it is derived from but none of its facts, and
 * every expected set and decode memoized on it stays valid.
 */
export function readExpectationView(view: ViewReads): ExpectationView {
  return derivedFromView(
    view,
    EXPECTATION_KINDS,
    EXPECTATION,
    ([crdconfigs, xrdconfigs, instances]) => ({
      configs: [...(crdconfigs ?? []), ...(xrdconfigs ?? [])].flatMap((o) => configFactsOf(o) ?? []),
      instances: (instances ?? []).flatMap((o) => instanceFactsOf(o) ?? []),
      targets: readTargetServices(view),
    }),
    sameExpectation,
  );
}

const TARGET_SERVICES = {};

/**
 * Every recorded target (CRD or XRD) by name, with the Services its conversions may go to now
 * (`servicesNamingTarget`): a CRD's own; an XRD's own and those of the CRDs Crossplane generated
 * from it, which is what the apiserver routes by (core/routing.ts). What the data plane holds
 * plans for, what keeps an instance in use, and what the expected sets are computed from.
 */
export function readTargetServices(view: Pick<ObjectView, 'list'>): ReadonlyMap<string, readonly string[]> {
  return derivedFromView(view, TARGET_VIEW_KINDS, TARGET_SERVICES, ([crds, xrds]) => {
    const out = new Map<string, readonly string[]>();
    for (const crd of crds ?? []) out.set(metaOf(crd).name, servicesNamingTarget(conversionServiceOf(crd)));
    for (const xrd of xrds ?? []) {
      // Read before the XRD's own entry replaces its composite CRD's, which has the same name.
      const routed = generatedCrdNames(xrd).flatMap((crd) => out.get(crd) ?? []);
      out.set(metaOf(xrd).name, servicesNamingTarget(conversionServiceOf(xrd), routed));
    }
    return out;
  });
}

/**
 * The CRDs an XRD target routes by, as the view records them, compared with the XRD's own
 * conversion (core/routing.ts). `xrd` may be the recorded XRD or what it will say after a patch.
 */
export function readRoutes(view: Pick<ObjectView, 'record'>, xrd: unknown): RouteState[] {
  return routeStatesOf(xrd, (name) => {
    const record = view.record({ kind: 'crd', namespace: '', name });
    return record && !record.omitted ? record.object : undefined;
  });
}

/**
 * The Service the apiserver sends a target's conversions to: the target's own spec.conversion's
 * for a CRD; for an XRD, the one every CRD Crossplane generated from it names, and undefined
 * while one is missing or they name different Services (what the XRD itself says is only what
 * Crossplane will copy).
 */
export function readRoutedService(
  view: Pick<ObjectView, 'record'>,
  targetViewKind: string,
  live: unknown,
): string | undefined {
  if (targetViewKind !== KINDS.xrd.viewKind) return conversionServiceOf(live);
  const routes = readRoutes(view, live);
  const [first] = routes;
  if (first === undefined || routes.some((r) => !r.exists || r.serviceName !== first.serviceName))
    return undefined;
  return first.serviceName;
}

const setsByExpectation = new WeakMap<ExpectationView, (instance: string) => ExpectedSet>();
const preparedByView = new WeakMap<object, ExpectedSetCache>();

/**
 * `expectedSets(readExpectationView(view))`, computed once per expectation view; an instance
 * whose targets a change left as they were keeps its prepared set (and the decodes memoized
 * against it): a handover moves one target between two instances, not the fleet.
 */
export function readExpectedSets(view: ViewReads): (instance: string) => ExpectedSet {
  const expectation = readExpectationView(view);
  let sets = setsByExpectation.get(expectation);
  if (!sets) {
    let prepared = preparedByView.get(view);
    if (!prepared) {
      prepared = new Map();
      preparedByView.set(view, prepared);
    }
    sets = expectedSets(expectation, prepared);
    setsByExpectation.set(expectation, sets);
  }
  return sets;
}
