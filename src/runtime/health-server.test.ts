import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type HealthServer, notReadyReasons, startHealthServer } from './health-server.ts';

const log = pino({ level: 'silent' });
let server: HealthServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(path: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${server?.port}${path}`, { method });
  return { status: res.status, body: await res.text() };
}

describe('notReadyReasons', () => {
  it('names every failing check, and a check that throws as failing', () => {
    const checks = new Map<string, () => string | undefined>([
      ['nats', () => 'disconnected'],
      ['view', () => undefined],
      [
        'broken',
        () => {
          throw new Error('boom');
        },
      ],
    ]);
    expect(notReadyReasons(checks)).toEqual(['nats: disconnected', 'broken: check failed: boom']);
  });

  it('is empty with no checks', () => {
    expect(notReadyReasons(new Map())).toEqual([]);
  });
});

describe('startHealthServer', () => {
  it('is alive at once and ready only while every check passes, saying why not', async () => {
    server = await startHealthServer({ log, port: 0, host: '127.0.0.1' });
    expect(await get('/healthz')).toEqual({ status: 200, body: 'ok\n' });
    expect((await get('/readyz')).status).toBe(200);

    let connected = false;
    server.require('nats', () => (connected ? undefined : 'disconnected from NATS'));
    const notReady = await get('/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body).toContain('nats: disconnected from NATS');
    expect((await get('/healthz')).status).toBe(200);

    connected = true;
    expect(await get('/readyz')).toEqual({ status: 200, body: 'ok\n' });
  });

  it('answers other paths 404 and other methods 405', async () => {
    server = await startHealthServer({ log, port: 0, host: '127.0.0.1' });
    expect((await get('/metrics')).status).toBe(404);
    expect((await get('/readyz?verbose=1')).status).toBe(200);
    expect((await get('/healthz', 'POST')).status).toBe(405);
  });

  it('fails to start, rather than serve elsewhere, when its port is taken', async () => {
    server = await startHealthServer({ log, port: 0, host: '127.0.0.1' });
    await expect(startHealthServer({ log, port: server.port, host: '127.0.0.1' })).rejects.toThrow(
      /EADDRINUSE/,
    );
  });
});
