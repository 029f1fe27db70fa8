// Every process talks to Kubernetes through three clients split by traffic
// type, never by code structure (BRIEF §8, docs/kubernetes-clients.md):
//
// | client    | for                                     | client-side limit                          |
// |-----------|-----------------------------------------|--------------------------------------------|
// | writes    | patches, applies, status, Lease writes  | none by default; opt-in kubernetes.qps/burst |
// | informers | list and watch                          | none, no knob                              |
// | events    | Kubernetes Events (via the recorder)    | eventQPS/eventBurst bucket + bounded queue |
//
// Each has its own User-Agent `switchyard/<component>/<client>` and its own
// connection pool, so a storm on one never queues behind, or takes connections
// from, another. One set per process: the configured numbers are per process,
// never multiplied by the number of clients.
import { hostname } from 'node:os';
import { EventsV1Api, type KubeConfig, Watch } from '@kubernetes/client-node';
import type { KubernetesConfig } from '../config/schema.ts';
import { countKubeResponse, observeEventRecorder } from '../metrics/worker-metrics.ts';
import { ClientKubeConfig } from './client-kube-config.ts';
import { EventRecorder, type EventRecorderTuning } from './event-recorder.ts';
import { effectiveBurst, limiterFor, type RateLimiter, unlimited } from './rate-limiter.ts';

export type ClientName = 'writes' | 'informers' | 'events';

export function userAgentFor(component: string, client: ClientName): string {
  return `switchyard/${component}/${client}`;
}

/**
 * client-node 2.0.1 aborts a watch after 30 s without a byte (`Watch`'s private
 * `requestTimeoutMs`). A quiet resource is silent for longer than that between
 * the apiserver's bookmarks (about one a minute when `allowWatchBookmarks` is
 * set), so the informers client raises it to two and a half bookmark periods:
 * a healthy quiet watch never trips it, a silently dead connection is still
 * noticed within minutes (TCP keep-alive, 30 s, catches most sooner).
 */
export const WATCH_INACTIVITY_TIMEOUT_MS = 150_000;

export interface WritesClient {
  kubeConfig: ClientKubeConfig;
  /** The opt-in token bucket, or the explicit no-op limiter. */
  limiter: RateLimiter;
}

export interface InformersClient {
  kubeConfig: ClientKubeConfig;
  /** A `Watch` on this client with the raised inactivity timeout (prefer it over `new Watch(kubeConfig)`). */
  newWatch(): Watch;
}

export interface EventsClient {
  kubeConfig: ClientKubeConfig;
  /** The process's one event recorder: its bucket and queue are this process's event budget. */
  recorder: EventRecorder;
}

export interface KubeClients {
  writes: WritesClient;
  informers: InformersClient;
  events: EventsClient;
  /** Drains the event queue (up to `timeoutMs`), then closes the three pools. */
  close(opts?: { timeoutMs?: number }): Promise<void>;
}

export interface KubeClientsOptions {
  /** Where and as whom to connect (in a cluster: `KubeConfig.loadFromCluster()`). */
  kubeConfig: KubeConfig;
  /** The process's component name: `switchyard/<component>/…` and `switchyard.dev/<component>`. */
  component: string;
  /** Events' reportingInstance; the pod name by default (POD_NAME, else the hostname). */
  instance?: string;
  kubernetes: KubernetesConfig;
  /** Test and benchmark knobs of the recorder (retry timing, sender concurrency). */
  eventTuning?: Partial<EventRecorderTuning>;
}

export function createKubeClients(options: KubeClientsOptions): KubeClients {
  const { kubeConfig, component, kubernetes } = options;
  const client = (name: ClientName, limiter?: RateLimiter) =>
    new ClientKubeConfig(kubeConfig, {
      userAgent: userAgentFor(component, name),
      ...(limiter && { limiter }),
      onResponse: (method, code) => countKubeResponse(name, method, code),
    });

  const writesLimiter = limiterFor({ qps: kubernetes.qps, burst: kubernetes.burst });
  const writes = client('writes', writesLimiter);
  // No limiter and no knob: delaying a relist only delays recovery.
  const informers = client('informers');
  // The events pool itself is unthrottled: the recorder sheds before its queue,
  // so an event never waits on a bucket while holding a connection.
  const events = client('events');
  const recorder = new EventRecorder({
    api: events.makeApiClient(EventsV1Api),
    component,
    instance: options.instance ?? process.env.POD_NAME ?? hostname(),
    admission: eventAdmission(kubernetes),
    queueSize: kubernetes.eventQueueSize,
    ...options.eventTuning,
  });

  const unobserveRecorder = observeEventRecorder(recorder);

  return {
    writes: { kubeConfig: writes, limiter: writesLimiter },
    informers: { kubeConfig: informers, newWatch: () => watchWithInactivityTimeout(informers) },
    events: { kubeConfig: events, recorder },
    async close({ timeoutMs = 5_000 } = {}) {
      await recorder.close({ timeoutMs });
      unobserveRecorder();
      await Promise.all([writes.close(), informers.close(), events.close()]);
    },
  };
}

/** eventQPS ≤ 0 turns shedding off (the queue stays bounded); otherwise a bucket of eventQPS/eventBurst. */
function eventAdmission(kubernetes: KubernetesConfig): RateLimiter {
  if (kubernetes.eventQPS <= 0) return unlimited;
  return limiterFor({
    qps: kubernetes.eventQPS,
    burst: effectiveBurst({ qps: kubernetes.eventQPS, burst: kubernetes.eventBurst }),
  });
}

export function watchWithInactivityTimeout(kubeConfig: KubeConfig): Watch {
  const watch = new Watch(kubeConfig);
  // A TS-private field of client-node 2.0.1; clients.test.ts fails if it is renamed.
  Object.assign(watch, { requestTimeoutMs: WATCH_INACTIVITY_TIMEOUT_MS });
  return watch;
}
