// Every process's logger: JSON lines for a collector (level names and ISO times, so a line reads
// without a decoder ring), or pretty lines when a person watches the terminal. `auto` decides by
// whether the stream is a terminal: a Pod's stdout is a pipe, `switchyard bus stats` at a shell
// is not.
import { createRequire } from 'node:module';
import { type DestinationStream, type Logger, pino } from 'pino';
import type { PrettyOptions } from 'pino-pretty';

export type LogFormat = 'auto' | 'json' | 'pretty';

export interface LoggerOptions {
  level: string;
  format: LogFormat;
  /** The stream's file descriptor: 1 for a process's log, 2 for a command whose stdout is its answer. */
  fd?: 1 | 2;
}

/** Whether a logger writing to `fd` prints pretty lines. */
export function printsPretty(format: LogFormat, fd: 1 | 2, isTerminal: (fd: number) => boolean): boolean {
  if (format === 'auto') return isTerminal(fd);
  return format === 'pretty';
}

const stdStreamIsTerminal = (fd: number): boolean =>
  Boolean(fd === 2 ? process.stderr.isTTY : process.stdout.isTTY);

/** The pino options every Switchyard logger shares; exported for tests that log into an array. */
export function loggerOptions(level: string, name: string) {
  return {
    level,
    name,
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
}

export function createLogger(opts: LoggerOptions, name: string): Logger {
  const fd = opts.fd ?? 1;
  const options = loggerOptions(opts.level, name);
  if (!printsPretty(opts.format, fd, stdStreamIsTerminal)) return pino(options, pino.destination(fd));
  return pino(options, prettyStream(fd));
}

// Loaded only for a terminal: a Pod never pays for the pretty printer's modules. Colours follow
// pino-pretty's default (a colour terminal, unless NO_COLOR says otherwise).
function prettyStream(fd: 1 | 2): DestinationStream {
  const require = createRequire(import.meta.url);
  const pretty = require('pino-pretty') as (opts: PrettyOptions) => DestinationStream;
  return pretty({
    destination: fd,
    sync: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
  });
}
