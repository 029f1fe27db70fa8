// The CLI as a person installs it: `npm pack` builds the package (prepack compiles src/ to
// dist/), the tarball installs without the network (its dependencies are bundled, so an
// air-gapped machine can install it too), and kubectl finds it as a plugin: `kubectl switchyard`.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectlPath, PROJECT_ROOT } from '../src/local-cluster/cluster.ts';

const run = promisify(execFile);
// npm as the bootstrap uses it: the machine's, run by the Node first on the PATH.
const npm = 'npm';
let dir = '';
let tarball = '';
let prefix = '';
let packedFiles: string[] = [];
/** The PATH a person has after installing: the package's bin directory first. */
let path = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'switchyard-package-'));
  const packed = await run(npm, ['pack', '--json', '--pack-destination', dir], {
    cwd: PROJECT_ROOT,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [{ filename, files }] = JSON.parse(packed.stdout) as [
    { filename: string; files: { path: string }[] },
  ];
  tarball = join(dir, filename);
  packedFiles = files.map((f) => f.path);
  prefix = join(dir, 'prefix');
  await run(
    npm,
    ['install', '--offline', '--no-audit', '--no-fund', '--global', '--prefix', prefix, tarball],
    {
      cwd: dir,
    },
  );
  path = `${join(prefix, 'bin')}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`;
}, 300_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** kubectl with the installed package on its PATH; a failure is an answer here, not a throw. */
async function kubectl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(kubectlPath(), args, {
      env: { ...process.env, PATH: path, KUBERC: 'off' },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('the npm package', () => {
  it('holds the compiled CLI and its dependencies, and no source, test or fixture', () => {
    expect(packedFiles).toContain('dist/cli/main.js');
    expect(packedFiles).toContain('package.json');
    const own = packedFiles.filter((f) => !f.startsWith('node_modules/'));
    expect(
      own.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(f)),
    ).toEqual([]);
    expect(own.filter((f) => /\.(test|itest)\.js$|test-support/.test(f))).toEqual([]);
    expect(packedFiles.some((f) => f.startsWith('node_modules/@kubernetes/client-node/'))).toBe(true);
  });

  it('installs offline with both commands on the PATH', async () => {
    expect((await readdir(join(prefix, 'bin'))).sort()).toEqual(['kubectl-switchyard', 'switchyard']);
    const { stdout } = await run('switchyard', ['--version'], { env: { ...process.env, PATH: path } });
    expect(stdout.trim()).toMatch(/^switchyard \d+\.\d+\.\d+/);
  });

  it('runs as a kubectl plugin: kubectl finds it and passes it the arguments', async () => {
    const listed = await kubectl(['plugin', 'list', '--name-only']);
    expect(listed.stdout).toContain('kubectl-switchyard');
    const help = await kubectl(['switchyard', 'explain', '--help']);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/explain/);
    const wrong = await kubectl(['switchyard', 'no-such-subcommand']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain('no-such-subcommand');
  });

  it('says the demo runs from a checkout, and starts nothing', async () => {
    const demo = await kubectl(['switchyard', 'demo']);
    expect(demo.code).toBe(2);
    expect(demo.stderr).toContain('switchyard demo runs from a checkout of Switchyard');
    expect(demo.stdout).toBe('');
  });
});
