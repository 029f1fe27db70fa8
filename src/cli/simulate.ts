// `switchyard simulate`: a pool change planned before it is made. Reads the fleet (the live
// cluster, or a file of the same objects), applies the change offline and prints what the
// resolver would do: how many targets move, from where to where, the shares before and after,
// and the least time the rebalance takes at the configured pace. Changes nothing.
import { readFile } from 'node:fs/promises';
import { KubeConfig, loadAllYaml } from '@kubernetes/client-node';
import type { ZodType } from 'zod';
import { apiserverReader } from '../admission/cluster-read.ts';
import { type ConversionConfig, conversionConfigSchema } from '../api/conversion-config.ts';
import { WEBHOOK_SERVER_KIND, type WebhookServer, webhookServerSchema } from '../api/webhook-server.ts';
import { loadConfig } from '../config/load.ts';
import { subjectOf } from '../core/assignment.ts';
import { applyPoolChange, type PoolChange, type Simulation, simulate } from '../core/simulate.ts';
import { OUTPUT_OPTIONS, parseCommandArgs, UsageError, usageText } from './args.ts';
import { type OutputFormat, renderOutput } from './output.ts';

/** Shown in the human output before `--moves` asks for all. */
const MOVES_SHOWN = 20;

const OPTIONS = {
  add: {
    type: 'string',
    multiple: true,
    valueName: 'NAME[:WEIGHT]',
    description: 'a new pool member (weight 1 unless given)',
  },
  remove: { type: 'string', multiple: true, valueName: 'NAME', description: 'a pool member deleted' },
  weight: { type: 'string', multiple: true, valueName: 'NAME=WEIGHT', description: "a member's new weight" },
  'from-file': {
    type: 'string',
    valueName: 'FILE',
    description: 'the fleet from this file instead of the cluster (KUBECONFIG)',
  },
  moves: { type: 'boolean', description: `list every move, not the first ${MOVES_SHOWN}` },
  ...OUTPUT_OPTIONS,
} as const;

export const USAGE = usageText(
  'usage: switchyard simulate [options]\n' +
    '  Reads the instances and configs from the cluster (KUBECONFIG), or from FILE (YAML or JSON, as\n' +
    '  `kubectl get conversionwebhookservers,crdconversionconfigs,xrdconversionconfigs -o yaml` prints),\n' +
    '  and prints what the change would move: give --add, --remove or --weight, each as often as\n' +
    '  needed. Exit 0 when simulated, 2 on a bad change or usage, 1 when the fleet cannot be read.\n',
  OPTIONS,
);

interface SimulateArgs {
  change: PoolChange;
  fromFile: string | undefined;
  allMoves: boolean;
  output: OutputFormat;
}

function nameAndWeight(value: string, separator: string, flag: string): { name: string; weight: number } {
  const at = value.lastIndexOf(separator);
  const [name, weight] = at < 0 ? [value, '1'] : [value.slice(0, at), value.slice(at + 1)];
  if (name === '' || !/^\d+$/.test(weight))
    throw new UsageError(
      'simulate',
      `${flag}=${value}: expected NAME${separator}WEIGHT, WEIGHT a positive integer`,
    );
  return { name, weight: Number(weight) };
}

function reweightOf(value: string): { name: string; weight: number } {
  if (!value.includes('=')) throw new UsageError('simulate', `--weight=${value}: expected NAME=WEIGHT`);
  return nameAndWeight(value, '=', '--weight');
}

export function parseSimulateArgs(rest: readonly string[]): SimulateArgs {
  const { values } = parseCommandArgs('simulate', rest, OPTIONS);
  const change: PoolChange = {
    add: (values.add ?? []).map((value) => nameAndWeight(value, ':', '--add')),
    remove: values.remove ?? [],
    reweight: (values.weight ?? []).map(reweightOf),
  };
  if (change.add.length + change.remove.length + change.reweight.length === 0)
    throw new UsageError('simulate', 'nothing to simulate: give --add, --remove or --weight');
  return {
    change,
    fromFile: values['from-file'],
    allMoves: values.moves ?? false,
    output: values.output ?? 'table',
  };
}

interface Fleet {
  instances: WebhookServer[];
  configs: ConversionConfig[];
  /** Objects that are not what the API accepts, with why: left out, and said. */
  skipped: string[];
}

function parseAll<T>(items: readonly unknown[], schema: ZodType<T>, what: string, skipped: string[]): T[] {
  return items.flatMap((item) => {
    const parsed = schema.safeParse(item);
    if (parsed.success) return [parsed.data];
    const name = (item as { metadata?: { name?: string } }).metadata?.name ?? '(no name)';
    skipped.push(`${what} ${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    return [];
  });
}

function fleetOfObjects(instances: readonly unknown[], configs: readonly unknown[]): Fleet {
  const skipped: string[] = [];
  return {
    instances: parseAll(instances, webhookServerSchema, WEBHOOK_SERVER_KIND, skipped),
    configs: parseAll(configs, conversionConfigSchema, 'config', skipped),
    skipped,
  };
}

/** Every object of the file, lists flattened, sorted by kind. */
export function fleetOfFile(text: string): Fleet {
  const documents = loadAllYaml(text) as unknown[];
  const objects = documents.flatMap((d) =>
    d && typeof d === 'object' && Array.isArray((d as { items?: unknown }).items)
      ? (d as { items: unknown[] }).items
      : [d],
  );
  const kindOf = (o: unknown) => (o as { kind?: string } | null)?.kind;
  return fleetOfObjects(
    objects.filter((o) => kindOf(o) === WEBHOOK_SERVER_KIND),
    objects.filter((o) => kindOf(o) === 'CRDConversionConfig' || kindOf(o) === 'XRDConversionConfig'),
  );
}

async function liveFleet(): Promise<Fleet> {
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const state = await apiserverReader(kc).read({ instances: true, configs: 'all' });
  return fleetOfObjects(state.instances, state.configs);
}

function describeChange(change: PoolChange): string {
  return [
    ...change.add.map((a) => `add ${a.name} (weight ${a.weight})`),
    ...change.remove.map((r) => `remove ${r}`),
    ...change.reweight.map((w) => `weight ${w.name} → ${w.weight}`),
  ].join(', ');
}

function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
  return rows.map(
    (r) =>
      `  ${r
        .map((cell, c) => cell.padEnd(widths[c] ?? 0))
        .join('  ')
        .trimEnd()}`,
  );
}

export function formatSimulation(
  sim: Simulation,
  change: PoolChange,
  rate: number,
  allMoves: boolean,
): string {
  const share = sim.targets === 0 ? 0 : (100 * sim.moves.length) / sim.targets;
  const lines = [
    `Simulated: ${describeChange(change)}`,
    `${sim.targets} targets; ${sim.moves.length} move (${share.toFixed(1)}%), at least ` +
      `${sim.pacingFloorSeconds.toFixed(1)} s at ${rate} moves/s (bus.fanoutRatePerSecond)`,
  ];
  if (sim.routes.length > 0)
    lines.push(
      '',
      'Moves by route:',
      ...table([['from', 'to', 'targets'], ...sim.routes.map((r) => [r.from, r.to, String(r.count)])]),
    );
  lines.push(
    '',
    'Targets per instance:',
    ...table([
      ['instance', 'before', 'after'],
      ...sim.shares.map((s) => [s.instance, String(s.before), String(s.after)]),
    ]),
  );
  if (sim.moves.length > 0) {
    const shown = allMoves ? sim.moves : sim.moves.slice(0, MOVES_SHOWN);
    lines.push('', 'Moves:', ...table(shown.map((m) => [m.target, `${m.from} → ${m.to}`])));
    if (shown.length < sim.moves.length)
      lines.push(`  … ${sim.moves.length - shown.length} more (--moves lists all)`);
  }
  for (const [title, changes] of [
    ['Would stop resolving (they stay where they are served; the config says why):', sim.stopResolving],
    ['Would start resolving (a first apply):', sim.startResolving],
  ] as const)
    if (changes.length > 0)
      lines.push('', title, ...table(changes.map((c) => [c.target, c.instance, c.reason])));
  return `${lines.join('\n')}\n`;
}

export async function runSimulate(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  let args: SimulateArgs;
  try {
    args = parseSimulateArgs(rest);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  let fleet: Fleet;
  try {
    fleet = args.fromFile ? fleetOfFile(await readFile(args.fromFile, 'utf8')) : await liveFleet();
  } catch (err) {
    process.stderr.write(`cannot read the fleet: ${(err as Error).message}\n`);
    process.exitCode = 1;
    return;
  }
  for (const why of fleet.skipped) process.stderr.write(`left out: ${why}\n`);
  let after: ReturnType<typeof applyPoolChange>;
  try {
    after = applyPoolChange(fleet.instances, args.change);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exitCode = 2;
    return;
  }
  const rate = config.bus.fanoutRatePerSecond;
  const sim = simulate({
    subjects: fleet.configs.map(subjectOf),
    before: fleet.instances,
    after,
    fanoutRatePerSecond: rate,
  });
  process.stdout.write(
    renderOutput(args.output, { change: args.change, fanoutRatePerSecond: rate, ...sim }, () =>
      formatSimulation(sim, args.change, rate, args.allMoves),
    ),
  );
}
