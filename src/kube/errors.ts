/**
 * The one place that reads a Kubernetes API failure (as controller-runtime's
 * `apierrors.IsNotFound` and `client.IgnoreNotFound`). client-node reports an
 * HTTP status in two shapes: the generated API clients throw `ApiException`
 * with `code`; `Watch` throws an Error with `statusCode`, and so does our
 * {@link ApiStatusError} (raw requests, `request.ts`). A watch's ERROR event is a `metav1.Status` with `code`. Every
 * reader of a status goes through {@link statusOf}; no other file looks at
 * those fields.
 */

/** A failure status of a raw request (`request.ts`); `reason` is the metav1.Status reason, e.g. `Conflict`. */
export class ApiStatusError extends Error {
  override readonly name = 'ApiStatusError';
  readonly statusCode: number;
  readonly reason: string | undefined;
  /** `details.kind` of the metav1.Status: what was not found, conflicted, … (e.g. `namespaces`). */
  readonly detailsKind: string | undefined;
  constructor(statusCode: number, message: string, reason?: string, detailsKind?: string) {
    super(message);
    this.statusCode = statusCode;
    this.reason = reason;
    this.detailsKind = detailsKind;
  }
}

/** The HTTP status a Kubernetes API failure carries; undefined for a network error or any other value. */
export function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; statusCode?: unknown };
  for (const v of [e.code, e.statusCode]) {
    // NATS errors carry 5-digit API codes and Node's network errors string codes: neither is an HTTP status.
    if (typeof v === 'number' && v >= 100 && v < 600) return v;
  }
  return undefined;
}

export const isNotFound = (err: unknown): boolean => statusOf(err) === 404;

/** A write into a namespace that does not exist (404 whose Status names `namespaces`). */
export const isNamespaceNotFound = (err: unknown): boolean =>
  err instanceof ApiStatusError && err.statusCode === 404 && err.detailsKind === 'namespaces';
/** 403: RBAC (or another authorizer) refused the request to this identity. */
export const isForbidden = (err: unknown): boolean => statusOf(err) === 403;
/** 409: the object changed since it was read (stale resourceVersion), or a create found it existing. */
export const isConflict = (err: unknown): boolean => statusOf(err) === 409;
/** 410: a watch or list position fell behind etcd compaction; only a relist recovers. */
export const isGone = (err: unknown): boolean => statusOf(err) === 410;
/** 429: API Priority and Fairness rejected the request; retry after a pause. */
export const isTooManyRequests = (err: unknown): boolean => statusOf(err) === 429;
export const isServerError = (err: unknown): boolean => (statusOf(err) ?? 0) >= 500;

/** Resolves to undefined instead of rejecting on 404: "already gone" is success for a delete or a read. */
export async function ignoreNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}
