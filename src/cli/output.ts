// One output format for every operator command whose answer is data: `table` (the command's own
// text, the default), `json` or `yaml`; read by `-o` (args.ts, OUTPUT_OPTIONS).
import { stringify } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The answer as asked: the data as JSON or YAML, or the command's own table. */
export function renderOutput(format: OutputFormat, data: unknown, table: () => string): string {
  if (format === 'json') return `${JSON.stringify(data, null, 2)}\n`;
  if (format === 'yaml') return stringify(data, { lineWidth: 0 });
  return table();
}
