import { mkdtemp, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCertificateAuthority, issueCertificate } from '../local-cluster/pki.ts';
import { HttpsService } from './https-service.ts';

class Echo extends HttpsService {
  protected async route(_req: IncomingMessage, res: ServerResponse): Promise<void> {
    res.end('ok');
  }
}

let dir: string;
let ca: string;
let pair: { cert: string; key: string };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'https-service-'));
  const authority = await createCertificateAuthority(dir, 'ca');
  const issued = await issueCertificate(authority, dir, 'serving', {
    commonName: 'x',
    ipAddresses: ['127.0.0.1'],
  });
  ca = authority.certPem;
  pair = { cert: issued.certPem, key: issued.keyPem };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function get(port: number, agent: Agent): Promise<{ reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent, ca }, (res) => {
      res.resume();
      res.on('end', () => resolve({ reused: req.reusedSocket }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('an HTTPS service', () => {
  it('keeps an idle keep-alive connection open past Node’s default (5 s, closed at 6 s), so the client closes it first', async () => {
    const server = new Echo(pair, 10_000);
    const port = await server.listen(0, '127.0.0.1');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await get(port, agent)).reused).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 7_000));
      expect((await get(port, agent)).reused, 'the same connection, after 7 s idle').toBe(true);
    } finally {
      agent.destroy();
      await server.close();
    }
  }, 15_000);
});
