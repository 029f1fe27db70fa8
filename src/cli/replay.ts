// `switchyard replay`: rebuild the view from the recorded history and take a concern's recorded
// decisions again (src/replay/), printing each with whether it came out the same. Dry by default;
// `--redrive` then publishes the replayed keys as new work, for the live handlers to decide again.

import { encodeMessage, workItemSchema } from '../bus/messages.ts';
import { loadConfig } from '../config/load.ts';
import { ASSIGN_CONCERN } from '../handlers/assign/world.ts';
import { objectWorkSubject, parseWorkKey } from '../handlers/work-keys.ts';
import { type ReplayedDecision, type ReplayReport, replay } from '../replay/replay.ts';
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
  concern: {
    type: 'string',
    description: `the concern whose recorded decisions to take again (default ${ASSIGN_CONCERN})`,
  },
  key: { type: 'string', valueName: '<kind>/<name>', description: 'only the decisions about this key' },
  'until-seq': {
    type: 'string',
    valueName: '<K8S sequence>',
    description: 'only the decisions taken on a view at or before this record',
  },
  until: {
    type: 'string',
    valueName: '<RFC 3339 time>',
    description: 'only the decisions taken at or before this time',
  },
  redrive: { type: 'boolean', description: 'then publish each replayed key as new work' },
  'all-lines': { type: 'boolean', description: 'print every decision, the same ones too' },
  ...OUTPUT_OPTIONS,
  ...CLUSTER_OPTIONS,
} as const;

export const USAGE = usageText(
  'usage: switchyard replay [options] [--nats.url=…] [--nats.user=replay --nats.passwordFile=…]\n' +
    '  Takes the recorded decisions of a concern again on the view rebuilt from the recorded history and\n' +
    '  says whether each comes out the same, byte for byte. Prints the differing and unavailable ones and a\n' +
    '  summary (--all-lines: every decision). --redrive publishes each replayed key as new work.\n' +
    '  --until-seq and --until are one bound, not both.\n' +
    '  Exit 0 when every decision replayed the same, 1 when one differs or a record is unreadable, none\n' +
    '  was found or the bus cannot be read, 2 on bad usage.\n',
  OPTIONS,
);

export interface ReplayArgs extends ClusterFlags {
  concern: string;
  key?: string;
  untilSeq?: number;
  until?: Date;
  redrive: boolean;
  allLines: boolean;
  output: OutputFormat;
}

function untilSeqOf(value: string): number {
  if (!/^\d+$/.test(value))
    throw new UsageError('replay', `--until-seq=${value} is not a K8S sequence (a non-negative integer)`);
  return Number(value);
}

function untilOf(value: string): Date {
  if (Number.isNaN(Date.parse(value)))
    throw new UsageError('replay', `--until=${value} is not an RFC 3339 time`);
  return new Date(value);
}

export function parseReplayArgs(rest: readonly string[]): ReplayArgs {
  const { values } = parseCommandArgs('replay', rest, OPTIONS);
  if (values['until-seq'] !== undefined && values.until !== undefined)
    throw new UsageError('replay', 'give --until-seq or --until, not both');
  return {
    concern: values.concern ?? ASSIGN_CONCERN,
    key: values.key,
    untilSeq: values['until-seq'] === undefined ? undefined : untilSeqOf(values['until-seq']),
    until: values.until === undefined ? undefined : untilOf(values.until),
    redrive: values.redrive ?? false,
    allLines: values['all-lines'] ?? false,
    output: values.output ?? 'table',
    ...clusterFlagsOf(values),
  };
}

/** What `--redrive` publishes: each replayed key once, as a work item with no cause (a manual kick). */
export function redriveKeys(report: ReplayReport): string[] {
  return [...new Set(report.decisions.filter((d) => d.verdict !== 'unavailable').map((d) => d.key))].sort();
}

function line(d: ReplayedDecision): string {
  const head = `${d.verdict.padEnd(11)} ${d.key}  view ${d.viewSeq}  ${d.decidedAt}`;
  if (d.verdict === 'same') return head;
  if (d.verdict === 'unavailable') return `${head}\n  decided on a view older than the history kept`;
  return `${head}\n  recorded: ${JSON.stringify(d.recorded)}\n  replayed: ${JSON.stringify(d.replayed)}`;
}

export function formatReplay(report: ReplayReport, allLines: boolean): string {
  const count = (v: ReplayedDecision['verdict']) => report.decisions.filter((d) => d.verdict === v).length;
  const shown = report.decisions.filter((d) => allLines || d.verdict !== 'same');
  return [
    ...shown.map(line),
    ...report.unreadable.map(
      (u) => `unreadable  ${u.subject}  record ${u.recordSeq}\n  not a decision record: ${u.reason}`,
    ),
    `${report.decisions.length} ${report.concern} decisions taken again from ${report.recordsApplied} records ` +
      `(history from K8S sequence ${report.historyFrom}): ${count('same')} the same, ${count('different')} different, ` +
      `${count('unavailable')} unavailable${report.unreadable.length > 0 ? `, ${report.unreadable.length} records unreadable` : ''}`,
    '',
  ].join('\n');
}

export async function runReplay(argv: string[]): Promise<void> {
  const loaded = loadConfig({ argv });
  const { config, rest } = loaded;
  let args: ReplayArgs;
  try {
    args = parseReplayArgs(rest);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const connected = await connectOperatorBus(loaded, args, 'replay', 'replay');
  if (!connected) return;
  const { bus, log } = connected;
  try {
    const report = await replay(
      bus.js,
      bus.jsm,
      {
        ...args,
        onProgress: (applied, total) =>
          process.stderr.write(`replay: ${applied} of ${total} records applied\n`),
      },
      log,
    );
    process.stdout.write(renderOutput(args.output, report, () => formatReplay(report, args.allLines)));
    const differs = report.decisions.some((d) => d.verdict === 'different') || report.unreadable.length > 0;
    if (report.decisions.length === 0) process.stderr.write('no recorded decision matched\n');
    process.exitCode = differs || report.decisions.length === 0 ? 1 : 0;
    if (args.redrive) {
      const keys = redriveKeys(report);
      for (const key of keys) {
        const parsed = parseWorkKey(key);
        if (!parsed) continue;
        await bus.js.publish(
          objectWorkSubject(report.concern, parsed, config.bus.partitions.assign),
          encodeMessage(workItemSchema, { key, seq: 0 }),
        );
      }
      process.stderr.write(`re-drove ${keys.length} keys as new ${report.concern} work\n`);
    }
  } catch (err) {
    process.stderr.write(`replay failed: ${(err as Error).message}\n`);
    process.exitCode = 1;
  } finally {
    await bus.close();
  }
}
