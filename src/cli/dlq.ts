// `switchyard dlq list|show|retry`: inspect the dead letters (stream DLQ) with their reasons, and
// re-drive them into their work subject once the cause is fixed. The decisions are pure
// (src/bus/dead-letters.ts); this file reads DLQ, publishes and deletes.
//
// Re-driving is publish-then-delete: the payload goes to its original work subject, and the dead
// letter is deleted only after JetStream acknowledged that publish. A crash in between leaves
// the dead letter in place (a later run re-drives it again: a duplicate at worst, never a loss),
// and the publish carries a message id derived from the dead letter's sequence, so a run repeated
// within WORK's duplicate window stores the work once.

import type { JetStreamManager, MsgRequest, StoredMsg } from '@nats-io/jetstream';
import { headers as natsHeaders } from '@nats-io/transport-node';
import type { Bus } from '../bus/connect.ts';
import {
  type ConcernSchema,
  DEAD_LETTER_PREFIX,
  type DeadLetterEntry,
  deadLetterJson,
  decodesNow,
  formatDeadLetter,
  formatDeadLetterList,
  formatProgress,
  formatRetryResult,
  formatRetrySummary,
  isProgressPoint,
  PROGRESS_ABOVE,
  parseDeadLetter,
  payloadView,
  REDRIVEN_FROM_HEADER,
  type RetryResult,
  redriveMsgId,
  redriveVerdict,
  retryExitCode,
  type ShownDeadLetter,
  type StoredDeadLetter,
  showJson,
  tallyRetries,
  type WorkConcern,
} from '../bus/dead-letters.ts';
import { objectEventSchema } from '../bus/messages.ts';
import { pacedItemSchema } from '../bus/pacer/pacer.ts';
import { errorMessage } from '../bus/runtime/index.ts';
import { STREAMS } from '../bus/topology.ts';
import { ConfigError, type LoadedConfig, loadConfig } from '../config/load.ts';
import type { Config } from '../config/schema.ts';
import { ASSIGN_PACER } from '../handlers/assign.ts';
import { CONCERNS } from '../handlers/concerns.ts';
import { resyncPacerOf } from '../handlers/resync.ts';
import {
  CLUSTER_OPTIONS,
  type ClusterFlags,
  type CommandOptions,
  clusterFlagsOf,
  OUTPUT_OPTIONS,
  parseCommandArgs,
  UsageError,
  usageText,
} from './args.ts';
import { connectOperatorBus } from './operator-bus.ts';
import { type OutputFormat, renderOutput } from './output.ts';

const DLQ_COMMANDS = ['list', 'show', 'retry'] as const;
type DlqCommand = (typeof DLQ_COMMANDS)[number];

/** The options only some dlq commands take. */
const SOME_OPTIONS = {
  concern: { type: 'string', description: "only this concern's dead letters (dlq.<concern>)" },
  all: { type: 'boolean', description: 'every dead letter (of --concern), instead of sequences' },
  'dry-run': { type: 'boolean', description: 'say what each would do, and change nothing' },
} as const;

const TAKEN_BY: Readonly<Record<keyof typeof SOME_OPTIONS, readonly DlqCommand[]>> = {
  concern: ['list', 'retry'],
  all: ['retry'],
  'dry-run': ['retry'],
};

const OPTIONS = { ...SOME_OPTIONS, ...OUTPUT_OPTIONS, ...CLUSTER_OPTIONS } as const;

/** Every option as help says it: one only some commands take starts with their names. */
function helpOptions(): CommandOptions {
  return Object.fromEntries(
    Object.entries(OPTIONS).map(([name, option]) => {
      const takenBy = TAKEN_BY[name as keyof typeof TAKEN_BY];
      return [
        name,
        takenBy ? { ...option, description: `${takenBy.join(', ')}: ${option.description}` } : option,
      ];
    }),
  );
}

export const USAGE = usageText(
  'usage: switchyard dlq list [options]\n' +
    '       switchyard dlq show <seq> [options]\n' +
    '       switchyard dlq retry <seq>… | --all [options]\n' +
    '  [--nats.url=… --nats.user=dlq --nats.passwordFile=…] [--bus.partitions.<concern>=N as the handlers run]\n' +
    '  Dead letters are messages a handler could not process (stream DLQ, kept a week). `retry`\n' +
    '  republishes each to its original work subject, then deletes it. Exit 0 done; 1 something\n' +
    '  failed, was refused or was not found, or nothing matched; 2 bad usage.\n',
  helpOptions(),
);

/** How long one publish or delete may take before it counts as failed. */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * Every concern a handler consumes work of, as its process runs it (`src/handlers/<concern>/run.ts`):
 * its consumers for this configuration's partition counts and the schema its payloads decode
 * with. A dead letter is re-driven only to a subject one of these consumers takes.
 */
export function workConcerns(config: Config): WorkConcern[] {
  return CONCERNS.map((work) => ({
    concern: work.concern,
    consumers: work.consumers(config.bus.partitions[work.partitionsOf]),
    schema: work.schema,
  }));
}

/**
 * Concerns whose dead letters are shown but never re-driven (their work is not on WORK): the
 * router's records and the pacers' fan-out items (assign's fan-out, each concern's resync), so
 * `show` says whether they decode now. A resync item is not worth re-driving: the next round
 * publishes it again.
 */
export const INSPECT_ONLY: readonly ConcernSchema[] = [
  { concern: 'router', schema: objectEventSchema },
  { concern: ASSIGN_PACER.concern, schema: pacedItemSchema },
  ...CONCERNS.map(({ concern }) => ({
    concern: resyncPacerOf(concern).concern,
    schema: pacedItemSchema,
  })),
];

interface CommonArgs extends ClusterFlags {
  output: OutputFormat;
}

export type DlqArgs =
  | ({ command: 'list'; concern: string | undefined } & CommonArgs)
  | ({ command: 'show'; seq: number } & CommonArgs)
  | ({ command: 'retry'; seqs: number[] | 'all'; concern: string | undefined; dryRun: boolean } & CommonArgs);

function isDlqCommand(arg: string | undefined): arg is DlqCommand {
  return (DLQ_COMMANDS as readonly (string | undefined)[]).includes(arg);
}

function seqOf(command: string, arg: string): number {
  if (!/^[1-9]\d*$/.test(arg))
    throw new UsageError(command, `${arg} is not a DLQ sequence (a positive integer)`);
  return Number(arg);
}

function concernOf(command: string, concern: string | undefined): string | undefined {
  if (concern !== undefined && !/^[A-Za-z0-9-]+$/.test(concern))
    throw new UsageError(command, `--concern=${concern} is not a concern name`);
  return concern;
}

/** The arguments after `dlq` (configuration flags already taken out by `loadConfig`). */
export function parseDlqArgs(rest: readonly string[]): DlqArgs {
  const [command, ...args] = rest;
  if (!isDlqCommand(command))
    throw new UsageError(
      'dlq',
      `${command === undefined ? 'name a command' : `unknown command ${command}`} (${DLQ_COMMANDS.join(', ')})`,
    );
  const name = `dlq ${command}`;
  const { values, positionals } = parseCommandArgs(name, args, OPTIONS, { positionals: command !== 'list' });
  for (const [option, takenBy] of Object.entries(TAKEN_BY))
    if (values[option as keyof typeof TAKEN_BY] !== undefined && !takenBy.includes(command))
      throw new UsageError(name, `--${option} applies only to dlq ${takenBy.join(' and ')}`);
  const common = { output: values.output ?? 'table', ...clusterFlagsOf(values) };
  const concern = concernOf(name, values.concern);
  switch (command) {
    case 'list':
      return { command, concern, ...common };
    case 'show':
      if (positionals.length !== 1) throw new UsageError(name, 'give one DLQ sequence');
      return { command, seq: seqOf(name, positionals[0] as string), ...common };
    case 'retry': {
      const all = values.all ?? false;
      if (all === positionals.length > 0) throw new UsageError(name, 'give either DLQ sequences or --all');
      return {
        command,
        seqs: all ? 'all' : positionals.map((arg) => seqOf(name, arg)),
        concern,
        dryRun: values['dry-run'] ?? false,
        ...common,
      };
    }
  }
}

function stored(m: StoredMsg): StoredDeadLetter {
  return { seq: m.seq, subject: m.subject, time: m.time, headers: m.header, data: m.data };
}

function filterOf(concern: string | undefined): string {
  return concern ? `${DEAD_LETTER_PREFIX}.${concern}` : `${DEAD_LETTER_PREFIX}.>`;
}

/** One dead letter by its DLQ sequence, or null when there is none. */
function getDeadLetter(jsm: JetStreamManager, seq: number): Promise<StoredMsg | null> {
  return jsm.streams.getMessage(STREAMS.deadLetters, { seq });
}

/**
 * The dead letters in sequence order, from `fromSeq` up to `toSeq`: one STREAM.MSG.GET per
 * message (`next_by_subj`), which is all the `dlq` user may read with (no consumer to create).
 */
async function* deadLetters(
  jsm: JetStreamManager,
  filter: string,
  fromSeq: number,
  toSeq: number,
): AsyncGenerator<StoredMsg> {
  let seq = Math.max(1, fromSeq);
  while (seq <= toSeq) {
    // nats.js types MsgRequest without `next_by_subj`; the server's STREAM.MSG.GET takes it.
    const query = { seq, next_by_subj: filter } as unknown as MsgRequest;
    const m = await jsm.streams.getMessage(STREAMS.deadLetters, query);
    if (!m || m.seq > toSeq) return;
    yield m;
    seq = m.seq + 1;
  }
}

/** How many dead letters match the filter now, and the sequence range to read them in. */
async function deadLetterRange(jsm: JetStreamManager, concern: string | undefined) {
  const info = await jsm.streams.info(STREAMS.deadLetters, { subjects_filter: filterOf(concern) });
  const counts = Object.values(info.state.subjects ?? {});
  const count = concern === undefined ? info.state.messages : counts.reduce((a, b) => a + b, 0);
  const maxAgeMs = (info.config.max_age ?? 0) / 1e6;
  return { count, firstSeq: info.state.first_seq, lastSeq: info.state.last_seq, maxAgeMs };
}

function headerPairs(m: StoredMsg): [string, string][] {
  const h = m.header;
  if (!h) return [];
  const pairs: [string, string][] = [];
  for (const k of h.keys()) for (const v of h.values(k)) pairs.push([k, v]);
  return pairs;
}

async function list(
  bus: Bus,
  args: Extract<DlqArgs, { command: 'list' }>,
  out: NodeJS.WritableStream,
): Promise<number> {
  const range = await deadLetterRange(bus.jsm, args.concern);
  const entries: DeadLetterEntry[] = [];
  for await (const m of deadLetters(bus.jsm, filterOf(args.concern), range.firstSeq, range.lastSeq))
    entries.push(parseDeadLetter(stored(m)));
  out.write(
    renderOutput(args.output, entries.map(deadLetterJson), () =>
      formatDeadLetterList(entries, { nowMs: Date.now(), concern: args.concern }),
    ),
  );
  return 0;
}

async function show(
  bus: Bus,
  args: Extract<DlqArgs, { command: 'show' }>,
  concerns: readonly WorkConcern[],
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const m = await getDeadLetter(bus.jsm, args.seq);
  if (!m) {
    err.write(`no dead letter ${args.seq} in ${STREAMS.deadLetters}\n`);
    return 1;
  }
  const { maxAgeMs } = await deadLetterRange(bus.jsm, undefined);
  const entry = parseDeadLetter(stored(m));
  const shown: ShownDeadLetter = {
    entry,
    headers: headerPairs(m),
    payload: payloadView(m.data),
    decodes: decodesNow(entry, m.data, [...concerns, ...INSPECT_ONLY]),
    verdict: redriveVerdict(entry, m.data, concerns),
    keptUntil: maxAgeMs > 0 ? new Date(m.time.getTime() + maxAgeMs).toISOString() : undefined,
  };
  out.write(renderOutput(args.output, showJson(shown), () => formatDeadLetter(shown)));
  return 0;
}

/** Re-drives one dead letter: publish to its work subject, and only once that is acknowledged, delete it. */
async function retryOne(
  bus: Bus,
  m: StoredMsg,
  concerns: readonly WorkConcern[],
  opts: { concern: string | undefined; dryRun: boolean },
): Promise<RetryResult> {
  const entry = parseDeadLetter(stored(m));
  if (opts.concern !== undefined && entry.concern !== opts.concern)
    return {
      seq: m.seq,
      outcome: 'refused',
      reason: `it is a dead letter of ${entry.concern}, not ${opts.concern}`,
    };
  const verdict = redriveVerdict(entry, m.data, concerns);
  if (!verdict.ok) return { seq: m.seq, outcome: 'refused', reason: verdict.reason };
  if (opts.dryRun) return { seq: m.seq, outcome: 'would-redrive', subject: verdict.subject };
  let ack: Awaited<ReturnType<Bus['js']['publish']>>;
  try {
    const h = natsHeaders();
    h.set(REDRIVEN_FROM_HEADER, `${STREAMS.deadLetters}:${m.seq}`);
    ack = await bus.js.publish(verdict.subject, m.data, {
      msgID: redriveMsgId(m.seq),
      expect: { streamName: STREAMS.work },
      headers: h,
      timeout: REQUEST_TIMEOUT_MS,
    });
  } catch (e) {
    return { seq: m.seq, outcome: 'failed', error: `publish to ${verdict.subject}: ${errorMessage(e)}` };
  }
  try {
    await bus.jsm.streams.deleteMessage(STREAMS.deadLetters, m.seq, false);
  } catch (e) {
    // Gone already (another run re-drove it meanwhile) is what a delete was for.
    const still = await getDeadLetter(bus.jsm, m.seq).catch(() => m);
    if (still !== null)
      return {
        seq: m.seq,
        outcome: 'failed',
        error:
          `published to ${verdict.subject} (WORK seq ${ack.seq}) but not deleted from DLQ: ${errorMessage(e)}; ` +
          'a retry publishes it again under the same message id (stored once within the duplicate window)',
      };
  }
  return {
    seq: m.seq,
    outcome: 'redriven',
    subject: verdict.subject,
    workSeq: ack.seq,
    duplicate: ack.duplicate,
  };
}

async function retry(
  bus: Bus,
  args: Extract<DlqArgs, { command: 'retry' }>,
  concerns: readonly WorkConcern[],
  out: NodeJS.WritableStream,
  err: NodeJS.WritableStream,
): Promise<number> {
  const results: RetryResult[] = [];
  const opts = { concern: args.concern, dryRun: args.dryRun };
  const report = (r: RetryResult, everyLine: boolean) => {
    results.push(r);
    // Data formats get one document at the end, not lines as they happen.
    if (args.output !== 'table') return;
    if (everyLine || r.outcome === 'refused' || r.outcome === 'failed')
      out.write(`${formatRetryResult(r)}\n`);
  };
  if (args.seqs !== 'all') {
    for (const seq of args.seqs) {
      const m = await getDeadLetter(bus.jsm, seq);
      if (!m) report({ seq, outcome: 'missing' }, true);
      else report(await retryOne(bus, m, concerns, opts), true);
    }
  } else {
    // Only what is there now: a re-driven message that fails again is dead-lettered anew, after
    // the last sequence read here, and is not picked up by this run.
    const range = await deadLetterRange(bus.jsm, args.concern);
    const everyLine = range.count < PROGRESS_ABOVE;
    let done = 0;
    let lastProgress = 0;
    for await (const m of deadLetters(bus.jsm, filterOf(args.concern), range.firstSeq, range.lastSeq)) {
      report(await retryOne(bus, m, concerns, opts), everyLine);
      done++;
      if (isProgressPoint(done, range.count)) {
        err.write(formatProgress(done, range.count, results, args.dryRun));
        lastProgress = done;
      }
    }
    if (!everyLine && lastProgress !== done)
      err.write(formatProgress(done, range.count, results, args.dryRun));
  }
  out.write(
    renderOutput(args.output, { dryRun: args.dryRun, ...tallyRetries(results), results }, () =>
      formatRetrySummary(results, args.dryRun),
    ),
  );
  return retryExitCode(results);
}

export async function runDlq(argv: string[]): Promise<void> {
  let loaded: LoadedConfig;
  let args: DlqArgs;
  try {
    loaded = loadConfig({ argv });
    args = parseDlqArgs(loaded.rest);
  } catch (e) {
    const message = e instanceof ConfigError ? e.message : errorMessage(e);
    process.stderr.write(`${message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  const connected = await connectOperatorBus(loaded, args, 'dlq', 'dlq');
  if (!connected) return;
  const { bus } = connected;
  try {
    const concerns = workConcerns(loaded.config);
    const { stdout, stderr } = process;
    process.exitCode =
      args.command === 'list'
        ? await list(bus, args, stdout)
        : args.command === 'show'
          ? await show(bus, args, concerns, stdout, stderr)
          : await retry(bus, args, concerns, stdout, stderr);
  } catch (e) {
    process.stderr.write(`dlq ${args.command}: ${errorMessage(e)}\n`);
    process.exitCode = 1;
  } finally {
    await bus.close();
  }
}
