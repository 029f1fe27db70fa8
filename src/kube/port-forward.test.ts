import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectlPortForward } from './port-forward.ts';

// Stand-ins for kubectl: what it prints when it listens, when it refuses, and when it hangs.
let dir: string;
const script = async (name: string, body: string) => {
  const path = join(dir, name);
  await writeFile(path, `#!/bin/sh\n${body}\n`);
  await chmod(path, 0o755);
  return path;
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-port-forward-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('kubectlPortForward', () => {
  it('resolves with the local port kubectl says it listens on, and passes the arguments after port-forward', async () => {
    const kubectl = await script(
      'listens',
      'echo "$@" > "$(dirname "$0")/args"; echo "Forwarding from 127.0.0.1:43127 -> 4222"; echo "Forwarding from [::1]:43127 -> 4222"; exec sleep 30',
    );
    const forward = await kubectlPortForward({ kubectl, args: ['-n', 'sy', 'svc/nats', ':4222'] });
    try {
      expect(forward.localPort).toBe(43127);
      expect(forward.output()).toContain('Forwarding from');
      expect((await readFile(join(dir, 'args'), 'utf8')).trim()).toBe(
        'port-forward --address=127.0.0.1 -n sy svc/nats :4222',
      );
    } finally {
      forward.stop();
    }
  });

  it('says once that the forward was lost when kubectl exits later, and not when it was stopped', async () => {
    const kubectl = await script(
      'loses',
      'echo "Forwarding from 127.0.0.1:43128 -> 4222"; sleep 0.2; echo "error: lost connection to pod" >&2; exit 1',
    );
    const forward = await kubectlPortForward({ kubectl, args: ['svc/nats', ':4222'] });
    const lost = await new Promise<string>((resolve) => forward.onLost(resolve));
    expect(lost).toMatch(/Forwarding from[\s\S]*error: lost connection to pod/);
    const late = await new Promise<string>((resolve) => forward.onLost(resolve));
    expect(late).toBe(lost);

    const steady = await script('steady', 'echo "Forwarding from 127.0.0.1:43129 -> 4222"; exec sleep 30');
    const stopped = await kubectlPortForward({ kubectl: steady, args: ['svc/nats', ':4222'] });
    const calls: string[] = [];
    stopped.onLost((output) => calls.push(output));
    stopped.stop();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(calls).toEqual([]);
  });

  it('rejects with kubectl’s own words when it exits first', async () => {
    const kubectl = await script(
      'refuses',
      'echo \'Error from server (NotFound): services "nats" not found\' >&2; exit 1',
    );
    await expect(kubectlPortForward({ kubectl, args: ['svc/nats', ':4222'] })).rejects.toThrow(
      /exited \(1\): Error from server \(NotFound\): services "nats" not found/,
    );
  });

  it('rejects when kubectl says nothing in time, and when there is no kubectl', async () => {
    const kubectl = await script('hangs', 'exec sleep 30');
    await expect(
      kubectlPortForward({ kubectl, args: ['svc/nats', ':4222'], timeoutMs: 300 }),
    ).rejects.toThrow(/did not listen in time/);
    await expect(kubectlPortForward({ kubectl: join(dir, 'no-kubectl'), args: [] })).rejects.toThrow(
      /not found: .* needs kubectl/,
    );
  });
});
