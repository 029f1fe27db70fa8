/**
 * A raw request through a client's authentication, User-Agent and connection
 * pool (`ClientKubeConfig.applySecurityAuthentication` sets all three), for
 * what the generated clients cannot say: a list whose items keep exactly the
 * watch's shape, a server-side apply to any resource or its status
 * subresource. A failure status becomes an {@link ApiStatusError}, which
 * `statusOf` reads like client-node's own errors.
 */
import { HttpMethod, type KubeConfig, RequestContext } from '@kubernetes/client-node';
import { fetch } from 'undici';
import { ApiStatusError } from './errors.ts';

export function apiUrl(kc: KubeConfig, path: string): URL {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('kubeconfig has no current cluster');
  return new URL(server + path);
}

export interface SendOptions {
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

/** Sends one request; the raw response (any status) for callers that read statuses themselves. */
export async function send(kc: KubeConfig, method: HttpMethod, url: URL, opts: SendOptions = {}) {
  const ctx = new RequestContext(url.toString(), method);
  await kc.applySecurityAuthentication(ctx);
  const headers = ctx.getHeaders();
  if (opts.contentType) headers['Content-Type'] = opts.contentType;
  return fetch(url, {
    method,
    headers,
    dispatcher: ctx.getDispatcher(),
    ...(opts.body !== undefined && { body: JSON.stringify(opts.body) }),
    ...(opts.signal && { signal: opts.signal }),
  });
}

/** Sends one request and returns its JSON body; throws {@link ApiStatusError} on any status but 2xx. */
export async function sendForJson<T>(kc: KubeConfig, method: HttpMethod, url: URL, opts: SendOptions = {}) {
  const res = await send(kc, method, url, opts);
  const body = (await res.json().catch(() => ({}))) as T & {
    message?: string;
    reason?: string;
    details?: { kind?: string };
  };
  if (res.status < 200 || res.status >= 300) {
    throw new ApiStatusError(
      res.status,
      body.message ?? `${method} ${url.pathname}: HTTP ${res.status}`,
      body.reason,
      body.details?.kind,
    );
  }
  return body as T;
}

export { HttpMethod };
