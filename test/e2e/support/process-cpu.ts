// CPU time of a local cluster's processes over a window, by component: where a scenario's
// seconds went on this machine (control plane, nats-server, each Deployment's Pods together).
// Read from /proc/<pid>/stat (utime + stime, the process's own threads); a process that started
// during the window counts from zero, one that ended during it is left out.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { LocalCluster } from '../../../src/local-cluster/cluster.ts';

/** CPU ticks of each process, by pid, with the component it belongs to. */
export type CpuSnapshot = Map<number, { component: string; ticks: number }>;

const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/** Every process of the cluster now. */
export function cpuSnapshot(cluster: Pick<LocalCluster, 'pids'>): CpuSnapshot {
  const out: CpuSnapshot = new Map();
  for (const { name, pid } of cluster.pids()) {
    const ticks = cpuTicksOf(pid);
    if (ticks !== undefined) out.set(pid, { component: componentOf(name), ticks });
  }
  return out;
}

/** CPU-seconds each component used between two snapshots, most first. */
export function cpuBetween(before: CpuSnapshot, after: CpuSnapshot): [string, number][] {
  const seconds = new Map<string, number>();
  for (const [pid, now] of after) {
    const used = (now.ticks - (before.get(pid)?.ticks ?? 0)) / TICKS_PER_SECOND;
    seconds.set(now.component, (seconds.get(now.component) ?? 0) + used);
  }
  return [...seconds].sort((a, b) => b[1] - a[1]);
}

/** One line per component: CPU-seconds, with the Pods of each Deployment together. */
export function describeCpu(used: readonly [string, number][], wallMs: number): string {
  const total = used.reduce((n, [, s]) => n + s, 0);
  return [
    ...used.filter(([, s]) => s >= 0.05).map(([c, s]) => `  ${s.toFixed(1).padStart(6)} s  ${c}`),
    `  ${total.toFixed(1).padStart(6)} s  in all, over ${(wallMs / 1000).toFixed(1)} s of wall time`,
  ].join('\n');
}

/** `pod s1-webhook-server-57f9759784-2qrdh` → `s1-webhook-server (Pods)`; a control-plane process keeps its name. */
export function componentOf(processName: string): string {
  const pod = /^pod (.+)-[a-z0-9]{5,10}-[a-z0-9]{5}$/.exec(processName);
  return pod ? `${pod[1]} (Pods)` : processName;
}

function cpuTicksOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces): state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}
