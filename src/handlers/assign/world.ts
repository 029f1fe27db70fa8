// What assignment reads from recorded objects: each config as a subject (target, pin) with its
// work key, and each instance as the resolver sees it. One reading for the router (which
// decides what a change wakes) and the assign handler (which decides what to write), so the
// two can never disagree about what a config converts.
//
// A record whose content was omitted (too large for the bus) has no spec: a config is then left
// out (it cannot be resolved, and guessing would move it), an instance counts as present with
// no default and no sharding — the apiserver would have to hold a >1 MiB instance for that.
import { CRD_CONFIG_KIND, XRD_CONFIG_KIND } from '../../api/conversion-config.ts';
import type { RecordedObject } from '../../bus/messages.ts';
import type { ObjectView } from '../../bus/view.ts';
import type { InstanceReadiness } from '../../core/assign-decision.ts';
import {
  type ConfigSubject,
  type Fleet,
  fleetOf,
  type InstanceLike,
  sameInstanceLikes,
} from '../../core/assignment.ts';
import { derivedFromView, readReadyPods } from '../../views/view-reads.ts';
import type { ObjectWorkKey } from '../work-keys.ts';

/** The concern's name: its work subjects, field manager (`switchyard-assign`) and logs. */
export const ASSIGN_CONCERN = 'assign';

export const CONFIG_KINDS = ['crdconfig', 'xrdconfig'] as const;
export const INSTANCE_KIND = 'webhookserver';
/** The recorded kinds the resolver reads: what the router's view holds for every trigger function. */
export const ASSIGN_WORLD_KINDS = [INSTANCE_KIND, ...CONFIG_KINDS];
/** The recorded kinds assignment reads: the resolver's, and which instances have a ready Pod. */
export const ASSIGN_VIEW_KINDS = [...ASSIGN_WORLD_KINDS, 'endpointslice'];

export interface KeyedSubject extends ConfigSubject {
  key: ObjectWorkKey;
}

export interface AssignWorld {
  configs: readonly KeyedSubject[];
  instances: readonly InstanceLike[];
}

export function isConfigKind(kind: string): boolean {
  return (CONFIG_KINDS as readonly string[]).includes(kind);
}

interface LooseSpec {
  targetCRD?: { name?: unknown };
  targetXRD?: { name?: unknown };
  webhookServerRef?: { name?: unknown };
  namespace?: unknown;
  default?: unknown;
  sharding?: { enabled?: unknown; weight?: unknown };
}

function specOf(object: RecordedObject): LooseSpec | undefined {
  const spec = (object as { spec?: unknown }).spec;
  return typeof spec === 'object' && spec !== null ? (spec as LooseSpec) : undefined;
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The config as a subject, in `subjectOf`'s form (`<Kind>/<name>`); undefined without a readable target. */
export function configSubjectOf(kind: string, object: RecordedObject): KeyedSubject | undefined {
  const spec = specOf(object);
  const name = object.metadata.name;
  const target = stringOrUndefined(kind === 'crdconfig' ? spec?.targetCRD?.name : spec?.targetXRD?.name);
  if (target === undefined) return undefined;
  const pinnedTo = stringOrUndefined(spec?.webhookServerRef?.name);
  return {
    key: { kind, name },
    config: `${kind === 'crdconfig' ? CRD_CONFIG_KIND : XRD_CONFIG_KIND}/${name}`,
    target,
    ...(pinnedTo !== undefined && { pinnedTo }),
  };
}

export function instanceOf(object: RecordedObject): InstanceLike {
  const spec = specOf(object);
  const sharding = spec?.sharding;
  return {
    metadata: { name: object.metadata.name },
    spec: {
      default: spec?.default === true,
      sharding:
        sharding === undefined
          ? undefined
          : {
              enabled: sharding.enabled === true,
              weight: typeof sharding.weight === 'number' ? sharding.weight : undefined,
            },
    },
  };
}

const WORLD_KINDS = [...CONFIG_KINDS, INSTANCE_KIND];

/**
 * Which instances exist and which have a ready Pod behind their Service, as the handover's gate
 * reads them (`readReadyPods`, in the instance's namespace): a move is held while the gate could
 * only answer DestinationNotReady.
 */
export function instanceReadinessOf(
  view: Pick<ObjectView, 'list' | 'record' | 'renewTime'>,
  defaultNamespace: string,
): InstanceReadiness {
  return {
    ready(instance) {
      const record = view.record({ kind: INSTANCE_KIND, namespace: '', name: instance });
      if (!record) return false;
      const namespace = stringOrUndefined(specOf(record.object)?.namespace) ?? defaultNamespace;
      return readReadyPods(view, instance, namespace).length > 0;
    },
  };
}
const WORLD = {};

/**
 * The world as the view holds it now: derived again only when a config or an instance was
 * recorded, and the same object while what assignment reads of them is unchanged (a status
 * write changes a record, not a subject).
 */
export function assignWorldOf(view: Pick<ObjectView, 'list'>): AssignWorld {
  return derivedFromView(
    view,
    WORLD_KINDS,
    WORLD,
    (lists) => {
      const configs: KeyedSubject[] = [];
      CONFIG_KINDS.forEach((kind, i) => {
        for (const object of lists[i] ?? []) {
          const subject = configSubjectOf(kind, object);
          if (subject) configs.push(subject);
        }
      });
      return { configs, instances: (lists[CONFIG_KINDS.length] ?? []).map(instanceOf) };
    },
    sameWorld,
  );
}

function sameWorld(a: AssignWorld, b: AssignWorld): boolean {
  return (
    a.configs.length === b.configs.length &&
    a.configs.every((x, i) => sameKeyedSubject(x, b.configs[i] as KeyedSubject)) &&
    sameInstanceLikes(a.instances, b.instances)
  );
}

function sameKeyedSubject(a: KeyedSubject, b: KeyedSubject): boolean {
  return (
    a.key.kind === b.key.kind &&
    a.key.name === b.key.name &&
    a.config === b.config &&
    a.target === b.target &&
    a.pinnedTo === b.pinnedTo
  );
}

/**
 * The configs as subjects, by key and by target, kept up to date one change at a time from the
 * view's journal: a decision about one config reads its rivals for the target in O(1) where
 * deriving the whole world walks every config after each write (a replay takes thousands of
 * decisions in a row, and a rebalance's every status write changes the config list).
 */
type IndexedView = Pick<ObjectView, 'changesSince' | 'records' | 'record'>;

class ConfigIndex {
  private readonly positions = new Map<string, number>();
  private readonly byKey = new Map<string, KeyedSubject>();
  private readonly byTarget = new Map<string, Set<string>>();

  /** The configs that claim `target`, up to date with `view`. */
  claimants(view: IndexedView, target: string): KeyedSubject[] {
    for (const kind of CONFIG_KINDS) this.catchUp(view, kind);
    const claims: KeyedSubject[] = [];
    for (const key of this.byTarget.get(target) ?? []) claims.push(this.byKey.get(key) as KeyedSubject);
    return claims;
  }

  private catchUp(view: IndexedView, kind: string): void {
    const changes = view.changesSince(kind, this.positions.get(kind) ?? 0);
    if (changes === undefined) {
      for (const key of [...this.byKey.keys()].filter((k) => k.startsWith(`${kind}/`))) this.remove(key);
      for (const record of view.records(kind)) {
        const subject = configSubjectOf(kind, record.object);
        if (subject) this.put(`${kind}/${subject.key.name}`, subject);
      }
      const position = view.changesSince(kind, Number.MAX_SAFE_INTEGER);
      this.positions.set(kind, position?.position ?? 0);
      return;
    }
    // A name changed twice since is read twice: cheaper than a set for the usual one or two.
    for (const name of changes.names) {
      const [namespace = '', objectName = ''] = splitNameKey(name);
      const key = `${kind}/${objectName}`;
      const record = view.record({ kind, namespace, name: objectName });
      const subject = record && configSubjectOf(kind, record.object);
      // Most changes are status writes: the same target, so the same claimants.
      if (subject && this.byKey.get(key)?.target === subject.target) this.byKey.set(key, subject);
      else {
        this.remove(key);
        if (subject) this.put(key, subject);
      }
    }
    this.positions.set(kind, changes.position);
  }

  private put(key: string, subject: KeyedSubject): void {
    this.byKey.set(key, subject);
    const claims = this.byTarget.get(subject.target) ?? new Set<string>();
    this.byTarget.set(subject.target, claims.add(key));
  }

  private remove(key: string): void {
    const subject = this.byKey.get(key);
    if (!subject) return;
    this.byKey.delete(key);
    const claims = this.byTarget.get(subject.target);
    claims?.delete(key);
    if (claims?.size === 0) this.byTarget.delete(subject.target);
  }
}

function splitNameKey(name: string): [string, string] {
  const slash = name.indexOf('/');
  return [name.slice(0, slash), name.slice(slash + 1)];
}

const configIndexes = new WeakMap<object, ConfigIndex>();

/** The configs that claim `target` on `view`: what a decision about one config resolves among. */
export function claimantsOf(view: IndexedView, target: string): KeyedSubject[] {
  let index = configIndexes.get(view);
  if (!index) {
    index = new ConfigIndex();
    configIndexes.set(view, index);
  }
  return index.claimants(view, target);
}

const INSTANCES = {};
const fleets = new WeakMap<readonly InstanceLike[], Fleet>();

/**
 * The fleet the resolver resolves in: the same object until an instance's name, default or
 * sharding changes. Building it hashes every pool member's name, and each lone claimant's
 * resolution is kept per fleet (assign.ts `resolvedOnce`); an instance's status is written after
 * every assignment to it, and that must not make every target hash again.
 */
export function fleetOfView(view: Pick<ObjectView, 'list'>): Fleet {
  const instances = derivedFromView(
    view,
    [INSTANCE_KIND],
    INSTANCES,
    (lists) => (lists[0] ?? []).map(instanceOf),
    sameInstanceLikes,
  );
  let fleet = fleets.get(instances);
  if (!fleet) {
    fleet = fleetOf(instances);
    fleets.set(instances, fleet);
  }
  return fleet;
}
