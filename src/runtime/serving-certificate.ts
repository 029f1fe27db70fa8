// A serving certificate and key read from files (a mounted Secret) and re-read while the
// process runs, so a rotated certificate is served without a restart.
//
// Polled, not watched: the kubelet updates a Secret volume by swapping a `..data` symlink,
// which inotify reports on the directory in ways that differ by runtime, and the kubelet itself
// only syncs a changed Secret within about a minute. Reading two small files every few seconds
// costs nothing and sees every kind of update. A new pair is applied only if it forms a valid
// TLS context together (a half-written update, or a key that does not match its certificate,
// keeps the last good pair serving).
import { readFile } from 'node:fs/promises';
import { createSecureContext } from 'node:tls';

export interface CertificateFiles {
  certFile: string;
  keyFile: string;
}

export interface CertificatePair {
  cert: string;
  key: string;
}

export async function readCertificatePair(files: CertificateFiles): Promise<CertificatePair> {
  const [cert, key] = await Promise.all([readFile(files.certFile, 'utf8'), readFile(files.keyFile, 'utf8')]);
  createSecureContext({ cert, key }); // throws on a pair that cannot serve
  return { cert, key };
}

export interface ReloadLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Re-reads the files every `intervalMs` and hands each new valid pair to `apply`. */
export class CertificateReloader {
  private current: CertificatePair;
  private timer: NodeJS.Timeout | undefined;
  private readonly options: {
    files: CertificateFiles;
    intervalMs: number;
    apply: (pair: CertificatePair) => void;
    log: ReloadLog;
  };

  constructor(initial: CertificatePair, options: CertificateReloader['options']) {
    this.current = initial;
    this.options = options;
  }

  start(): void {
    this.timer = setInterval(() => void this.check(), this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** One poll; public so a test can run it without waiting for the interval. */
  async check(): Promise<void> {
    const { files, apply, log } = this.options;
    let next: CertificatePair;
    try {
      next = await readCertificatePair(files);
    } catch (err) {
      log.warn(
        { err, ...files },
        'serving certificate files unreadable or invalid; keeping the last good pair',
      );
      return;
    }
    if (next.cert === this.current.cert && next.key === this.current.key) return;
    apply(next);
    this.current = next;
    log.info(files, 'serving certificate reloaded');
  }
}
