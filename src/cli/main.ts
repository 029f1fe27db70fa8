#!/usr/bin/env node
// The project's one entrypoint (the container image runs it too): a subcommand per job.
import { runAdmission } from '../admission/run.ts';
import { runConfigStatus } from '../handlers/run-config-status.ts';
import { runHandover } from '../handlers/run-handover.ts';
import { runInstances } from '../handlers/run-instances.ts';
import { runLeaseAggregate } from '../handlers/run-lease-aggregate.ts';
import { runWatchers } from '../watchers/run.ts';
import { runWebhookServer } from '../webhook/run.ts';
import { runAssign } from './assign.ts';
import { runBus } from './bus.ts';
import { runDemo } from './demo.ts';
import { runRouter } from './router.ts';

const commands: Record<string, (args: string[]) => Promise<void>> = {
  demo: runDemo,
  watch: runWatchers,
  bus: runBus,
  admission: runAdmission,
  router: runRouter,
  assign: runAssign,
  'lease-aggregate': runLeaseAggregate,
  handover: runHandover,
  'config-status': runConfigStatus,
  instances: runInstances,
  'webhook-server': runWebhookServer,
};

async function main(argv: string[]): Promise<void> {
  const [name, ...args] = argv;
  const command = name === undefined ? undefined : commands[name];
  if (!command) {
    process.stderr.write(`usage: switchyard <${Object.keys(commands).join('|')}> [args]\n`);
    process.exitCode = 2;
    return;
  }
  await command(args);
}

await main(process.argv.slice(2));
