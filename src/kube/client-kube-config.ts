// A KubeConfig that is one client: it stamps its own User-Agent on every request
// and sends every request through one shared connection pool, optionally behind
// a rate limiter.
//
// Why a KubeConfig subclass and not request middleware: @kubernetes/client-node
// 2.0.1 calls `kubeConfig.applySecurityAuthentication(ctx)` on both of its
// request paths — the generated API clients (via `authMethods.default`) and
// `Watch` (dist/watch.js) — while middleware only reaches API clients. And in
// that method the library builds a *new* undici Agent per request
// (`createDispatcher`, uncached in 2.0.1), i.e. a new TCP+TLS connection per call
// and an idle pool left behind each time. Overriding it lets us replace that
// dispatcher with one pool per client for both paths.
//
// TLS material (CA, client certificate) is read once, when the client is built;
// bearer tokens (ServiceAccount token files, exec plugins) are still resolved
// per request by the library, so token rotation keeps working. A client
// certificate rotated on disk needs a process restart.
import {
  type ApiConstructor,
  type ApiType,
  bufferFromFileOrString,
  createConfiguration,
  KubeConfig,
  type RequestContext,
  ServerConfiguration,
  setHeaderMiddleware,
} from '@kubernetes/client-node';
import { Agent, type Dispatcher, ProxyAgent } from 'undici';
import { type RateLimiter, unlimited } from './rate-limiter.ts';

export interface ClientKubeConfigOptions {
  /** `switchyard/<component>/<client>`. */
  userAgent: string;
  /** Consulted (`wait`) before every request sent through this client's pool. */
  limiter?: RateLimiter;
  /** Told the status code of every response through the pool (`error`: none came), for metrics. */
  onResponse?: (method: string, code: number | 'error') => void;
}

export class ClientKubeConfig extends KubeConfig {
  readonly userAgent: string;
  readonly limiter: RateLimiter;
  private readonly connections: Dispatcher;
  private readonly dispatcher: Dispatcher;

  constructor(source: KubeConfig, { userAgent, limiter = unlimited, onResponse }: ClientKubeConfigOptions) {
    super();
    this.mergeConfig(source);
    this.userAgent = userAgent;
    this.limiter = limiter;
    this.connections = this.buildConnectionPool();
    const counted = onResponse ? countResponses(this.connections, onResponse) : this.connections;
    this.dispatcher = limiter === unlimited ? counted : throttle(counted, limiter);
  }

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    // The library sets auth headers and a throwaway per-request Agent (undici
    // agents connect lazily, so the throwaway one never opens a socket).
    await super.applySecurityAuthentication(context);
    context.setHeaderParam('User-Agent', this.userAgent);
    context.setDispatcher(this.dispatcher);
  }

  /**
   * Same as the library's, except for the static User-Agent middleware: the
   * library's would overwrite ours with `kubernetes-client-javascript/<version>`
   * (middleware runs after authentication).
   */
  override makeApiClient<T extends ApiType>(apiClientType: ApiConstructor<T>): T {
    const cluster = this.getCurrentCluster();
    if (!cluster) throw new Error('No active cluster in the kubeconfig');
    return new apiClientType(
      createConfiguration({
        baseServer: new ServerConfiguration(cluster.server, {}),
        authMethods: { default: this },
        middleware: [setHeaderMiddleware('User-Agent', this.userAgent)],
      }),
    );
  }

  /** Closes the pool once in-flight requests (watches included) have ended. */
  async close(): Promise<void> {
    await this.connections.close();
  }

  /** Stops in-flight requests (watches included) and closes the pool now. */
  async destroy(): Promise<void> {
    await this.connections.destroy();
  }

  // Mirrors the TLS options the library derives per request
  // (applyHTTPSOptions → createDispatcherOptions), once.
  private buildConnectionPool(): Dispatcher {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    const tls: Record<string, unknown> = {};
    const ca = cluster ? bufferFromFileOrString(cluster.caFile, cluster.caData) : null;
    if (ca) tls.ca = ca;
    const cert = user ? bufferFromFileOrString(user.certFile, user.certData) : null;
    if (cert) tls.cert = cert;
    const key = user ? bufferFromFileOrString(user.keyFile, user.keyData) : null;
    if (key) tls.key = key;
    if (cluster?.skipTLSVerify) tls.rejectUnauthorized = false;
    if (cluster?.tlsServerName) tls.servername = cluster.tlsServerName;
    const options = this.createDispatcherOptions(cluster, tls);
    switch (options.type) {
      case 'agent':
        return new Agent({ connect: options.connect });
      case 'proxy':
        return new ProxyAgent({ uri: options.uri, requestTls: options.requestTls });
      case 'none':
        return new Agent();
      case 'socks':
        throw new Error('SOCKS proxies are not supported by the Kubernetes clients (cluster.proxyUrl)');
    }
  }
}

/**
 * Reports each request's final status code (or `error`) as the response starts, without touching
 * the response: the handler underneath sees every callback as it would have.
 */
function countResponses(
  pool: Dispatcher,
  onResponse: (method: string, code: number | 'error') => void,
): Dispatcher {
  return pool.compose((dispatch) => (opts, handler) => {
    let counted = false;
    const count = (code: number | 'error') => {
      if (counted) return;
      counted = true;
      onResponse(opts.method, code);
    };
    return dispatch(opts, {
      onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
      onRequestUpgrade: (controller, statusCode, headers, socket) => {
        count(statusCode);
        handler.onRequestUpgrade?.(controller, statusCode, headers, socket);
      },
      onResponseStart: (controller, statusCode, headers, statusMessage) => {
        if (statusCode >= 200) count(statusCode);
        handler.onResponseStart?.(controller, statusCode, headers, statusMessage);
      },
      onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
      onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
      onResponseError: (controller, err) => {
        count('error');
        handler.onResponseError?.(controller, err);
      },
    });
  });
}

/**
 * Makes every request through `pool` wait for the limiter first. At the
 * dispatcher, not in middleware, so that nothing sent through this client
 * (API calls, watches, raw fetches with the client's dispatcher) bypasses it.
 */
function throttle(pool: Dispatcher, limiter: RateLimiter): Dispatcher {
  return pool.compose((dispatch) => (opts, handler) => {
    limiter
      .wait()
      .then(() => dispatch(opts, handler))
      .catch((err: Error) => handler.onResponseError?.(null as never, err));
    return true;
  });
}
