// kubelet's exec protocol (v4.channel.k8s.io) over a SPDY connection: the client opens an
// `error` stream and one stream for each of stdin, stdout and stderr it asked for; the command
// runs, its output goes back on those streams, and its end is a Status on the error stream (exit
// code included) that kubectl turns into its own exit code. Pods here are processes, not
// containers: the command runs on this machine with the container's environment and working
// directory, and no terminal can be given (no pty), so `-t` is refused.
import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import type { Logger } from 'pino';
import type { SpdyStream } from './spdy.ts';

export const EXEC_PROTOCOL = 'v4.channel.k8s.io';

/** How long the client may take to open every stream it asked for: kubelet's own limit. */
const STREAMS_TIMEOUT_MS = 30_000;

export interface ExecRequest {
  command: string[];
  stdin: boolean;
  stdout: boolean;
  stderr: boolean;
}

/** Where and how a container's command runs, or why it cannot. */
export type ExecResolver = () => { env: NodeJS.ProcessEnv; cwd: string } | { error: string };

/** The request as kubelet reads its query (`command` repeated, `input`/`output`/`error`/`tty`). */
export function parseExecQuery(params: URLSearchParams): ExecRequest | { error: string } {
  const flag = (name: string) => ['1', 'true'].includes(params.get(name) ?? '');
  const command = params.getAll('command');
  if (command.length === 0 || command[0] === '') return { error: 'exec needs a command' };
  if (flag('tty'))
    return {
      error: 'tty: the local node agent runs Pods as plain processes and has no terminal to give; drop -t',
    };
  const request = { command, stdin: flag('input'), stdout: flag('output'), stderr: flag('error') };
  if (!request.stdin && !request.stdout && !request.stderr)
    return { error: 'exec needs at least one of stdin, stdout and stderr' };
  return request;
}

/** The Status the error stream ends with, as client-go's v4 decoder reads it. */
export function exitStatus(code: number | null, signal: NodeJS.Signals | null): object {
  if (code === 0) return { metadata: {}, status: 'Success' };
  // A shell's convention for a command ended by a signal.
  const exitCode = code ?? 128 + (signal === null ? 0 : constants.signals[signal]);
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: exit status ${exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(exitCode) }] },
  };
}

type Role = 'error' | 'stdin' | 'stdout' | 'stderr';

/** Handles the streams of one exec connection: runs the command once every stream is open. */
export function execHandler(
  target: string,
  request: ExecRequest,
  resolve: ExecResolver,
  log: Logger,
): (stream: SpdyStream) => void {
  const expected: Role[] = [
    'error',
    ...(request.stdin ? (['stdin'] as const) : []),
    ...(request.stdout ? (['stdout'] as const) : []),
    ...(request.stderr ? (['stderr'] as const) : []),
  ];
  const streams = new Map<Role, SpdyStream>();
  const timer = setTimeout(() => {
    for (const s of streams.values()) s.destroy();
  }, STREAMS_TIMEOUT_MS).unref();
  return (stream) => {
    const role = stream.header('streamType') as Role;
    if (!expected.includes(role) || streams.has(role)) {
      stream.destroy();
      return;
    }
    streams.set(role, stream);
    if (streams.size < expected.length) return;
    clearTimeout(timer);
    run(target, request, streams, resolve, log);
  };
}

function run(
  target: string,
  request: ExecRequest,
  streams: Map<Role, SpdyStream>,
  resolve: ExecResolver,
  log: Logger,
): void {
  const errorStream = streams.get('error') as SpdyStream;
  errorStream.resume();
  let finished = false;
  const finish = (status: object) => {
    if (finished) return;
    finished = true;
    errorStream.end(JSON.stringify(status));
    for (const role of ['stdout', 'stderr'] as const) {
      const s = streams.get(role);
      if (s && !s.writableEnded) s.end();
    }
    streams.get('stdin')?.destroy();
  };
  const where = resolve();
  if ('error' in where) {
    finish({ metadata: {}, status: 'Failure', message: where.error, reason: 'InternalError' });
    return;
  }
  const [file, ...args] = request.command as [string, ...string[]];
  log.info({ target, command: request.command }, 'exec');
  const child = spawn(file, args, {
    env: where.env,
    cwd: where.cwd,
    stdio: [
      request.stdin ? 'pipe' : 'ignore',
      request.stdout ? 'pipe' : 'ignore',
      request.stderr ? 'pipe' : 'ignore',
    ],
  });
  const stdin = streams.get('stdin');
  if (stdin && child.stdin) {
    stdin.pipe(child.stdin);
    // A command that exits before reading all of stdin is not an error of the exec.
    child.stdin.on('error', () => undefined);
  }
  if (child.stdout) child.stdout.pipe(streams.get('stdout') as SpdyStream);
  if (child.stderr) child.stderr.pipe(streams.get('stderr') as SpdyStream);
  child.once('error', (err) =>
    finish({
      metadata: {},
      status: 'Failure',
      message: `could not run ${file}: ${err.message}`,
      reason: 'InternalError',
    }),
  );
  child.once('close', (code, signal) => finish(exitStatus(code, signal)));
  // The client went away (kubectl interrupted): the command goes too.
  errorStream.once('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
}
