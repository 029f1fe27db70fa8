// deploy/ as it was before its latest change, checked out of git into a directory of its own: what
// a cluster runs when the current manifests arrive as an upgrade. Needs the repository's history
// (a clone, not a bare export of one commit); says so rather than test nothing.
import { execFile } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PROJECT_ROOT } from '../../../src/local-cluster/cluster.ts';

const run = promisify(execFile);

async function git(...args: string[]): Promise<string> {
  const { stdout } = await run('git', ['-C', PROJECT_ROOT, ...args], { maxBuffer: 64 * 1024 * 1024 });
  return stdout.trim();
}

export interface PreviousDeploy {
  /** The commit whose deploy/ it is: the parent of the latest commit that changed deploy/. */
  commit: string;
  /** What that latest change was, for the test's output. */
  change: string;
  /** A directory holding that deploy/ tree (pass it as `deployRoot`). */
  root: string;
}

/** A shallow clone is deepened from its origin once, if it can be: the parent is one commit away. */
async function deepenIfShallow(): Promise<void> {
  if ((await git('rev-parse', '--is-shallow-repository')) !== 'true') return;
  await git('fetch', '--quiet', '--deepen=50').catch(() => undefined);
}

export async function previousDeploy(): Promise<PreviousDeploy> {
  await deepenIfShallow();
  const latest = await git('log', '-1', '--format=%H %s', 'HEAD', '--', 'deploy');
  const [changed = '', ...subject] = latest.split(' ');
  const commit = await git('rev-parse', '--verify', '--quiet', `${changed}^`).catch(() => '');
  if (!changed || !commit)
    throw new Error(
      `no commit before the latest change to deploy/ (${latest || 'none'}): the upgrade test needs ` +
        "the repository's history; a shallow clone lacks it (git fetch --unshallow)",
    );
  const dir = await mkdtemp(join(tmpdir(), 'switchyard-previous-deploy-'));
  await run('bash', [
    '-c',
    `git -C "$1" archive "$2" deploy | tar -x -C "$3"`,
    'archive',
    PROJECT_ROOT,
    commit,
    dir,
  ]);
  return { commit, change: `${changed.slice(0, 12)} ${subject.join(' ')}`, root: join(dir, 'deploy') };
}
