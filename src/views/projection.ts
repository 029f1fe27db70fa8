// What a view keeps of a recorded object: the fields its reader declares, nothing else. A view
// projects each record as it applies it (the way controller-runtime's caches take a transform), so
// a handler that never compiles rules holds no target's schemas: three 50-leaf schemas are most of
// a CRD's record, and a replica serving 1/20 of the targets no longer holds every one's. The
// record streams stay whole; a reader that needs the rest of an object reads it again from the
// bus (ObjectView.whole).
import { HANDOVER_VERDICT_ANNOTATION } from '../api/constants.ts';
import type { RecordedObject } from '../bus/messages.ts';

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

interface FieldTree {
  [key: string]: FieldTree | true;
}

/** The projection keeping `fields`, and always what names the object and its revision (a RecordedObject's). */
export function projectionOf(fields: readonly FieldPath[]): Projection {
  const tree = treeOf([...IDENTITY, ...fields]);
  return (object) => pick(object, tree) as RecordedObject;
}

const IDENTITY: readonly FieldPath[] = [
  ['apiVersion'],
  ['kind'],
  ['metadata', 'name'],
  ['metadata', 'namespace'],
  ['metadata', 'uid'],
  ['metadata', 'resourceVersion'],
];

function treeOf(fields: readonly FieldPath[]): FieldTree {
  const root: FieldTree = {};
  for (const path of fields) {
    if (path.length === 0) throw new Error('a field path names at least one key');
    let node = root;
    path.forEach((key, i) => {
      const last = i === path.length - 1;
      const existing = node[key];
      if (existing === true) return;
      if (last) {
        node[key] = true;
        return;
      }
      const next: FieldTree = existing ?? {};
      node[key] = next;
      node = next;
    });
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
    else {
      const picked = pick(field, sub);
      if (picked !== undefined) out[key] = picked;
    }
  }
  return out;
}

/**
 * What the handlers read of a target (a CRD or an XRD): which Service its conversion calls and
 * with what trust bundle, the handover's verdict annotation, what a write's precondition and a
 * verdict's cache key need, and the versions' names and flags. Never the versions' schemas (nor
 * their printer columns and subresources): a handler that compiles a config's rules against them
 * reads the whole record again (views/config-verdicts.ts).
 */
export const TARGET_FIELDS: readonly FieldPath[] = [
  ['metadata', 'generation'],
  ['metadata', 'deletionTimestamp'],
  ['metadata', 'annotations', HANDOVER_VERDICT_ANNOTATION],
  ['spec', 'group'],
  ['spec', 'conversion'],
  ['spec', 'versions', EACH, 'name'],
  ['spec', 'versions', EACH, 'served'],
  ['spec', 'versions', EACH, 'storage'],
  ['spec', 'versions', EACH, 'referenceable'],
];

/**
 * What the handlers read of a config (CRDConversionConfig, XRDConversionConfig): all of it but
 * its spokes' rules, the bulk of a config, which only a compile reads (views/config-verdicts.ts
 * reads the whole record for it). The projection still parses as a config, with every spoke's
 * rules empty: a reader that compiles must never take them from a projected view.
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
  ['status'],
];

const projectTarget = projectionOf(TARGET_FIELDS);
const projectConfig = projectionOf(CONFIG_FIELDS);

/**
 * What the long-running views keep, the handlers' and the webhook-server replicas': targets and
 * configs projected, every other kind whole. `switchyard explain` and `replay`, one-off commands,
 * keep theirs whole.
 */
export const VIEW_PROJECTIONS: ViewProjections = {
  crd: projectTarget,
  xrd: projectTarget,
  crdconfig: projectConfig,
  xrdconfig: projectConfig,
};
