// `kubectl port-forward`, run as a child process: kubectl speaks every protocol the apiserver
// offers for it (SPDY, WebSockets), follows the Service to one of its ready Pods, and says which
// local port it took. Used by the operator's commands to reach a bus only the cluster resolves
// (cli/operator-bus.ts), and by the local stack's tests.
import { spawn } from 'node:child_process';

/** A running `kubectl port-forward`: the local port it listens on, and how to end it. */
export interface PortForward {
  localPort: number;
  /** What kubectl has printed so far (its errors about forwarded connections too). */
  output(): string;
  /**
   * `listener` runs once if kubectl exits (or has exited) without `stop()`: the forward is gone (its
   * Pod deleted, the apiserver unreachable), and a client of the local port would wait on it for ever.
   */
  onLost(listener: (output: string) => void): void;
  stop(): void;
}

export interface PortForwardOptions {
  /** The kubectl to run: a path, or a name looked up on PATH. */
  kubectl: string;
  /** Everything after `port-forward`: flags, the resource, `:<remote port>`. */
  args: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** How long kubectl may take to say where it listens. */
  timeoutMs?: number;
}

/**
 * Starts `kubectl port-forward --address=127.0.0.1 <args>` and resolves once it listens, with the
 * local port it chose; rejects with kubectl's own words if it exits first or says nothing in time.
 */
export function kubectlPortForward(opts: PortForwardOptions): Promise<PortForward> {
  const args = ['port-forward', '--address=127.0.0.1', ...opts.args];
  const child = spawn(opts.kubectl, args, {
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const what = `kubectl ${args.join(' ')}`;
  let said = '';
  let stopped = false;
  let exited = false;
  const lost: ((output: string) => void)[] = [];
  // 'close', not 'exit': by then kubectl's last words have been read.
  child.once('close', () => {
    exited = true;
    if (!stopped) for (const listener of lost) listener(said);
  });
  return new Promise<PortForward>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${what} did not listen in time: ${said.trim()}`));
    }, opts.timeoutMs ?? 30_000);
    const listen = (chunk: Buffer) => {
      said += chunk.toString();
      const port = /Forwarding from 127\.0\.0\.1:(\d+)/.exec(said)?.[1];
      if (port === undefined) return;
      clearTimeout(timer);
      resolve({
        localPort: Number(port),
        output: () => said,
        // A listener added after kubectl exited still hears of it.
        onLost: (listener) => {
          if (exited && !stopped) queueMicrotask(() => listener(said));
          else lost.push(listener);
        },
        stop: () => {
          stopped = true;
          child.kill('SIGTERM');
        },
      });
    };
    child.stdout.on('data', listen);
    child.stderr.on('data', listen);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(err.code === 'ENOENT' ? new Error(`${opts.kubectl} not found: ${what} needs kubectl`) : err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code}): ${said.trim()}`));
    });
  });
}
