// What every HTTPS server of the project has around its routes: limits on how long a request
// may take to arrive, a certificate that can be swapped for a rotated one without a restart,
// and a serving flag that turns /readyz off the moment shutdown starts. A server extends it and
// writes only `route`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { CertificatePair } from './serving-certificate.ts';

/**
 * How long an idle keep-alive connection stays open. Longer than the idle timeout of the
 * apiserver's webhook clients (Go's transport: 90 s), so the client always closes an idle
 * connection first. With Node's default (5 s) the server closes it while the apiserver may be
 * sending the next request on it: the apiserver sees "write: broken pipe" and fails the call,
 * which the 1,000-target scale scenario hit on an admission review. A POST is not retried.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

export abstract class HttpsService {
  private readonly server: Server;
  private open = false;

  /** `requestTimeoutMs` bounds the arrival of a request's headers and body. */
  constructor(certificate: CertificatePair, requestTimeoutMs: number) {
    this.server = createServer(
      {
        ...certificate,
        requestTimeout: requestTimeoutMs,
        headersTimeout: requestTimeoutMs,
        keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      },
      (req, res) => void this.route(req, res),
    );
  }

  /** Answers one request; never rejects with the response unsent. */
  protected abstract route(req: IncomingMessage, res: ServerResponse): Promise<void>;

  /** True from `listen` until `close` starts. */
  protected get serving(): boolean {
    return this.open;
  }

  async listen(port: number, host?: string): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => resolve());
    });
    this.open = true;
    return (this.server.address() as AddressInfo).port;
  }

  /** Serves a rotated certificate to every new connection. */
  setCertificate(pair: CertificatePair): void {
    this.server.setSecureContext(pair);
  }

  /** Turns /readyz to 503 at once, then waits for the requests in flight. */
  async close(): Promise<void> {
    this.open = false;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
