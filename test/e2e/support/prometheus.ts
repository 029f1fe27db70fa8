// A real Prometheus (built from Go modules by bootstrap, SWITCHYARD_BIN_PROMETHEUS) scraping the
// local stack as deploy/monitoring's ServiceMonitor and PodMonitor would, with its alert rules
// loaded. The local node agent gives each Pod a loopback port, so targets are static: the same
// `job`, `namespace`, `pod` and `webhook_server` labels the Prometheus Operator's relabelling sets.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { parse, stringify } from 'yaml';
import { PROJECT_ROOT } from '../../../src/local-cluster/cluster.ts';
import { freePort } from '../../../src/local-cluster/free-port.ts';
import { ManagedProcess } from '../../../src/local-cluster/managed-process.ts';
import { waitFor } from '../../../src/local-cluster/wait.ts';

/** The ServiceMonitor's job is the Service's name; the PodMonitor's `<namespace>/<name>`. */
export const WORKERS_JOB = 'switchyard-worker-metrics';
export const WEBHOOK_SERVERS_JOB = 'switchyard-system/switchyard-webhook-servers';
/** deploy/monitoring's NATS PodMonitor: each server Pod's monitoring gate. */
export const NATS_JOB = 'switchyard-system/switchyard-nats';

export interface ScrapeTarget {
  job: typeof WORKERS_JOB | typeof WEBHOOK_SERVERS_JOB | typeof NATS_JOB;
  port: number;
  labels: { namespace: string; pod: string; webhook_server?: string };
}

interface QueryResult {
  status: string;
  error?: string;
  data?: { result: unknown[] };
}

export interface RunningPrometheus {
  url: string;
  /** An instant query's result series; throws with Prometheus's error for a query it refuses. */
  query(expr: string): Promise<unknown[]>;
  /** Every loaded rule, its group and whether its last evaluation succeeded. */
  rules(): Promise<{ name: string; health: string; lastError?: string }[]>;
  /** How many targets answered their last scrape, of how many. */
  targetsUp(): Promise<{ up: number; total: number }>;
  stop(): Promise<void>;
}

function binary(): string {
  const path = process.env.SWITCHYARD_BIN_PROMETHEUS;
  if (!path) throw new Error('SWITCHYARD_BIN_PROMETHEUS is not set: run the tests through scripts/test.sh');
  return path;
}

/** The groups of deploy/monitoring's PrometheusRule, as a rule file Prometheus loads. */
async function ruleFile(): Promise<string> {
  const rule = parse(
    await readFile(join(PROJECT_ROOT, 'deploy/monitoring/prometheus-rule.yaml'), 'utf8'),
  ) as {
    spec: { groups: unknown[] };
  };
  return stringify({ groups: rule.spec.groups });
}

function scrapeConfig(targets: readonly ScrapeTarget[], intervalSeconds: number): object {
  const job = (name: ScrapeTarget['job']) => ({
    job_name: name,
    scrape_interval: `${intervalSeconds}s`,
    scrape_timeout: `${intervalSeconds}s`,
    ...(name === WEBHOOK_SERVERS_JOB && { scheme: 'https', tls_config: { insecure_skip_verify: true } }),
    static_configs: targets
      .filter((t) => t.job === name)
      .map((t) => ({ targets: [`127.0.0.1:${t.port}`], labels: t.labels })),
  });
  return {
    global: { scrape_interval: `${intervalSeconds}s`, evaluation_interval: `${intervalSeconds}s` },
    rule_files: ['rules.yaml'],
    scrape_configs: [job(WORKERS_JOB), job(WEBHOOK_SERVERS_JOB), job(NATS_JOB)],
  };
}

export async function startPrometheus(opts: {
  dir: string;
  targets: readonly ScrapeTarget[];
  log: Logger;
  intervalSeconds?: number;
}): Promise<RunningPrometheus> {
  await mkdir(join(opts.dir, 'data'), { recursive: true });
  await writeFile(join(opts.dir, 'rules.yaml'), await ruleFile());
  await writeFile(
    join(opts.dir, 'prometheus.yml'),
    stringify(scrapeConfig(opts.targets, opts.intervalSeconds ?? 1)),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc = new ManagedProcess(
    {
      name: 'prometheus',
      command: binary(),
      args: [
        `--config.file=${join(opts.dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(opts.dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      cwd: opts.dir,
      logFile: join(opts.dir, 'prometheus.log'),
    },
    opts.log,
  );
  await waitFor(
    'Prometheus ready',
    async () => ((await fetch(`${url}/-/ready`).catch(() => undefined))?.ok ? true : undefined),
    {
      timeoutMs: 60_000,
      intervalMs: 250,
    },
  );
  const api = async <T>(path: string): Promise<T> => {
    const body = (await (await fetch(`${url}/api/v1/${path}`)).json()) as {
      status: string;
      error?: string;
      data: T;
    };
    if (body.status !== 'success') throw new Error(`Prometheus refused ${path}: ${body.error}`);
    return body.data;
  };
  return {
    url,
    query: async (expr) =>
      (await api<NonNullable<QueryResult['data']>>(`query?query=${encodeURIComponent(expr)}`)).result,
    rules: async () =>
      (
        await api<{ groups: { rules: { name: string; health: string; lastError?: string }[] }[] }>('rules')
      ).groups.flatMap((g) => g.rules),
    targetsUp: async () => {
      const { activeTargets } = await api<{ activeTargets: { health: string }[] }>('targets');
      return { up: activeTargets.filter((t) => t.health === 'up').length, total: activeTargets.length };
    },
    stop: () => proc.stop(),
  };
}
