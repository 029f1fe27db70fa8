import { existsSync, renameSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  V1Container,
  V1ContainerStatus,
  V1Pod,
  V1PodCondition,
  V1PodStatus,
  V1Secret,
  V1Volume,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { childEnv } from '../control-plane.ts';
import { freePort } from '../free-port.ts';
import { ManagedProcess } from '../managed-process.ts';
import { containerEnv } from './pod-env.ts';
import {
  localMounts,
  rewriteMountedPath,
  secretNameOf,
  secretVolumeFiles,
  unmetVolume,
  volumeDir,
  writeAtomically,
} from './pod-volumes.ts';
import { runProbe } from './probe.ts';

/** The project's own image: any repository whose last path segment is `switchyard`. */
export function isProjectImage(image: string | undefined): boolean {
  if (!image) return false;
  const withoutDigest = image.split('@')[0] ?? '';
  const lastSegment = withoutDigest.split('/').pop() ?? '';
  return lastSegment.split(':')[0] === 'switchyard';
}

/**
 * The command line of a container of the project's image. The image's filesystem
 * is the project checkout and its entrypoint is `node src/cli/main.ts`; a
 * `command` names another script of the checkout instead, as it would name
 * another binary in the image.
 */
export function containerCommandLine(container: V1Container, projectRoot: string): string[] {
  const [entry, ...entryArgs] = container.command ?? ['src/cli/main.ts'];
  const script = join(projectRoot, entry ?? 'src/cli/main.ts');
  if (!existsSync(script)) throw new Error(`command ${entry} is not a script of the project checkout`);
  return [script, ...entryArgs, ...(container.args ?? [])];
}

/** A container's `lifecycle.preStop.sleep` in ms (exec and httpGet hooks are not supported locally). */
export function preStopSleepMs(container: V1Container): number {
  return (container.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000;
}

interface ContainerRun {
  container: V1Container;
  process: ManagedProcess | undefined;
  ready: boolean;
  restartCount: number;
  startedAt: Date | undefined;
  waitingReason: string | undefined;
  waitingMessage: string | undefined;
  /** Set when the container exited for good: its restart policy does not restart it. */
  terminated: { exitCode: number; finishedAt: Date } | undefined;
  /** The environment its current run was started with; an exec runs with the same. */
  env: NodeJS.ProcessEnv | undefined;
}

export interface PodRunnerDeps {
  log: Logger;
  projectRoot: string;
  podDir: string;
  nodeName: string;
  /** Writes a kubeconfig for the pod's ServiceAccount and returns its path (undefined: no automount). */
  provisionCredentials(pod: V1Pod, podDir: string): Promise<string | undefined>;
  /** The Secret as the agent last saw it in the pod's namespace (undefined: it does not exist). */
  secret(namespace: string, name: string): V1Secret | undefined;
  /** Called whenever what the pod's status would say has changed. */
  onChange(): void;
}

const MAX_RESTART_BACKOFF_MS = 30_000;

/** Runs one pod's containers as local processes, restarts them, and probes their readiness. */
export class PodRunner {
  readonly hostPorts = new Map<number, number>();
  private readonly runs: ContainerRun[];
  private readonly startTime = new Date();
  private stopping = false;
  /** Once every volume was set up and the containers were launched. */
  private launched = false;
  private kubeConfigPath: string | undefined;
  private probeTimers: NodeJS.Timeout[] = [];

  readonly pod: V1Pod;
  private readonly deps: PodRunnerDeps;

  constructor(pod: V1Pod, deps: PodRunnerDeps) {
    this.pod = pod;
    this.deps = deps;
    this.runs = (pod.spec?.containers ?? []).map((container) => ({
      container,
      process: undefined,
      ready: false,
      restartCount: 0,
      startedAt: undefined,
      waitingReason: 'ContainerCreating',
      waitingMessage: undefined,
      terminated: undefined,
      env: undefined,
    }));
  }

  get uid(): string {
    return this.pod.metadata?.uid ?? '';
  }

  get pids(): number[] {
    return this.runs.flatMap((r) =>
      r.process?.running && r.process.pid !== undefined ? [r.process.pid] : [],
    );
  }

  get ready(): boolean {
    return this.runs.length > 0 && this.runs.every((r) => r.ready);
  }

  /**
   * The log of a container's current run, or (`previous`) of the run before, as kubelet keeps
   * them: a restart moves the log aside (`<container>.previous.log`). Undefined: no such container.
   */
  logFileOf(container: string, previous: boolean): string | undefined {
    if (!this.runs.some((r) => r.container.name === container)) return undefined;
    return containerLogFile(this.deps.podDir, container, previous);
  }

  /** The loopback port that stands for one of the Pod's declared container ports. */
  hostPortOf(containerPort: number): number | { error: string } {
    return (
      this.hostPorts.get(containerPort) ?? {
        error: `port ${containerPort} is not a containerPort of this pod; the local node agent maps only declared ports to loopback`,
      }
    );
  }

  /** How an exec runs in a container: its current run's environment and directory. */
  execEnvironment(container: string): { env: NodeJS.ProcessEnv; cwd: string } | { error: string } {
    const run = this.runs.find((r) => r.container.name === container);
    if (run === undefined) return { error: `container ${container} is not in this pod` };
    if (!run.process?.running || run.env === undefined)
      return { error: `container ${container} is not running` };
    return { env: run.env, cwd: this.deps.projectRoot };
  }

  /** Whether the container's current run is going: not exited, not waiting to restart. */
  isRunning(container: string): boolean {
    return this.runs.some((r) => r.container.name === container && r.process?.running === true);
  }

  async start(): Promise<void> {
    const { log, podDir } = this.deps;
    await mkdir(podDir, { recursive: true });
    for (const c of this.pod.spec?.containers ?? []) {
      for (const p of c.ports ?? []) this.hostPorts.set(p.containerPort, await freePort());
    }
    try {
      this.kubeConfigPath = await this.deps.provisionCredentials(this.pod, podDir);
    } catch (err) {
      log.warn({ err }, 'could not provision ServiceAccount credentials; will retry on restart');
      this.markAllWaiting('CreateContainerConfigError', `service account token: ${(err as Error).message}`);
      return;
    }
    await this.startWhenMounted();
  }

  /** Kubelet's order: the containers start once every volume is set up (a Secret may come later). */
  private async startWhenMounted(): Promise<void> {
    if (this.launched || this.stopping) return;
    const volumes = this.pod.spec?.volumes ?? [];
    const unmet = volumes.map((v) => unmetVolume(v, this.secretOf(v))).find((why) => why !== undefined);
    if (unmet !== undefined) {
      this.markAllWaiting('ContainerCreating', unmet);
      return;
    }
    try {
      for (const volume of volumes) await this.writeVolume(volume);
    } catch (err) {
      this.markAllWaiting('CreateContainerConfigError', (err as Error).message);
      return;
    }
    this.launched = true;
    for (const run of this.runs) this.launch(run);
  }

  /** A Secret in the pod's namespace changed: start a pod that waited for it, or refresh its volume. */
  async secretChanged(name: string): Promise<void> {
    const using = (this.pod.spec?.volumes ?? []).filter((v) => secretNameOf(v) === name);
    if (using.length === 0) return;
    if (!this.launched) return this.startWhenMounted();
    for (const volume of using) {
      // A deleted Secret leaves the last content in place, as kubelet does.
      if (this.secretOf(volume) === undefined) continue;
      await this.writeVolume(volume).catch((err: unknown) =>
        this.deps.log.warn({ err, volume: volume.name }, 'could not refresh a Secret volume'),
      );
    }
  }

  private secretOf(volume: V1Volume): V1Secret | undefined {
    const name = secretNameOf(volume);
    return name === undefined ? undefined : this.deps.secret(this.pod.metadata?.namespace ?? '', name);
  }

  private async writeVolume(volume: V1Volume): Promise<void> {
    const dir = volumeDir(this.deps.podDir, volume.name);
    if (volume.secret === undefined) await mkdir(dir, { recursive: true });
    else await writeAtomically(dir, secretVolumeFiles(volume, this.secretOf(volume)));
  }

  private markAllWaiting(reason: string, message: string): void {
    for (const run of this.runs) {
      run.waitingReason = reason;
      run.waitingMessage = message;
    }
    this.deps.onChange();
  }

  private launch(run: ContainerRun): void {
    const { log, podDir, projectRoot } = this.deps;
    const { container } = run;
    if (!isProjectImage(container.image)) {
      run.waitingReason = 'ImageNotRunnableLocally';
      run.waitingMessage = `the local node agent runs only the project's own image, not ${container.image}`;
      this.deps.onChange();
      return;
    }
    let env: Record<string, string>;
    let commandLine: string[];
    try {
      const mounts = localMounts(this.pod, container, podDir);
      const mounted = (value: string) => rewriteMountedPath(value, mounts);
      const declared = containerEnv(this.pod, container, {
        podIP: '127.0.0.1',
        nodeName: this.deps.nodeName,
        kubeConfigPath: this.kubeConfigPath,
        hostPorts: this.hostPorts,
      });
      env = Object.fromEntries(Object.entries(declared).map(([k, v]) => [k, mounted(v)]));
      commandLine = containerCommandLine(container, projectRoot).map(mounted);
    } catch (err) {
      run.waitingReason = 'CreateContainerConfigError';
      run.waitingMessage = (err as Error).message;
      this.deps.onChange();
      return;
    }
    const logFile = containerLogFile(podDir, container.name, false);
    // The run before keeps its log for `kubectl logs --previous`.
    if (run.restartCount > 0 && existsSync(logFile))
      renameSync(logFile, containerLogFile(podDir, container.name, true));
    run.env = childEnv(env);
    const proc = new ManagedProcess(
      {
        name: `${this.pod.metadata?.name}/${container.name}`,
        command: process.execPath,
        args: commandLine,
        env: run.env,
        cwd: projectRoot,
        logFile,
      },
      log,
    );
    run.process = proc;
    // Tests in other processes find a pod's process through this file.
    void writeFile(join(podDir, `${container.name}.pid`), String(proc.pid ?? ''));
    run.ready = false;
    run.startedAt = new Date();
    run.waitingReason = undefined;
    run.waitingMessage = undefined;
    log.info(
      { container: container.name, pid: proc.pid, restartCount: run.restartCount },
      'container started',
    );
    this.deps.onChange();
    this.scheduleProbe(run, proc);
    void proc.whenExited().then((code) => this.onExit(run, proc, code));
  }

  private onExit(run: ContainerRun, proc: ManagedProcess, code: number | null): void {
    if (run.process !== proc) return;
    run.ready = false;
    if (this.stopping) return;
    const restart = restartsAfter(this.pod.spec?.restartPolicy, code);
    const fields = { container: run.container.name, code, log: proc.logFile };
    if (code === 0 && !restart) this.deps.log.info(fields, 'container completed');
    else this.deps.log.warn(fields, 'container exited');
    if (!restart) {
      run.terminated = { exitCode: code ?? 137, finishedAt: new Date() };
      this.deps.onChange();
      return;
    }
    run.waitingReason = 'CrashLoopBackOff';
    run.waitingMessage = `exited with code ${code}; see ${proc.logFile}`;
    this.deps.onChange();
    const delay = Math.min(MAX_RESTART_BACKOFF_MS, 1000 * 2 ** run.restartCount);
    run.restartCount++;
    setTimeout(() => {
      if (!this.stopping) this.launch(run);
    }, delay).unref();
  }

  private scheduleProbe(run: ContainerRun, proc: ManagedProcess): void {
    const probe = run.container.readinessProbe;
    if (!probe) {
      run.ready = true;
      this.deps.onChange();
      return;
    }
    const resolvePort = (port: number | string) => {
      const containerPort =
        typeof port === 'number' ? port : run.container.ports?.find((p) => p.name === port)?.containerPort;
      return containerPort === undefined ? undefined : this.hostPorts.get(containerPort);
    };
    const tick = async () => {
      if (this.stopping || run.process !== proc || !proc.running) return;
      const ok = await runProbe(probe, resolvePort);
      if (ok !== run.ready && run.process === proc && !this.stopping) {
        run.ready = ok;
        this.deps.onChange();
      }
      this.probeTimers.push(setTimeout(tick, (probe.periodSeconds ?? 10) * 1000).unref());
    };
    this.probeTimers.push(setTimeout(tick, (probe.initialDelaySeconds ?? 0) * 1000).unref());
  }

  /**
   * Stops every container as kubelet does: the preStop sleep first (the
   * endpoints are already unpublished, so this is the time for callers to stop
   * choosing the pod), then SIGTERM, then SIGKILL when the grace period, which
   * counts from the start, is over.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    for (const t of this.probeTimers) clearTimeout(t);
    for (const run of this.runs) run.ready = false;
    const deadline = Date.now() + graceMs;
    await Promise.all(
      this.runs.map(async (r) => {
        const sleepMs = Math.min(preStopSleepMs(r.container), graceMs);
        if (sleepMs > 0 && r.process?.running) await new Promise((done) => setTimeout(done, sleepMs));
        await r.process?.stop(Math.max(0, deadline - Date.now()));
      }),
    );
  }

  private containerStatus(run: ContainerRun): V1ContainerStatus {
    const running = run.process?.running === true;
    const { terminated } = run;
    return {
      name: run.container.name,
      image: run.container.image ?? '',
      imageID: '',
      ready: run.ready,
      started: running,
      restartCount: run.restartCount,
      state: running
        ? { running: { startedAt: run.startedAt } }
        : terminated
          ? {
              terminated: {
                exitCode: terminated.exitCode,
                reason: terminated.exitCode === 0 ? 'Completed' : 'Error',
                startedAt: run.startedAt,
                finishedAt: terminated.finishedAt,
              },
            }
          : { waiting: { reason: run.waitingReason ?? 'ContainerCreating', message: run.waitingMessage } },
    };
  }

  status(): V1PodStatus {
    const now = new Date();
    const condition = (type: string, ok: boolean): V1PodCondition => ({
      type,
      status: ok ? 'True' : 'False',
      lastTransitionTime: now,
    });
    const allStarted = this.runs.every((r) => r.process?.running === true);
    return {
      phase: podPhase(this.runs, allStarted),
      hostIP: '127.0.0.1',
      hostIPs: [{ ip: '127.0.0.1' }],
      startTime: this.startTime,
      conditions: [
        condition('PodScheduled', true),
        condition('Initialized', true),
        condition('ContainersReady', this.ready),
        condition('Ready', this.ready),
      ],
      containerStatuses: this.runs.map((r) => this.containerStatus(r)),
    };
  }
}

/** Where a container's output goes: `<pod dir>/<container>.log`, the run before `.previous.log`. */
export function containerLogFile(podDir: string, container: string, previous: boolean): string {
  return join(podDir, `${container}${previous ? '.previous' : ''}.log`);
}

/** kubelet's rule: Always restarts every exit, OnFailure only a failed one, Never none. */
export function restartsAfter(policy: string | undefined, code: number | null): boolean {
  if (policy === 'Never') return false;
  if (policy === 'OnFailure') return code !== 0;
  return true;
}

/** What the phase reads of a container: its restarts and how it ended, if it did for good. */
type PhaseInput = Pick<ContainerRun, 'restartCount' | 'terminated'>;

/** Succeeded or Failed once every container exited for good; otherwise Running once any has run. */
export function podPhase(runs: readonly PhaseInput[], allStarted: boolean): string {
  if (runs.length > 0 && runs.every((r) => r.terminated !== undefined))
    return runs.every((r) => r.terminated?.exitCode === 0) ? 'Succeeded' : 'Failed';
  return allStarted || runs.some((r) => r.restartCount > 0 || r.terminated !== undefined)
    ? 'Running'
    : 'Pending';
}
