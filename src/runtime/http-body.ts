// What the HTTPS servers (admission, webhook-server) share about a request body and plain
// answers: the body read up to a limit, never buffered past it; text and JSON responses.
import type { IncomingMessage, ServerResponse } from 'node:http';

export type Body = { ok: true; bytes: Buffer } | { ok: false; status: number; message: string };

/**
 * The body, read up to `maxBytes`. Past the limit it stops reading (paused, not destroyed, so
 * the 413 can still be written; `sendText` closes the connection after it).
 */
export function readBody(req: IncomingMessage, maxBytes: number, what = 'request body'): Promise<Body> {
  const tooLarge: Body = { ok: false, status: 413, message: `${what} larger than ${maxBytes} bytes` };
  if (Number(req.headers['content-length'] ?? 0) > maxBytes) return Promise.resolve(tooLarge);
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= maxBytes) chunks.push(chunk);
      else {
        req.removeAllListeners('data').pause();
        resolve(tooLarge);
      }
    });
    req.on('error', () => resolve({ ok: false, status: 400, message: `${what} not received` }));
    req.on('end', () => resolve({ ok: true, bytes: Buffer.concat(chunks) }));
  });
}

export function sendText(res: ServerResponse, status: number, body: string): void {
  // A body left unread (too large) would otherwise keep the connection busy: close it.
  if (status >= 400) res.setHeader('connection', 'close');
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' }).end(`${body}\n`);
}

export function sendJson(res: ServerResponse, value: unknown): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}
