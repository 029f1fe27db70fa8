// `switchyard replay`: rebuild the view from the recorded history and take a concern's recorded
// decisions again (src/replay/), printing each with whether it came out the same. Dry by default;
// `--redrive` then publishes the replayed keys as new work, for the live handlers to decide again.

import { encodeMessage, workItemSchema } from '../bus/messages.ts';
import { ASSIGN_CONCERN } from '../handlers/assign/world.ts';
import { objectWorkSubject, parseWorkKey } from '../handlers/work-keys.ts';
import { type ReplayedDecision, type ReplayReport, replay } from '../replay/replay.ts';
import { connectOperatorBus, loadOperatorConfig } from './operator-bus.ts';
import { type OutputFormat, readOutputFlag, renderOutput } from './output.ts';

export const USAGE =
  'usage: switchyard replay [--concern=assign] [--key=<kind>/<name>] [--until-seq=<K8S sequence> | --until=<RFC 3339 time>]\n' +
  '                         [--redrive] [--all-lines] [-o table|json|yaml] [--nats.url=…] [--nats.user=replay --nats.passwordFile=…]\n' +
  '  Takes the recorded decisions of a concern again on the view rebuilt from the recorded history and\n' +
  '  says whether each comes out the same, byte for byte. Prints the differing and unavailable ones and a\n' +
  '  summary (--all-lines: every decision). --redrive publishes each replayed key as new work.\n' +
  '  Exit 0 when every decision replayed the same, 1 when one differs or a record is unreadable, none\n' +
  '  was found or the bus cannot be read, 2 on bad usage.\n';

export interface ReplayArgs {
  concern: string;
  key?: string;
  untilSeq?: number;
  until?: Date;
  redrive: boolean;
  allLines: boolean;
  output: OutputFormat;
}

export function parseReplayArgs(rest: readonly string[]): ReplayArgs {
  const args: ReplayArgs = { concern: ASSIGN_CONCERN, redrive: false, allLines: false, output: 'table' };
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i] as string;
    const [flag, value] = arg.includes('=')
      ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)]
      : [arg];
    const output = readOutputFlag(rest, i);
    if (output) {
      args.output = output.format;
      i += output.used - 1;
    } else if (arg === '--redrive') args.redrive = true;
    else if (arg === '--all-lines') args.allLines = true;
    else if (flag === '--concern' && value) args.concern = value;
    else if (flag === '--key' && value) args.key = value;
    else if (flag === '--until-seq' && value && /^\d+$/.test(value)) args.untilSeq = Number(value);
    else if (flag === '--until' && value && !Number.isNaN(Date.parse(value))) args.until = new Date(value);
    else throw new Error(`unknown or malformed argument ${arg}`);
  }
  if (args.untilSeq !== undefined && args.until !== undefined)
    throw new Error('give --until-seq or --until, not both');
  return args;
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
  const loaded = loadOperatorConfig(argv);
  const { config, rest } = loaded;
  let args: ReplayArgs;
  try {
    args = parseReplayArgs(rest);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const connected = await connectOperatorBus(loaded, 'replay', 'replay');
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
