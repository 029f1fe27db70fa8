import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { kubectlPortForward, type PortForward } from '../kube/port-forward.ts';
import { kubectlPath } from './cluster.ts';

export interface KubectlResult {
  /** The exit code; null when kubectl was killed (timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface KubectlOptions {
  /** Written to kubectl's stdin (`apply -f -`). */
  input?: string;
  /** Where kubectl is; `SWITCHYARD_BIN_DIR` by default. */
  binDir?: string;
  timeoutMs?: number;
}

/**
 * kubectl's environment as `kubeConfig`'s identity, and nothing of the caller's own kubectl setup:
 * `~/.kube/kuberc` preferences off, the discovery cache beside the kubeconfig.
 */
function kubectlEnv(kubeConfig: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    KUBECONFIG: kubeConfig,
    KUBERC: 'off',
    KUBECACHEDIR: join(dirname(kubeConfig), 'kubectl-cache'),
  };
}

/**
 * Runs the built kubectl (`kubectlPath()`) with `args` as the identity of the
 * kubeconfig file `kubeConfig` (a local cluster's `kubeConfigs.admin`, …).
 * Nothing of the caller's own kubectl setup leaks in: KUBECONFIG is that file,
 * `~/.kube/kuberc` preferences are off, and the discovery cache lives beside
 * the kubeconfig (in the cluster's directory) instead of `~/.kube/cache`.
 * Resolves with the exit code and output whatever the code; rejects only when
 * kubectl cannot be started.
 */
export function runKubectl(
  kubeConfig: string,
  args: string[],
  opts: KubectlOptions = {},
): Promise<KubectlResult> {
  const child = spawn(kubectlPath(opts.binDir), args, {
    env: kubectlEnv(kubeConfig),
    stdio: ['pipe', 'pipe', 'pipe'],
    timeout: opts.timeoutMs ?? 30_000,
    killSignal: 'SIGKILL',
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  // kubectl may exit before reading all of its input (a bad flag): not an error of ours.
  child.stdin.on('error', () => {});
  child.stdin.end(opts.input ?? '');
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * Starts `kubectl port-forward <resource> :<port>` as `kubeConfig`'s identity and resolves once it
 * listens, with the local port it chose (src/kube/port-forward.ts).
 */
export function startPortForward(
  kubeConfig: string,
  args: string[],
  opts: Pick<KubectlOptions, 'binDir' | 'timeoutMs'> = {},
): Promise<PortForward> {
  return kubectlPortForward({
    kubectl: kubectlPath(opts.binDir),
    args,
    env: kubectlEnv(kubeConfig),
    ...(opts.timeoutMs !== undefined && { timeoutMs: opts.timeoutMs }),
  });
}
