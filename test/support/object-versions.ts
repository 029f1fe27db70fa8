// Every version of some objects, as a Kubernetes watch delivers them: a test that must judge
// each state an object passed through (not only the one a poll happens to read) follows the
// objects from a list's resourceVersion, so no version written after it is missed, and resumes
// from the last one seen when the apiserver ends a watch.
//
// resourceVersions are opaque to clients in general. On this project's local stack every
// resource lives in one etcd, whose revision is the resourceVersion, so versions of different
// objects (a config and its CRD) are ordered by it: "the CRD as it was when the config was
// written" is the CRD's last version at or below the config's resourceVersion.
import { type KubeConfig, Watch } from '@kubernetes/client-node';

export interface ObjectVersion<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** metadata.resourceVersion, as a number: the etcd revision of the write. */
  rv: number;
  object: T & { metadata: { name: string; uid: string; resourceVersion: string } };
}

export interface VersionFollower<T> {
  readonly versions: ObjectVersion<T>[];
  /** Set when a watch failed in a way that loses versions (410 Gone): every judgement after it is void. */
  readonly broken: string | undefined;
  stop(): void;
}

/**
 * Follows the objects of the collection at `path` (e.g. `/apis/apiextensions.k8s.io/v1/customresourcedefinitions`)
 * whose name `wanted` accepts, from `fromResourceVersion` (a list's metadata.resourceVersion).
 */
export async function followVersions<T>(
  kc: KubeConfig,
  path: string,
  fromResourceVersion: string,
  wanted: (name: string) => boolean,
): Promise<VersionFollower<T>> {
  const versions: ObjectVersion<T>[] = [];
  const state = {
    stopped: false,
    broken: undefined as string | undefined,
    controller: undefined as AbortController | undefined,
  };
  let resourceVersion = fromResourceVersion;
  const watch = new Watch(kc);
  const start = async (): Promise<void> => {
    state.controller = await watch.watch(
      path,
      { resourceVersion, allowWatchBookmarks: true },
      (phase, obj: ObjectVersion<T>['object'] & { code?: number; message?: string }) => {
        if (phase === 'ERROR') {
          state.broken = `watch of ${path} failed: ${obj.code} ${obj.message}`;
          return;
        }
        resourceVersion = obj.metadata.resourceVersion;
        if (phase === 'BOOKMARK' || !wanted(obj.metadata.name)) return;
        versions.push({ type: phase as ObjectVersion<T>['type'], rv: Number(resourceVersion), object: obj });
      },
      () => {
        if (state.stopped || state.broken) return;
        // The apiserver ends every watch after a while, and the client times a request out:
        // resume where it stopped. A version that aged out of the watch cache meanwhile is an
        // ERROR event (410 Gone), never a silent gap.
        start().catch((e: unknown) => {
          state.broken = `watch of ${path} not resumed: ${String(e)}`;
        });
      },
    );
  };
  await start();
  return {
    versions,
    get broken() {
      return state.broken;
    },
    stop() {
      state.stopped = true;
      state.controller?.abort();
    },
  };
}

/** The last version of `name` at or below revision `rv`: what the object was when `rv` was written. */
export function versionAt<T>(
  versions: readonly ObjectVersion<T>[],
  name: string,
  rv: number,
): ObjectVersion<T> | undefined {
  let found: ObjectVersion<T> | undefined;
  for (const v of versions)
    if (v.object.metadata.name === name && v.rv <= rv && (!found || v.rv > found.rv)) found = v;
  return found;
}
