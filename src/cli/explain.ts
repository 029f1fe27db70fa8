// `switchyard explain <target>` (or `--all`): why a target is on the instance it is on, and why it
// has or has not moved, read from the bus as the handlers read it (src/handlers/explain.ts).

import { ObjectView } from '../bus/view.ts';
import { loadConfig } from '../config/load.ts';
import { explainableTargets, explainTarget, type TargetExplanation } from '../handlers/explain.ts';
import { handoverPolicyOf } from '../handlers/handover/run.ts';
import { HANDOVER_VIEW_KINDS } from '../handlers/handover.ts';
import { operatorNamespace } from '../handlers/operator-namespace.ts';
import {
  CLUSTER_OPTIONS,
  type ClusterFlags,
  clusterFlagsOf,
  OUTPUT_OPTIONS,
  parseCommandArgs,
  UsageError,
  usageText,
} from './args.ts';
import { connectOperatorBus } from './operator-bus.ts';
import { type OutputFormat, renderOutput } from './output.ts';

const OPTIONS = {
  all: { type: 'boolean', description: 'every target a config converts' },
  ...OUTPUT_OPTIONS,
  ...CLUSTER_OPTIONS,
} as const;

export const USAGE = usageText(
  'usage: switchyard explain <target>… | --all [options] [--nats.url=…] [--nats.user=… --nats.passwordFile=…]\n' +
    '  Reads the bus (the read-only webhook-server user is enough) and says why the target is where it\n' +
    '  is. Exit 0 when explained, 2 on bad usage, 3 when no config converts the target, 1 when the\n' +
    '  bus cannot be read.\n',
  OPTIONS,
);

interface ExplainArgs extends ClusterFlags {
  targets: string[] | 'all';
  output: OutputFormat;
}

export function parseExplainArgs(rest: readonly string[]): ExplainArgs {
  const { values, positionals } = parseCommandArgs('explain', rest, OPTIONS, { positionals: true });
  const all = values.all ?? false;
  if (all === positionals.length > 0) throw new UsageError('explain', 'name one or more targets, or --all');
  return {
    targets: all ? 'all' : positionals,
    output: values.output ?? 'table',
    ...clusterFlagsOf(values),
  };
}

function scoreLine(e: TargetExplanation): string | undefined {
  if (e.scores.length === 0) return undefined;
  const shown = e.scores
    .slice(0, 5)
    .map((s) => `${s.instance} ${s.score.toPrecision(4)} (weight ${s.weight})`)
    .join(', ');
  return `${shown}${e.scores.length > 5 ? `, … ${e.scores.length - 5} more` : ''}`;
}

export function formatExplanation(e: TargetExplanation): string {
  const rows: [string, string | undefined][] = [
    ['configs', e.configs.join(', ')],
    [
      'resolves to',
      'instance' in e.resolution
        ? `${e.resolution.instance} (rule: ${e.resolution.rule})`
        : `nothing: ${e.resolution.unresolved}: ${e.resolution.message}`,
    ],
    ['pool scores', scoreLine(e)],
    ['status says', `assigned ${e.status.assigned ?? '(none)'}`],
    [
      'HandoverReady',
      e.status.handoverReady &&
        `${e.status.handoverReady.status} ${e.status.handoverReady.reason}: ${e.status.handoverReady.message}` +
          (e.status.handoverDestination ? ` (about ${e.status.handoverDestination})` : ''),
    ],
    [
      'conversion now',
      e.names.service === undefined
        ? 'names no Service'
        : `names Service ${e.names.service}${e.names.instance ? ` (instance ${e.names.instance})` : ''}`,
    ],
    ...(e.routedBy ?? []).map((r): [string, string] => [
      'routed by',
      `CRD ${r.crd}: ${
        !r.exists
          ? 'not generated (is Crossplane running?)'
          : `${r.service === undefined ? 'names no Service' : `names Service ${r.service}`}${
              r.followsTarget ? '' : ', not yet what the XRD says: Crossplane has not copied it'
            }`
      }`,
    ]),
  ];
  if (e.destination) {
    const d = e.destination;
    rows.push([
      'destination',
      `${d.instance} in ${d.namespace}: ${d.readyPods.length} ready Pods` +
        (d.pods.length === 0
          ? ', no served-set Lease'
          : `; ${d.pods.map((p) => `${p.pod} ${p.ready ? 'ready' : 'not ready'}, Lease ${p.lease}, ${p.target}`).join('; ')}`),
    ]);
  }
  rows.push([
    'gate now',
    e.gate.decided
      ? `${e.gate.action} ${e.gate.reason}: ${e.gate.message}`
      : `nothing to decide: ${e.gate.why}`,
  ]);
  const width = Math.max(...rows.map(([k]) => k.length));
  return `${e.target}\n${rows
    .filter((r): r is [string, string] => r[1] !== undefined)
    .map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)
    .join('\n')}\n`;
}

export async function runExplain(argv: string[]): Promise<void> {
  const loaded = loadConfig({ argv });
  const { config, rest } = loaded;
  let args: ExplainArgs;
  try {
    args = parseExplainArgs(rest);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const connected = await connectOperatorBus(loaded, args, 'explain', 'explain');
  if (!connected) return;
  const { bus, log } = connected;
  const view = new ObjectView(HANDOVER_VIEW_KINDS, log);
  try {
    await view.start(bus.js);
    const opts = {
      defaultNamespace: operatorNamespace(),
      nowMs: Date.now(),
      policy: handoverPolicyOf(config.handover),
    };
    const targets = args.targets === 'all' ? explainableTargets(view) : args.targets;
    const explained: TargetExplanation[] = [];
    for (const target of targets) {
      const e = explainTarget(view, target, opts);
      if (e) explained.push(e);
      else {
        process.stderr.write(`no config converts ${target}\n`);
        process.exitCode = 3;
      }
    }
    process.stdout.write(
      renderOutput(args.output, explained, () => explained.map(formatExplanation).join('\n')),
    );
  } finally {
    view.stop();
    await bus.close();
  }
}
