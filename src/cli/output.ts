// One `-o` for every operator command whose answer is data: `table` (the command's own text, the
// default), `json` or `yaml`, spelled as kubectl takes it (`-o json`, `-o=json`, `-ojson`,
// `--output json`, `--output=json`).
import { stringify } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

function formatOf(flag: string, value: string | undefined): OutputFormat {
  if ((OUTPUT_FORMATS as readonly string[]).includes(value ?? '')) return value as OutputFormat;
  throw new Error(
    `${flag} takes ${OUTPUT_FORMATS.join(', ')}, got ${value === undefined ? 'nothing' : `"${value}"`}`,
  );
}

/**
 * The output flag at `args[i]`, and how many arguments it took (2 when its value is the next one);
 * undefined when `args[i]` is not one. Throws on a format no command prints.
 */
export function readOutputFlag(
  args: readonly string[],
  i: number,
): { format: OutputFormat; used: 1 | 2 } | undefined {
  const arg = args[i] as string;
  if (arg === '-o' || arg === '--output') return { format: formatOf(arg, args[i + 1]), used: 2 };
  const joined = /^(-o|--output)=(.*)$/.exec(arg) ?? /^(-o)(\w+)$/.exec(arg);
  if (joined) return { format: formatOf(joined[1] as string, joined[2]), used: 1 };
  return undefined;
}

/** The answer as asked: the data as JSON or YAML, or the command's own table. */
export function renderOutput(format: OutputFormat, data: unknown, table: () => string): string {
  if (format === 'json') return `${JSON.stringify(data, null, 2)}\n`;
  if (format === 'yaml') return stringify(data, { lineWidth: 0 });
  return table();
}
