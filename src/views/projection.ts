// What a view keeps of a recorded object: the fields its reader declares, nothing else. A view
// projects each record as it applies it (the way controller-runtime's caches take a transform), so
// a handler that never compiles rules holds no target's schemas: three 50-leaf schemas are most of
// a CRD's record, and a replica serving 1/20 of the targets no longer holds every one's. The
// record streams stay whole; a reader that needs the rest of an object reads it again from the
// bus (ObjectView.whole).
import { HANDOVER_VERDICT_ANNOTATION } from '../api/constants.ts';
import { configStatusSchema, conversionConfigSchema } from '../api/conversion-config.ts';
import type { RecordedObject } from '../bus/messages.ts';
import { parsedForm } from './parse-cache.ts';

/**
 * A field to keep, as the keys leading to it; `[]` steps into every item of an array. A path that
 * ends at an object keeps it whole, so the shortest path that covers what is read is the right one.
 */
export type FieldPath = readonly string[];

export const EACH = '[]';

/** Keeps what `fields` name of an object; absent fields stay absent. */
export type Projection = (object: RecordedObject) => RecordedObject;

/** A view's projections by view kind; a kind without one is held whole. */
export type ViewProjections = Readonly<Partial<Record<string, Projection>>>;

/** A kept leaf whose string value many objects share (a CA bundle): held once, not once per object. */
const SHARED = 'shared' as const;

interface FieldTree {
  [key: string]: FieldTree | true | typeof SHARED;
}

/**
 * The projection keeping `fields`, and always what names the object and its revision (a
 * RecordedObject's). `shared` are kept too, as the same string for every object that has the same
 * value: a 1.5 KiB CA bundle on each of 50,000 targets is one string, not 50,000 copies.
 * Shared or not, a projection keeps the same value.
 */
export function projectionOf(fields: readonly FieldPath[], shared: readonly FieldPath[] = []): Projection {
  const tree = treeOf([...IDENTITY, ...fields], [...SHARED_IDENTITY, ...shared]);
  return (object) => pick(object, tree) as RecordedObject;
}

/**
 * The most distinct shared values held for reuse, past which the least recently seen is
 * forgotten, and the longest: what the table keeps after the objects are gone stays under 8 MiB.
 */
const SHARED_VALUES_HELD = 256;
const SHARED_VALUE_MAX_CHARS = 32 * 1024;
const sharedValues = new Map<string, string>();

/** The copy of `value` already held, or `value`, now held; the most recent at the end. */
function sharedCopyOf(value: string): string {
  if (value.length > SHARED_VALUE_MAX_CHARS) return value;
  const held = sharedValues.get(value);
  if (held !== undefined) {
    sharedValues.delete(held);
    sharedValues.set(held, held);
    return held;
  }
  sharedValues.set(value, value);
  if (sharedValues.size > SHARED_VALUES_HELD) sharedValues.delete(sharedValues.keys().next().value as string);
  return value;
}

/** What every object of a kind says alike: one string for all of them. */
const SHARED_IDENTITY: readonly FieldPath[] = [['apiVersion'], ['kind']];

const IDENTITY: readonly FieldPath[] = [
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['metadata', 'uid'],
  ['metadata', 'resourceVersion'],
];

function treeOf(fields: readonly FieldPath[], shared: readonly FieldPath[]): FieldTree {
  const root: FieldTree = {};
  const paths = [
    ...fields.map((path) => ({ path, leaf: true as const })),
    ...shared.map((path) => ({ path, leaf: SHARED as typeof SHARED })),
  ];
  for (const { path, leaf } of paths) {
    if (path.length === 0) throw new Error('a field path names at least one key');
    let node = root;
    for (const [i, key] of path.entries()) {
      const existing = node[key];
      // A shorter path keeps the whole subtree; a shared leaf below it is kept with it, as is.
      if (existing === true || existing === SHARED) break;
      if (i === path.length - 1) {
        node[key] = leaf;
        break;
      }
      const next: FieldTree = existing ?? {};
      node[key] = next;
      node = next;
    }
  }
  return root;
}

function pick(value: unknown, tree: FieldTree): unknown {
  const each = tree[EACH];
  // A path says what it steps into: an array where it says `[]`, an object where it names keys.
  if (Array.isArray(value) !== (each !== undefined)) return undefined;
  if (Array.isArray(value))
    return value.map((item) => (each === true ? item : pick(item, each as FieldTree)));
  if (value === null || typeof value !== 'object') return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(tree)) {
    if (key === EACH || !Object.hasOwn(source, key)) continue;
    const field = source[key];
    if (sub === true) out[key] = field;
    else if (sub === SHARED) out[key] = typeof field === 'string' ? sharedCopyOf(field) : field;
    else {
      const picked = pick(field, sub);
      if (picked !== undefined) out[key] = picked;
    }
  }
  return out;
}

/**
 * What names the CRDs Crossplane generates from an XRD, which the apiserver routes its
 * conversions by (core/routing.ts `generatedCrdNames`): its group and its claim's plural.
 */
const ROUTING_FIELDS: readonly FieldPath[] = [
  ['spec', 'group'],
  ['spec', 'claimNames', 'plural'],
];

/**
 * What the handlers read of a target (a CRD or an XRD): how its conversion calls which Service
 * (the Service's name and namespace, and the trust bundle, apart: TARGET_SHARED), the handover's
 * verdict annotation, what a write's precondition and a verdict's cache key need, and the
 * versions' names and flags. Never the versions' schemas (nor their printer columns and
 * subresources): a handler that compiles a config's rules against them
 * reads the whole record again (views/config-verdicts.ts).
 */
export const TARGET_FIELDS: readonly FieldPath[] = [
  ['metadata', 'generation'],
  ['metadata', 'deletionTimestamp'],
  ['metadata', 'annotations', HANDOVER_VERDICT_ANNOTATION],
  ['spec', 'conversion', 'strategy'],
  ['spec', 'conversion', 'webhook', 'conversionReviewVersions'],
  ['spec', 'conversion', 'webhook', 'clientConfig', 'service', 'path'],
  ['spec', 'conversion', 'webhook', 'clientConfig', 'service', 'port'],
  ['spec', 'conversion', 'webhook', 'clientConfig', 'url'],
  ['spec', 'versions', EACH, 'name'],
  ['spec', 'versions', EACH, 'served'],
  ['spec', 'versions', EACH, 'storage'],
  ['spec', 'versions', EACH, 'referenceable'],
  ...ROUTING_FIELDS,
  ['status', 'conditions', EACH, 'type'],
  ['status', 'conditions', EACH, 'status'],
];

/** A config's status fields a handler's view keeps whole: every one but spokeStatuses. */
const CONFIG_STATUS_FIELDS = Object.keys(configStatusSchema.shape).filter(
  (field) => field !== 'spokeStatuses',
);

/**
 * What the handlers read of a config (CRDConversionConfig, XRDConversionConfig): all of it but
 * its spokes' rules, the bulk of a config, which only a compile reads (views/config-verdicts.ts
 * reads the whole record for it), and but the detail of its status's spokeStatuses (rule
 * results, uncovered fields, diagnostics: up to 64 KiB a config), which nothing reads: of each
 * spoke's, its version and lossless verdict, which with schemaHash tell config-status whether
 * what it would write is written (core/config-status.ts). The projection still parses as a
 * config, with every spoke's rules empty: a reader that compiles must never take them from a
 * projected view.
 */
export const CONFIG_FIELDS: readonly FieldPath[] = [
  ['metadata', 'generation'],
  ['metadata', 'deletionTimestamp'],
  ['spec', 'targetCRD'],
  ['spec', 'targetXRD'],
  ['spec', 'hubVersion'],
  ['spec', 'spokes', EACH, 'version'],
  ['spec', 'webhookServerRef'],
  ['spec', 'conversionReviewVersions'],
  ['spec', 'unmappedFieldPolicy'],
  ['spec', 'unmappedFieldReason'],
  ['spec', 'driftPolicy'],
  ...CONFIG_STATUS_FIELDS.map((field) => ['status', field]),
  ['status', 'spokeStatuses', EACH, 'version'],
  ['status', 'spokeStatuses', EACH, 'lossless'],
];

/** The Service a target's conversion names: the same for every target of an instance. */
const TARGET_SERVICE_NAME: FieldPath = ['spec', 'conversion', 'webhook', 'clientConfig', 'service', 'name'];

/**
 * What a target's conversion says alike for every target of an instance: its Service, and the CA
 * bundle it trusts (1.5 KiB).
 */
const TARGET_SHARED: readonly FieldPath[] = [
  TARGET_SERVICE_NAME,
  ['spec', 'conversion', 'webhook', 'clientConfig', 'service', 'namespace'],
  ['spec', 'conversion', 'webhook', 'clientConfig', 'caBundle'],
];

const projectTarget = projectionOf(TARGET_FIELDS, TARGET_SHARED);
const projectConfigUnparsed = projectionOf(CONFIG_FIELDS);
const projectConfig = parsedConfig(projectConfigUnparsed);

/**
 * A config projection whose result is kept as its parse: every reader parses configs, and the
 * view then holds one copy of each instead of the projection and its parse.
 */
function parsedConfig(project: Projection): Projection {
  return (object) => parsedForm(conversionConfigSchema, project(object));
}

/**
 * What the handlers' long-running views keep: targets and configs projected, every other kind
 * whole. `switchyard explain` and `replay`, one-off commands, keep theirs whole.
 */
export const HANDLER_VIEW_PROJECTIONS: ViewProjections = {
  crd: projectTarget,
  xrd: projectTarget,
  crdconfig: projectConfig,
  xrdconfig: projectConfig,
};

/**
 * What the views of readers that take of a config only its subject keep (its target and pin,
 * read off the record: handlers/assign/world.ts `configSubjectOf`): the router's, assign's and the
 * instances handler's. The handlers' projections, with configs as projected, not as parsed: a
 * parse, with its defaults, holds more than the projection, and nobody would read it.
 */
export const CONFIG_SUBJECT_VIEW_PROJECTIONS: ViewProjections = {
  ...HANDLER_VIEW_PROJECTIONS,
  crdconfig: projectConfigUnparsed,
  xrdconfig: projectConfigUnparsed,
};

/**
 * What a webhook-server replica reads of a target: which Service its conversion names (a plan is
 * held while it names the replica's), its generation (a plan's revision) and, of an XRD, what
 * names the CRDs generated from it (a plan is held while one of them names the replica's Service). Its group and
 * versions are read whole with the rules, when the plan compiles (views/config-sources.ts).
 */
export const REPLICA_TARGET_FIELDS: readonly FieldPath[] = [['metadata', 'generation'], ...ROUTING_FIELDS];

/**
 * What a replica reads of a config: what assignment resolves it by, and of its status only the
 * phase (an Invalid config is expected nowhere: core/expected-set.ts, its Lease's expectation).
 */
export const REPLICA_CONFIG_FIELDS: readonly FieldPath[] = [
  ...CONFIG_FIELDS.filter((path) => path[0] !== 'status'),
  ['status', 'phase'],
];

const projectReplicaTarget = projectionOf(REPLICA_TARGET_FIELDS, [TARGET_SERVICE_NAME]);
const projectReplicaConfig = parsedConfig(projectionOf(REPLICA_CONFIG_FIELDS));

/**
 * What a webhook-server replica's view keeps: its targets and configs down to what deciding which
 * plans to hold reads. A target it does not serve costs it a name, a revision and a Service name.
 */
export const REPLICA_VIEW_PROJECTIONS: ViewProjections = {
  crd: projectReplicaTarget,
  xrd: projectReplicaTarget,
  crdconfig: projectReplicaConfig,
  xrdconfig: projectReplicaConfig,
};
