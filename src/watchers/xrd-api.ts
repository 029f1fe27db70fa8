/**
 * Whether and at which version the watchers record XRDs, from what API discovery says of
 * Crossplane's group. Crossplane may be installed, upgraded or removed while the watchers run, so
 * the watcher process asks discovery at start and every `watchers.discoverySeconds`
 * (xrd-recorder.ts) and this decides what the answer asks for. Pure.
 *
 * - Recorded at the newest version served: Crossplane 2 serves XRDs at v2 beside v1. The records
 *   carry the same object either way (one uid, one resourceVersion; Switchyard reads the fields
 *   both versions share), so a watcher replaced for another version records nothing again.
 * - A failed discovery read changes nothing: an apiserver briefly down must not stop a watcher
 *   that runs, nor make records disappear.
 * - Once XRDs are served at no version and the XRD CRD itself is gone, its objects went with it
 *   (a CRD is deleted only after its objects are), so every XRD the bus still holds is recorded
 *   as deleted, as a relist that lists none would. Discovery alone is not enough for that: a
 *   deletion is final for an object's uid on the bus (src/bus/records/supersedes.ts), and
 *   discovery can leave a group out for a moment (an apiserver restarting). While the CRD
 *   exists (being deleted, or its versions not served), the running watcher keeps going: it
 *   records the deletions as the apiserver makes them.
 */

/** The XRD versions the watchers may record at, newest (preferred) first. */
export const XRD_VERSIONS = ['v2', 'v1'] as const;
export type XrdVersion = (typeof XRD_VERSIONS)[number];

/** What one read of discovery said. */
export interface XrdDiscovery {
  /** The versions of Crossplane's group whose resources include the XRDs. */
  servedAt: readonly string[];
  /**
   * Whether the XRD CustomResourceDefinition was confirmed absent. Asked only when `servedAt`
   * is empty (false otherwise).
   */
  definitionGone: boolean;
}

/**
 * Where the process's XRD recording stands: the version a watcher records at, or, with none
 * running, `idle` (the bus's XRD records left as they are: at start, or after a start that
 * failed) or `retired` (every XRD record was made a deletion since the API went away).
 */
export type XrdRecording = XrdVersion | 'idle' | 'retired';

export type XrdStep =
  | { step: 'keep' }
  /** Start a watcher at `version`; then stop the one at `replacing`, if any. */
  | { step: 'watch'; version: XrdVersion; replacing?: XrdVersion }
  /** Stop the watcher at `stopping`, if any, and record every XRD the bus holds as deleted. */
  | { step: 'retire'; stopping?: XrdVersion };

export type DiscoveryRead = { ok: true; value: XrdDiscovery } | { ok: false; error: unknown };

const KEEP: XrdStep = { step: 'keep' };

function isVersion(recording: XrdRecording): recording is XrdVersion {
  return (XRD_VERSIONS as readonly string[]).includes(recording);
}

export function decideXrdRecording(read: DiscoveryRead, recording: XrdRecording): XrdStep {
  if (!read.ok) return KEEP;
  const running = isVersion(recording) ? recording : undefined;
  const version = XRD_VERSIONS.find((v) => read.value.servedAt.includes(v));
  if (version) return version === running ? KEEP : { step: 'watch', version, replacing: running };
  if (!read.value.definitionGone || recording === 'retired') return KEEP;
  return { step: 'retire', stopping: running };
}
