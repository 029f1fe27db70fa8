// A nats-server that cannot start says why, from its own log, and leaves nothing running.
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from './free-port.ts';
import { NatsServer } from './nats.ts';

const held: Server[] = [];
const dirs: string[] = [];

afterAll(async () => {
  for (const s of held) await new Promise((resolve) => s.close(resolve));
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function holdPort(): Promise<number> {
  const port = await freePort();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  held.push(server);
  return port;
}

describe('NatsServer.start', () => {
  it('fails on a client port another process holds, quoting the server log', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'switchyard-nats-start-'));
    dirs.push(dir);
    const port = await holdPort();
    const started = NatsServer.start(dir, pino({ level: 'silent' }), '', { port });
    await expect(started).rejects.toThrow(/nats-server exited/);
    await expect(started).rejects.toThrow(new RegExp(`127\\.0\\.0\\.1:${port}.*address already in use`));
  });
});
