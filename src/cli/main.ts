#!/usr/bin/env node
// The project's one entrypoint (the container image runs it too): a subcommand per job.
//
// A process loads only its own subcommand's modules, through V8's compile cache: every worker
// and webhook-server replica starts from here, and a newcomer instance serves no target before
// its replicas are up. Loading every subcommand eagerly, uncached, took ~1.3 s of CPU per
// process on the reference 2-core machine (half of it @kubernetes/client-node, which the
// webhook-server needs anyway); see BENCHMARKS.md "Process start".
import { enableCompileCache } from 'node:module';
import { projectVersion } from '../runtime/version.ts';

type Command = (args: string[]) => Promise<void>;

/** Each subcommand's module, loaded only when it runs. */
export const commands: Record<string, () => Promise<Command>> = {
  demo: async () => (await import('./demo.ts')).runDemo,
  watch: async () => (await import('../watchers/run.ts')).runWatchers,
  bus: async () => (await import('./bus.ts')).runBus,
  admission: async () => (await import('../admission/run.ts')).runAdmission,
  router: async () => (await import('../handlers/router/run.ts')).runRouter,
  assign: async () => (await import('../handlers/assign/run.ts')).runAssign,
  'lease-aggregate': async () => (await import('../handlers/lease-aggregate/run.ts')).runLeaseAggregate,
  handover: async () => (await import('../handlers/handover/run.ts')).runHandover,
  'config-status': async () => (await import('../handlers/config-status/run.ts')).runConfigStatus,
  instances: async () => (await import('../handlers/instances/run.ts')).runInstances,
  'webhook-server': async () => (await import('../webhook/run.ts')).runWebhookServer,
  'nats-credentials': async () => (await import('./nats-credentials.ts')).runNatsCredentials,
  'nats-reloader': async () => (await import('../nats-pod/reloader.ts')).runNatsReloader,
  'nats-monitor-gate': async () => (await import('../nats-pod/monitor-gate.ts')).runNatsMonitorGate,
  simulate: async () => (await import('./simulate.ts')).runSimulate,
  explain: async () => (await import('./explain.ts')).runExplain,
  replay: async () => (await import('./replay.ts')).runReplay,
  dlq: async () => (await import('./dlq.ts')).runDlq,
};

/** `switchyard --version`: the name and the version in package.json. */
export function versionLine(): string {
  return `switchyard ${projectVersion()}\n`;
}

export async function main(
  argv: string[],
  table: Record<string, () => Promise<Command>> = commands,
): Promise<void> {
  const [name, ...args] = argv;
  if (name === '--version') {
    process.stdout.write(versionLine());
    return;
  }
  if (name === '--help' || name === '-h') {
    process.stdout.write((await import('./help.ts')).overallHelp(Object.keys(table)));
    return;
  }
  const load = name === undefined ? undefined : table[name];
  // Help for a subcommand loads its usage and the configuration's keys, never the job itself.
  if (load && (args.includes('--help') || args.includes('-h'))) {
    process.stdout.write(await (await import('./help.ts')).subcommandHelp(name as string));
    return;
  }
  if (!load) {
    if (name !== undefined) process.stderr.write(`switchyard: unknown subcommand ${name}\n`);
    process.stderr.write(`usage: switchyard <${Object.keys(table).join('|')}> [args] | --help | --version\n`);
    process.exitCode = 2;
    return;
  }
  await (await load())(args);
}

if (import.meta.main) {
  // The cache lives in NODE_COMPILE_CACHE, else the OS temporary directory; a read-only or
  // missing directory only disables it. The image sets NODE_COMPILE_CACHE to a cache filled
  // when it was built (read-only, and complete for every subcommand but the demo).
  enableCompileCache();
  await main(process.argv.slice(2));
}
