// What every HTTPS server of the project has around its routes: limits on how long a request
// may take to arrive, a certificate that can be swapped for a rotated one without a restart,
// and a serving flag that turns /readyz off the moment shutdown starts. A server extends it and
// writes only `route`.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { CertificatePair } from './serving-certificate.ts';

export abstract class HttpsService {
  private readonly server: Server;
  private open = false;

  /** `requestTimeoutMs` bounds the arrival of a request's headers and body. */
  constructor(certificate: CertificatePair, requestTimeoutMs: number) {
    this.server = createServer(
      { ...certificate, requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs },
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
