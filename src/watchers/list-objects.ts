import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';
import type { RecordedObject } from '../bus/messages.ts';

export interface ObjectList {
  items: RecordedObject[];
  resourceVersion: string;
}

export class ApiStatusError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

/**
 * A GET through the same authentication and connection pool as client-node's
 * Watch, so a list and the watch that follows it carry one client's identity
 * and User-Agent.
 */
async function get(kc: KubeConfig, url: URL) {
  const ctx = new RequestContext(url.toString(), HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return fetch(url, { headers: ctx.getHeaders(), dispatcher: ctx.getDispatcher() });
}

function apiUrl(kc: KubeConfig, path: string): URL {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('kubeconfig has no current cluster');
  return new URL(server + path);
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
    const res = await get(kc, url);
    const body = (await res.json()) as {
      items?: RecordedObject[];
      metadata?: { resourceVersion?: string; continue?: string };
      message?: string;
    };
    if (res.status !== 200)
      throw new ApiStatusError(res.status, body.message ?? `list ${path}: HTTP ${res.status}`);
    items.push(...(body.items ?? []));
    resourceVersion = body.metadata?.resourceVersion ?? resourceVersion;
    cont = body.metadata?.continue || undefined;
  } while (cont);
  return { items, resourceVersion };
}

/** Whether the apiserver serves a group version (XRDs exist only where Crossplane is installed). */
export async function servesGroupVersion(kc: KubeConfig, groupVersionPath: string): Promise<boolean> {
  const res = await get(kc, apiUrl(kc, groupVersionPath));
  await res.body?.cancel();
  if (res.status === 404) return false;
  if (res.status !== 200)
    throw new ApiStatusError(res.status, `discovery ${groupVersionPath}: HTTP ${res.status}`);
  return true;
}
