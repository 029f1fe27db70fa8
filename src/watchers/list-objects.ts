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

/** Whether the apiserver serves a group version (XRDs exist only where Crossplane is installed). */
export async function servesGroupVersion(kc: KubeConfig, groupVersionPath: string): Promise<boolean> {
  const served = await ignoreNotFound(sendForJson(kc, HttpMethod.GET, apiUrl(kc, groupVersionPath)));
  return served !== undefined;
}
