// `switchyard nats-reloader`: the sidecar of deploy/nats's server that serves a renewed
// certificate without anyone acting. The nats-credentials CronJob renews the Secret
// switchyard-nats-tls; the kubelet updates the Pod's Secret volume within its sync period; this
// sees the new files and sends the server SIGHUP (what `nats-server --signal reload` sends), and
// the server serves the new certificate to new connections while the existing ones stay up.
//
// Polled, not watched, as the webhook-server's own certificate is (src/runtime/serving-certificate.ts):
// the kubelet swaps a `..data` symlink to a new timestamped directory, which inotify reports
// differently by runtime, and it syncs a changed Secret only about once a minute anyway. Reading
// through `..data` resolved once per poll reads every file from one version of the Secret, never
// a certificate of one version and a key of the next. The decision is certificate-reload.ts's.
//
// The signal crosses containers: the Pod shares one process namespace (`shareProcessNamespace`),
// both containers run as the same user, and the server writes its pid to its pid_file on a
// volume both mount.
import { readFile, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { z } from 'zod';
import { loadConfig } from '../config/load.ts';
import { type Clock, systemClock } from '../runtime/clock.ts';
import { createLogger } from '../runtime/logger.ts';
import {
  afterDecision,
  decideReload,
  initialState,
  parsePid,
  type ReloaderState,
  TLS_FILES,
  type TlsReading,
} from './certificate-reload.ts';

export const reloaderOptionsSchema = z.object({
  /** The mounted Secret (deploy/nats: /etc/nats-tls). */
  tlsDir: z.string().min(1).default('/etc/nats-tls'),
  /** The server's pid_file (deploy/nats's nats.conf). */
  pidFile: z.string().min(1).default('/var/run/nats/nats.pid'),
  /** Between polls: a few seconds against the kubelet's sync of about a minute. */
  intervalSeconds: z.coerce.number().positive().max(3600).default(5),
});
export type ReloaderOptions = z.infer<typeof reloaderOptionsSchema>;

/** Every file of the Secret as one version holds it: through `..data` resolved once, when the kubelet's layout is there. */
export async function readTlsDirectory(dir: string): Promise<TlsReading> {
  const base = await realpath(join(dir, '..data')).catch(() => dir);
  try {
    const [crt, key, ca] = await Promise.all(TLS_FILES.map((f) => readFile(join(base, f), 'utf8')));
    return {
      ok: true,
      files: { 'tls.crt': crt as string, 'tls.key': key as string, 'ca.crt': ca as string },
    };
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
}

/** SIGHUP to the pid in the server's pid_file; throws when the file or the process is not there. */
export async function signalReload(pidFile: string): Promise<number> {
  const pid = parsePid(await readFile(pidFile, 'utf8'));
  if (pid === undefined) throw new Error(`${pidFile} holds no pid`);
  process.kill(pid, 'SIGHUP');
  return pid;
}

export interface ReloaderDeps {
  log: Logger;
  clock?: Clock;
  read?: (dir: string) => Promise<TlsReading>;
  signal?: (pidFile: string) => Promise<number>;
}

/** Polls until `stop` aborts. */
export async function watchAndReload(
  options: ReloaderOptions,
  deps: ReloaderDeps,
  stop: AbortSignal,
): Promise<void> {
  const { log, clock = systemClock, read = readTlsDirectory, signal = signalReload } = deps;
  let state: ReloaderState = initialState(await read(options.tlsDir));
  log.info(
    {
      tlsDir: options.tlsDir,
      pidFile: options.pidFile,
      intervalSeconds: options.intervalSeconds,
      fingerprint: state.servedFingerprint,
    },
    'watching the NATS server certificate',
  );
  while (!stop.aborted) {
    await clock.sleep(options.intervalSeconds * 1000, stop);
    if (stop.aborted) break;
    const decision = decideReload(state, await read(options.tlsDir));
    let signalled = false;
    if (decision.kind === 'refuse')
      log.warn(
        { changed: decision.changed, reason: decision.reason, fingerprint: state.servedFingerprint },
        'certificate files changed but would not serve: no reload; the server keeps its certificate',
      );
    if (decision.kind === 'reload') {
      const fingerprint = { from: decision.from, to: decision.to };
      try {
        const pid = await signal(options.pidFile);
        signalled = true;
        log.info(
          { changed: decision.changed, fingerprint, notAfter: decision.notAfter, pid },
          'certificate files changed: reload sent to the NATS server',
        );
      } catch (err) {
        log.error(
          { err, changed: decision.changed, fingerprint, pidFile: options.pidFile },
          'certificate files changed but the reload signal failed; retrying at the next poll',
        );
      }
    }
    state = afterDecision(state, decision, signalled);
  }
}

/** `switchyard nats-reloader [--tls-dir=…] [--pid-file=…] [--interval-seconds=…]` (and `--log.level`). */
export async function runNatsReloader(argv: string[]): Promise<void> {
  const { config, rest } = loadConfig({ argv });
  const { values } = parseArgs({
    args: rest,
    options: {
      'tls-dir': { type: 'string' },
      'pid-file': { type: 'string' },
      'interval-seconds': { type: 'string' },
    },
    strict: true,
  });
  const options = reloaderOptionsSchema.parse({
    tlsDir: values['tls-dir'],
    pidFile: values['pid-file'],
    intervalSeconds: values['interval-seconds'],
  });
  const log = createLogger(config.log, 'nats-reloader');
  const stop = new AbortController();
  for (const s of ['SIGTERM', 'SIGINT'] as const) process.once(s, () => stop.abort());
  await watchAndReload(options, { log }, stop.signal);
  log.info('stopped');
}
