// Who may read the NATS server's monitoring port: the decision of the gate sidecar in deploy/nats's
// Pod (monitor-gate.ts serves it). nats-server's HTTP monitoring has no authentication and shows
// every connection, subscription and account; the server binds it to 127.0.0.1 and the gate
// listens on the Pod's port in its place.
//
// The gate answers `/metrics` itself, to anyone (gate-metrics.ts: the JetStream stores' fill, which
// `/jsz` shows unauthenticated anyway), so a Prometheus scrapes it without the password.
//
// Two readers cannot send credentials: the kubelet's probes (`/healthz`) and KEDA's nats-jetstream
// scaler, which GETs `/jsz?acc=…&consumers=true&config=true` and, on a cluster, `/varz` of each
// server for three fields only (`server_name`, `connect_urls`, `cluster.urls`, to find each
// consumer's leader: pkg/scalers/nats_jetstream_scaler.go). Those pass without credentials, `/varz`
// reduced to the three fields; everything else, `/varz` whole included, needs HTTP Basic
// credentials (user `monitor`, the `monitor` key of the credentials Secret), compared in constant
// time. Credentials that are presented and wrong are refused even for `/varz`, so a mistyped
// password is told so rather than served the reduced answer.
import { createHash, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/** The HTTP Basic user name; its password is the credentials Secret's `monitor` key. */
export const MONITOR_USER = 'monitor';

/** Paths served whole without credentials: the probes' and KEDA's. Exact: anything else needs credentials. */
export const OPEN_PATHS: ReadonlySet<string> = new Set(['/healthz', '/jsz']);
export const REDUCED_PATH = '/varz';
/** Answered by the gate itself, never passed upstream (the server has no such path). */
export const METRICS_PATH = '/metrics';

export type Credentials = 'none' | 'valid' | 'invalid';

export type GateDecision =
  | { kind: 'pass' }
  | { kind: 'reduce-varz' }
  | { kind: 'metrics' }
  | { kind: 'unauthorized'; credentials: Exclude<Credentials, 'valid'> }
  | { kind: 'method-not-allowed' };

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** Equal in time that does not depend on where the strings differ (hashes: equal lengths). */
function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/**
 * What an `Authorization` header proves against `password`. No password configured (the file
 * missing or empty) proves nothing: every presented credential is invalid.
 */
export function credentialsOf(authorization: string | undefined, password: string | undefined): Credentials {
  if (authorization === undefined || authorization === '') return 'none';
  const match = /^basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!match || !password) return 'invalid';
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'invalid';
  // Both compared, always: which part was wrong takes no different time.
  const userOk = constantTimeEqual(decoded.slice(0, colon), MONITOR_USER);
  const passwordOk = constantTimeEqual(decoded.slice(colon + 1), password);
  return userOk && passwordOk ? 'valid' : 'invalid';
}

export function decideMonitorRequest(method: string, path: string, credentials: Credentials): GateDecision {
  if (method !== 'GET') return { kind: 'method-not-allowed' };
  if (path === METRICS_PATH) return { kind: 'metrics' };
  if (OPEN_PATHS.has(path) || credentials === 'valid') return { kind: 'pass' };
  if (path === REDUCED_PATH && credentials === 'none') return { kind: 'reduce-varz' };
  return { kind: 'unauthorized', credentials };
}

/** The fields of `/varz` KEDA's scaler reads; zod drops every other. */
export const kedaVarzSchema = z.object({
  server_name: z.string(),
  connect_urls: z.array(z.string()).optional(),
  cluster: z.object({ urls: z.array(z.string()).optional() }).optional(),
});
export type KedaVarz = z.infer<typeof kedaVarzSchema>;

export function reduceVarz(varz: unknown): KedaVarz {
  return kedaVarzSchema.parse(varz);
}
