// A process's log file holds everything it printed, even what was still in the pipes when it
// exited: a stack's logs are what a failed CI run leaves to read. Before the fix the file was
// closed on 'exit', and a chunk read after it was written after the end: lines were lost and
// the stream's error, with no listener, failed whichever test file was running.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManagedProcess } from './managed-process.ts';
import { waitFor } from './wait.ts';

const log = pino({ level: 'silent' });
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'managed-process-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('ManagedProcess', () => {
  it('keeps every line a process printed right before it exited, on stdout and stderr', async () => {
    const lines = 20_000;
    const runs = 5;
    for (let run = 0; run < runs; run++) {
      const logFile = join(dir, `burst-${run}.log`);
      const proc = new ManagedProcess(
        {
          name: `burst-${run}`,
          command: 'sh',
          args: ['-c', `seq 1 ${lines}; echo last-stderr >&2; echo last-stdout`],
          logFile,
        },
        log,
      );
      expect(await proc.whenExited()).toBe(0);
      const text = await waitFor(
        `${logFile} to hold the process's last lines`,
        async () => {
          const body = await readFile(logFile, 'utf8');
          return body.includes('last-stdout') && body.includes('last-stderr') ? body : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      const numbers = text.split('\n').filter((l) => /^\d+$/.test(l));
      expect(numbers).toHaveLength(lines);
      expect(numbers.at(-1)).toBe(String(lines));
    }
  });
});
