// `switchyard --help` and `switchyard <subcommand> --help`: what each subcommand does, its own
// arguments (an operator command's usage text, from its module, listing the options its parser
// takes: args.ts), and every configuration key it reads, as the schema describes it (the same
// keys for every process: config/keys.ts).
import { configKeys } from '../config/keys.ts';

/** One line per subcommand, in the order `switchyard --help` lists them. */
export const SUMMARIES: Readonly<Record<string, string>> = {
  demo: 'start a local cluster, install Switchyard, move targets under load and show it (scripts/demo.sh)',
  watch: 'the watchers: record every change of the kinds Switchyard reads on the bus',
  bus: 'the bus: apply its topology (setup), show streams and consumers (stats), render NATS users (authorization)',
  admission: 'the admission webhook for Switchyard resources',
  router: 'the router: turn recorded changes into each concern’s work',
  assign: 'the assign handler: decide which instance serves each target',
  'lease-aggregate':
    'the lease-aggregate handler: read the replicas’ served-set Leases into each instance’s status',
  handover: 'the handover handler: repoint a target once its new instance serves it',
  'config-status': 'the config-status handler: each config’s Validated condition and phase',
  instances: 'the instances handler: render each ConversionWebhookServer’s Deployment, Service and access',
  'webhook-server': 'a webhook-server replica: answer the apiserver’s ConversionReviews',
  'nats-credentials': 'make the NATS users’ passwords and the bundled server’s certificate (a Job)',
  'nats-reloader': 'beside a NATS server: reload it when its certificate or users change',
  'nats-monitor-gate': 'beside a NATS server: its monitoring port behind credentials',
  simulate: 'what a pool change would move, without making it',
  explain: 'why a target is where it is, from the bus',
  replay: 'take recorded decisions again and say where they differ',
  dlq: 'list, show and retry dead-lettered messages',
};

/** The subcommands that take arguments of their own, and the module whose usage text says them. */
const OWN_USAGE: Readonly<Record<string, () => Promise<{ USAGE: string }>>> = {
  bus: () => import('./bus.ts'),
  dlq: () => import('./dlq.ts'),
  explain: () => import('./explain.ts'),
  replay: () => import('./replay.ts'),
  simulate: () => import('./simulate.ts'),
};

export function overallHelp(names: readonly string[]): string {
  const width = Math.max(...names.map((n) => n.length));
  return [
    'usage: switchyard <subcommand> [args] [--<key>=<value>…]',
    '       switchyard <subcommand> --help | --version',
    '',
    'Subcommands:',
    ...names.map((n) => `  ${n.padEnd(width)}  ${SUMMARIES[n] ?? ''}`),
    '',
    'Every subcommand reads the same configuration, in increasing precedence: the defaults, a file',
    '(--config=<path> or SWITCHYARD_CONFIG), SWITCHYARD_* environment variables, --<key>=<value> flags.',
    '`switchyard <subcommand> --help` lists every key.',
    '',
  ].join('\n');
}

/** Every key: its flag, type, default and environment variable, then the schema's description. */
export function configurationHelp(): string {
  const lines = configKeys.flatMap((k) => [
    `  ${k.flag}=<${k.type}>  (default ${JSON.stringify(k.default)}; ${k.env})`,
    ...wrap(k.description, 96).map((l) => `      ${l}`),
  ]);
  return ['Configuration (every subcommand reads it):', ...lines, ''].join('\n');
}

export async function subcommandHelp(name: string): Promise<string> {
  const own = OWN_USAGE[name];
  const usage = own ? (await own()).USAGE : `usage: switchyard ${name} [--<key>=<value>…]\n`;
  return [`${usage.trimEnd()}`, '', `  ${SUMMARIES[name] ?? ''}`, '', configurationHelp()].join('\n');
}

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line !== '' && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  if (line !== '') lines.push(line);
  return lines;
}
