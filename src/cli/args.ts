// The operator commands' own arguments, read by one parser: node's parseArgs, strict, so that a
// mistyped flag is bad usage (exit 2) rather than silently ignored. Configuration flags
// (`--<section>.<key>=…`, `--config`) are taken out before (config/load.ts); what is left is
// parsed here. Each option carries its line of help, and a command's usage text lists the very
// options its parser takes, so --help and the parser cannot drift apart.
import { type ParseArgsOptionDescriptor, parseArgs } from 'node:util';
import { DEFAULT_OPERATOR_NAMESPACE } from '../api/constants.ts';
import { OUTPUT_FORMATS } from './output.ts';

/** An option as parseArgs takes it, with what --help says about it. */
export interface CommandOption extends ParseArgsOptionDescriptor {
  /** One line of help. */
  description: string;
  /** A string option's value as help names it (`<kind>/<name>`), when `<option name>` would not say it. */
  valueName?: string;
  /** Every value it takes; any other is bad usage. */
  choices?: readonly string[];
}

export type CommandOptions = Readonly<Record<string, CommandOption>>;

type ValueOf<O extends CommandOption> = O['type'] extends 'boolean'
  ? boolean
  : O extends { choices: readonly (infer C extends string)[] }
    ? C
    : string;

/** The options given, by name; one not given is undefined. */
export type OptionValues<O extends CommandOptions> = {
  -readonly [K in keyof O]?: O[K] extends { multiple: true } ? ValueOf<O[K]>[] : ValueOf<O[K]>;
};

export interface ParsedArgs<O extends CommandOptions> {
  values: OptionValues<O>;
  positionals: string[];
}

/** Bad usage, said as one line that names the subcommand: the command prints its usage after it and exits 2. */
export class UsageError extends Error {
  constructor(command: string, problem: string) {
    super(`${command}: ${problem}`);
    this.name = 'UsageError';
  }
}

/** `-o`/`--output`, as kubectl spells it, for every operator command whose answer is data. */
export const OUTPUT_OPTIONS = {
  output: {
    type: 'string',
    short: 'o',
    choices: OUTPUT_FORMATS,
    description: 'the answer as a table (the default), or as data for scripts',
  },
} as const satisfies CommandOptions;

export const DEFAULT_NAMESPACE = DEFAULT_OPERATOR_NAMESPACE;

/** kubectl's flags, for the commands that find the bus from the cluster when no --nats.* flag names it. */
export const CLUSTER_OPTIONS = {
  kubeconfig: {
    type: 'string',
    valueName: '<file>',
    description:
      'the kubeconfig that finds the bus unless --nats.url or --nats.user do (default KUBECONFIG, ~/.kube/config)',
  },
  context: {
    type: 'string',
    valueName: '<name>',
    description: "the kubeconfig's context (default its current one)",
  },
  namespace: {
    type: 'string',
    short: 'n',
    valueName: '<name>',
    description: `the namespace Switchyard runs in (default ${DEFAULT_NAMESPACE})`,
  },
} as const satisfies CommandOptions;

export type ClusterFlags = OptionValues<typeof CLUSTER_OPTIONS>;

/** The cluster flags out of a command's values: each is undefined when not given. */
export function clusterFlagsOf(values: ClusterFlags): ClusterFlags {
  return { kubeconfig: values.kubeconfig, context: values.context, namespace: values.namespace };
}

/**
 * `args` read as `options` say, for `command` (named in every refusal, e.g. `dlq retry`):
 * positionals only where the command takes them; a string option's value neither empty nor,
 * where it has choices, another one. Throws a UsageError.
 */
export function parseCommandArgs<const O extends CommandOptions>(
  command: string,
  args: readonly string[],
  options: O,
  { positionals = false }: { positionals?: boolean } = {},
): ParsedArgs<O> {
  const config = {
    args: kubectlShortValues(args),
    options,
    allowPositionals: positionals,
    tokens: true,
  } as const;
  const parsed = strictParse(command, config);
  const problem = firstProblem(parsed.tokens, options, positionals);
  if (problem !== undefined) throw new UsageError(command, problem);
  return { values: parsed.values as OptionValues<O>, positionals: parsed.positionals };
}

/** kubectl takes `-o=json` as `-o json`, where parseArgs would give `-o` the value `=json`. */
function kubectlShortValues(args: readonly string[]): string[] {
  const end = args.includes('--') ? args.indexOf('--') : args.length;
  return args.flatMap((arg, i) => (i < end && /^-\w=/.test(arg) ? [arg.slice(0, 2), arg.slice(3)] : [arg]));
}

interface ParseConfig {
  args: string[];
  options: CommandOptions;
  allowPositionals: boolean;
  tokens: true;
}

type Token =
  | {
      kind: 'option';
      name: string;
      rawName: string;
      value?: string | undefined;
      inlineValue?: boolean | undefined;
    }
  | { kind: 'positional'; value: string }
  | { kind: 'option-terminator' };

/**
 * parseArgs, strict. What it refuses is said as a lenient parse of the same arguments shows it:
 * with the option as typed, where parseArgs' own message names both its spellings.
 */
function strictParse(
  command: string,
  config: ParseConfig,
): { values: object; positionals: string[]; tokens: Token[] } {
  try {
    return parseArgs({ ...config, strict: true });
  } catch (err) {
    const { tokens } = parseArgs({ ...config, strict: false, allowPositionals: true });
    const problem = firstProblem(tokens, config.options, config.allowPositionals);
    // parseArgs' own words only for a rule firstProblem does not know (one a later Node adds).
    throw new UsageError(command, problem ?? (err as Error).message);
  }
}

/** The first argument the command does not take as given, said with that argument. */
function firstProblem(
  tokens: readonly Token[],
  options: CommandOptions,
  positionals: boolean,
): string | undefined {
  for (const token of tokens) {
    const problem =
      token.kind === 'option'
        ? optionProblem(token, options[token.name])
        : token.kind === 'positional' && !positionals
          ? `unexpected argument ${token.value}`
          : undefined;
    if (problem !== undefined) return problem;
  }
  return undefined;
}

type OptionToken = Extract<Token, { kind: 'option' }>;

function optionProblem(token: OptionToken, option: CommandOption | undefined): string | undefined {
  const flag = token.rawName;
  if (!option) return `unknown argument ${flag}`;
  if (option.type === 'boolean') return token.value === undefined ? undefined : `${flag} takes no value`;
  const value = givenValue(token);
  if (option.choices && !option.choices.includes(value))
    return `${flag} takes ${option.choices.join(', ')}, got ${value === '' ? 'nothing' : `"${value}"`}`;
  return value === '' ? `${flag} needs a value` : undefined;
}

/** A string option's value, '' for none: in `-o --all`, -o forgot its value, --all is not it. */
function givenValue({ value, inlineValue }: OptionToken): string {
  if (value === undefined || (!inlineValue && /^-./.test(value))) return '';
  return value;
}

/** `-o, --output=table|json|yaml` and `    --all`: an option as its help names it. */
function optionSynopsis(name: string, option: CommandOption): string {
  const short = option.short ? `-${option.short}, ` : '    ';
  const value =
    option.type === 'boolean' ? '' : `=${option.choices?.join('|') ?? option.valueName ?? `<${name}>`}`;
  return `${short}--${name}${value}${option.multiple ? '…' : ''}`;
}

/** A command's usage: its synopsis and what it does (`head`), then every option its parser takes. */
export function usageText(head: string, options: CommandOptions, title = 'Options'): string {
  const rows = Object.entries(options).map(([name, o]) => [optionSynopsis(name, o), o.description] as const);
  const width = Math.max(...rows.map(([synopsis]) => synopsis.length));
  const lines = rows.map(([synopsis, description]) => `  ${synopsis.padEnd(width)}  ${description}`);
  return `${head.trimEnd()}\n\n${title}:\n${lines.join('\n')}\n`;
}
