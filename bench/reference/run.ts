// Builds and runs bench/reference/main.go, the reference operator's compile of the replica
// bench's targets (issue 31), for bench/webhook.ts. The reference module is not served by the
// Go module proxy, so the build's go.mod is written here, in a directory outside the work tree,
// requiring the module and replacing it by the checkout REFERENCE_DIR names (any checkout of
// TeraSky-OSS/declarative-conversion-operator at d92dfe6); bench/reference/go.mod only marks the
// module root (`go build -modfile`). Go's caches are the bootstrap's, in the Switchyard cache.
import { execFile } from 'node:child_process';
import { copyFile, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const MODULE = 'github.com/terasky-oss/declarative-conversion-operator';
const here = import.meta.dirname;

/** What one run of the program prints (bench/reference/main.go's `result`). */
export interface ReferenceRun {
  gomaxprocs: number;
  workers: number;
  targets: number;
  spokes: number;
  compiled: number;
  errors: number;
  firstError?: string;
  rulesMapped: Record<string, number>;
  rulesLeftOut: Record<string, number>;
  decodeMs: number;
  compileMs: number;
  perTargetUs: number;
  heapBytes: number;
  maxRssBytes: number;
  goVersion: string;
}

/** A target as both engines compile it: the CRD and its config's hub and spokes. */
export interface ReferenceTarget {
  crd: unknown;
  config: unknown;
}

function goEnv(): NodeJS.ProcessEnv {
  const cache =
    process.env.SWITCHYARD_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'switchyard');
  // GOFLAGS cleared: -mod=mod must be free to fill the generated go.mod's requirements.
  return {
    ...process.env,
    GOMODCACHE: join(cache, 'go', 'mod'),
    GOCACHE: join(cache, 'go', 'build'),
    GOFLAGS: '',
    CGO_ENABLED: '0',
  };
}

/** Builds the program against the checkout in `referenceDir` into `buildDir`; the binary's path. */
export async function buildReference(referenceDir: string, buildDir: string): Promise<string> {
  const modfile = join(buildDir, 'go.mod');
  await writeFile(
    modfile,
    `module switchyard.dev/bench/reference\n\ngo 1.26.0\n\nrequire ${MODULE} v0.0.0\n\nreplace ${MODULE} => ${resolve(referenceDir)}\n`,
  );
  // The reference's own checksums cover everything its engine imports.
  await copyFile(join(referenceDir, 'go.sum'), join(buildDir, 'go.sum'));
  const binary = join(buildDir, 'reference-compile');
  await run('go', ['build', `-modfile=${modfile}`, '-mod=mod', '-trimpath', '-o', binary, '.'], {
    cwd: here,
    env: goEnv(),
  });
  return binary;
}

export async function writeReferenceTargets(
  file: string,
  targets: readonly ReferenceTarget[],
): Promise<void> {
  await writeFile(file, JSON.stringify({ targets }));
}

/** One fresh process compiling every target in `input`, `workers` goroutines at `gomaxprocs`. */
export async function runReference(
  binary: string,
  input: string,
  gomaxprocs: number,
  workers: number,
): Promise<ReferenceRun> {
  const { stdout } = await run(binary, ['-input', input, '-workers', String(workers)], {
    env: { ...process.env, GOMAXPROCS: String(gomaxprocs) },
  });
  const result = JSON.parse(stdout.trim().split('\n').pop() ?? '{}') as ReferenceRun;
  if (result.errors > 0)
    throw new Error(`the reference refused ${result.errors} of the targets' spokes: ${result.firstError}`);
  return result;
}
