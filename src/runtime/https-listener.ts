// What every HTTPS server of the project needs around its routes: limits on how long a request
// may take to arrive, a certificate that can be swapped for a rotated one without a restart,
// and a serving flag that turns /readyz off the moment shutdown starts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { CertificatePair } from './serving-certificate.ts';

export class HttpsListener {
  private readonly server: Server;
  private open = false;

  /** `requestTimeoutMs` bounds the arrival of a request's headers and body. */
  constructor(
    certificate: CertificatePair,
    handle: (req: IncomingMessage, res: ServerResponse) => void,
    requestTimeoutMs: number,
  ) {
    this.server = createServer(
      { ...certificate, requestTimeout: requestTimeoutMs, headersTimeout: requestTimeoutMs },
      handle,
    );
  }

  /** True from `listen` until `close` starts. */
  get serving(): boolean {
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

  /** Stops serving at once (`serving` is false), then waits for the requests in flight. */
  async close(): Promise<void> {
    this.open = false;
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
