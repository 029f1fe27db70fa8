// The scenario's requests against a loopback HTTP server that hangs up on chosen requests: a
// dropped connection is sent again for a read or a patch, never for a create.
import { createServer, type Server } from 'node:http';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { HttpMethod } from '../kube/request.ts';
import { closeLoopbackServer, listenForKubeClients } from '../kube/test-support.ts';
import { request } from './fleet.ts';

let server: Server;
let kubeConfig: KubeConfig;
/** Requests seen per path; a path asks for the first N of them to be hung up on (`/drop-N/...`). */
const seen = new Map<string, number>();

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '';
    const count = (seen.get(path) ?? 0) + 1;
    seen.set(path, count);
    const drops = Number(/^\/drop-(\d+)\//.exec(path)?.[1] ?? 0);
    if (count <= drops) {
      req.socket.destroy();
      return;
    }
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ message: `answered ${req.method} on attempt ${count}` }));
  });
  kubeConfig = await listenForKubeClients(server);
});

afterAll(() => closeLoopbackServer(server));

describe('the scenario request', () => {
  it('sends a read or a patch again when the connection drops before an answer', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const read = await request(kubeConfig, HttpMethod.GET, '/drop-1/read');
      expect(read).toMatchObject({ status: 200, message: 'answered GET on attempt 2' });
      const patch = await request(kubeConfig, HttpMethod.PATCH, '/drop-2/patch', { spec: {} });
      expect(patch).toMatchObject({ status: 200, message: 'answered PATCH on attempt 3' });
      expect(stderr.mock.calls.map(([line]) => String(line))).toEqual([
        expect.stringMatching(
          /^\[scenario\] GET \/drop-1\/read: no answer \(fetch failed: .+\); sending it again\n$/,
        ),
        expect.stringContaining('PATCH /drop-2/patch: no answer'),
        expect.stringContaining('PATCH /drop-2/patch: no answer'),
      ]);
    } finally {
      stderr.mockRestore();
    }
  });

  it('gives up after three attempts, and sends a create only once', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      await expect(request(kubeConfig, HttpMethod.GET, '/drop-3/read')).rejects.toThrow('fetch failed');
      expect(seen.get('/drop-3/read')).toBe(3);
      await expect(request(kubeConfig, HttpMethod.POST, '/drop-1/create', {})).rejects.toThrow(
        'fetch failed',
      );
      expect(seen.get('/drop-1/create')).toBe(1);
    } finally {
      stderr.mockRestore();
    }
  });
});
