import type { KubeConfig } from '@kubernetes/client-node';
import type { RecordedObject } from '../bus/messages.ts';
import { ignoreNotFound } from '../kube/errors.ts';
import { apiUrl, HttpMethod, sendForJson } from '../kube/request.ts';

export interface ObjectList {
  items: RecordedObject[];
  resourceVersion: string;
}

/**
 * Lists every object at `path` as raw JSON, page by page, so list items have
 * exactly the shape watch events have.
 */
export async function listObjects(
  kc: KubeConfig,
  path: string,
  query: Record<string, string | undefined> = {},
): Promise<ObjectList> {
  const items: RecordedObject[] = [];
  let cont: string | undefined;
  let resourceVersion = '';
  do {
    const url = apiUrl(kc, path);
    url.searchParams.set('limit', '500');
    for (const [k, v] of Object.entries({ ...query, continue: cont }))
      if (v !== undefined) url.searchParams.set(k, v);
    const body = await sendForJson<{
      items?: RecordedObject[];
      metadata?: { resourceVersion?: string; continue?: string };
    }>(kc, HttpMethod.GET, url);
    items.push(...(body.items ?? []));
    resourceVersion = body.metadata?.resourceVersion ?? resourceVersion;
    cont = body.metadata?.continue || undefined;
  } while (cont);
  return { items, resourceVersion };
}

/** The versions discovery lists of an API group (`/apis/<group>`); none where the group is not served. */
export async function servedVersions(kc: KubeConfig, group: string): Promise<string[]> {
  const body = await ignoreNotFound(
    sendForJson<{ versions?: { version: string }[] }>(kc, HttpMethod.GET, apiUrl(kc, `/apis/${group}`)),
  );
  return body?.versions?.map((v) => v.version) ?? [];
}

/** The resources discovery lists at a group version (`/apis/<group>/<version>`); none where it is not served. */
export async function servedResources(kc: KubeConfig, groupVersion: string): Promise<string[]> {
  const body = await ignoreNotFound(
    sendForJson<{ resources?: { name: string }[] }>(kc, HttpMethod.GET, apiUrl(kc, `/apis/${groupVersion}`)),
  );
  return body?.resources?.map((r) => r.name) ?? [];
}

/** Whether the apiserver serves a group version (XRDs exist only where Crossplane is installed). */
export async function servesGroupVersion(kc: KubeConfig, groupVersionPath: string): Promise<boolean> {
  const served = await ignoreNotFound(sendForJson(kc, HttpMethod.GET, apiUrl(kc, groupVersionPath)));
  return served !== undefined;
}
