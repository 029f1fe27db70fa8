import { describe, expect, it } from 'vitest';
import { WaitHopeless, waitFor } from './wait.ts';

describe('waitFor', () => {
  it('returns the first value a check gives', async () => {
    let calls = 0;
    await expect(
      waitFor('a value', () => (++calls === 3 ? 'v' : undefined), { intervalMs: 1 }),
    ).resolves.toBe('v');
    expect(calls).toBe(3);
  });

  it('times out naming what it waited for and the last error a check threw', async () => {
    await expect(
      waitFor(
        'the thing',
        () => {
          throw new Error('not yet');
        },
        { timeoutMs: 20, intervalMs: 1 },
      ),
    ).rejects.toThrow('timed out after 20 ms waiting for the thing: not yet');
  });

  it('gives up at once when a check says the wait is hopeless', async () => {
    let calls = 0;
    await expect(
      waitFor(
        'a server',
        () => {
          calls++;
          throw new WaitHopeless('it exited');
        },
        { timeoutMs: 60_000 },
      ),
    ).rejects.toThrow('gave up waiting for a server: it exited');
    expect(calls).toBe(1);
  });
});
