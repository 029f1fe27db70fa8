// No process outlives the one that started the cluster: not after a clean
// stop, and not when the owner is killed with SIGKILL (the kernel's
// parent-death signal takes every child with it).
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './cluster.ts';
import { isProcessAlive } from './managed-process.ts';
import { waitFor } from './wait.ts';

interface Owned {
  dir: string;
  pids: { name: string; pid: number }[];
}

function startOwner(mode: 'stop' | 'wait') {
  const child = spawn(process.execPath, ['test/fixtures/cluster-owner.ts', mode], {
    cwd: PROJECT_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface(child.stdout);
  const next = () => new Promise<string>((resolve) => lines.once('line', resolve));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { child, next, exited };
}

describe('local cluster lifecycle', () => {
  it('leaves no process behind after a clean stop', async () => {
    const owner = startOwner('stop');
    const owned = JSON.parse(await owner.next()) as Owned;
    expect(owned.pids.map((p) => p.name)).toEqual(
      expect.arrayContaining(['etcd', 'nats-server', 'kube-apiserver', 'kube-controller-manager']),
    );
    expect(owned.pids.some((p) => p.name.startsWith('pod '))).toBe(true);
    expect(await owner.next()).toBe('stopped');
    expect(await owner.exited).toBe(0);
    expect(owned.pids.filter((p) => isProcessAlive(p.pid))).toEqual([]);
  });

  it('leaves no process behind when its owner is killed with SIGKILL', async () => {
    const owner = startOwner('wait');
    const owned = JSON.parse(await owner.next()) as Owned;
    expect(owned.pids.every((p) => isProcessAlive(p.pid))).toBe(true);
    owner.child.kill('SIGKILL');
    await owner.exited;
    await waitFor('every owned process to be gone', () =>
      owned.pids.every((p) => !isProcessAlive(p.pid)) ? true : undefined,
    );
    // Nobody was left to clean up the killed owner's directory.
    await rm(owned.dir, { recursive: true, force: true });
  });
});
