import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import type { Logger } from 'pino';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  logFile: string;
}

/**
 * A child process that cannot outlive its parent: it is started under
 * `setpriv --pdeathsig KILL`, so a test runner killed with SIGKILL leaves no
 * orphan etcd, apiserver or pod behind. stdout and stderr go to one log file,
 * kept with the cluster's directory when a test fails.
 */
export class ManagedProcess {
  readonly name: string;
  readonly logFile: string;
  private readonly child: ChildProcess;
  private readonly exited: Promise<number | null>;
  private exitCode: number | null | undefined;
  private readonly spec: ProcessSpec;
  private readonly log: Logger;

  constructor(spec: ProcessSpec, log: Logger) {
    this.spec = spec;
    this.log = log;
    this.name = spec.name;
    this.logFile = spec.logFile;
    const out = createWriteStream(spec.logFile, { flags: 'a' });
    this.child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', spec.command, ...spec.args], {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stdout?.pipe(out, { end: false });
    this.child.stderr?.pipe(out, { end: false });
    // 'exit' can come while the pipes still hold the process's last lines: the file is closed
    // only once both are drained ('close'), or a late chunk would be written after its end.
    this.child.once('close', () => out.end());
    out.on('error', (err) => log.warn({ process: spec.name, err }, 'process log file not written'));
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitCode = code;
        log.debug({ process: spec.name, code, signal }, 'process exited');
        resolve(code);
      });
      this.child.once('error', (err) => {
        log.error({ process: spec.name, err }, 'process failed to start');
        this.exitCode = -1;
        out.end();
        resolve(-1);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  whenExited(): Promise<number | null> {
    return this.exited;
  }

  /**
   * Sends `signal` now: a test's SIGKILL (no drain, no goodbye; `whenExited` tells when it is
   * gone), or SIGSTOP and SIGCONT (a process that is alive but answers nothing, then resumes).
   */
  kill(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }

  /**
   * The same command again, with the same arguments, environment and log file (appended): a
   * restarted server comes back on the ports and state its flags name. Only once this one exited.
   */
  respawn(): ManagedProcess {
    if (this.running) throw new Error(`${this.name} is still running: stop it before respawning it`);
    return new ManagedProcess(this.spec, this.log);
  }

  /** SIGTERM, then SIGKILL once the grace period is over. Resolves when the process is gone. */
  async stop(graceMs = 5_000): Promise<void> {
    if (!this.running) return;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(timer);
  }
}

/** Whether a process with this pid exists (signal 0 checks without signalling). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
