// The CA the bus's certificate chains to (`nats.tls.caFile`), as the instances handler carries it
// into every instance's NATS Secret: read again at each wake, so a new CA reaches the replicas
// without a restart of the handler.
//
// The file is the handler's own mount of a Secret (or a file an operator replaces), which the
// kubelet updates in place when the Secret changes. Reading a few kilobytes per wake is cheap next
// to the wake's own requests; the text is parsed only when it differs from the last read. The new
// text then changes the rendered NATS Secret, so the wake applies it (the applied-renderings memo
// compares whole renderings), and the kubelet updates the replicas' mount of that Secret in
// place. No rollout is needed: a replica's NATS client reads its CA file at every connect and
// reconnect (src/bus/tls.ts), and a CA matters only at a handshake.
//
// Fail closed, keep the last good: a file that cannot be read, or holds no certificate that
// parses (a writer caught half-way, a wrong key mounted), keeps the CA read before, with a
// warning, rather than rendering replicas that trust nothing or that dial without TLS. At start
// there is no CA before, so a bad file stops the start, as it always has.
import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { readCertificates } from '../../core/instances/certificate-facts.ts';

export class NatsCaFile {
  private readonly file: string;
  private readonly log: Pick<Logger, 'info' | 'warn'>;
  private readonly read: (file: string) => string;
  private last: string | undefined;

  /** `file` empty: the bus has no CA of its own, and replicas get none. Throws when a configured file is not a CA. */
  constructor(
    file: string,
    log: Pick<Logger, 'info' | 'warn'>,
    read: (file: string) => string = (f) => readFileSync(f, 'utf8'),
  ) {
    this.file = file;
    this.log = log;
    this.read = read;
    if (file === '') return;
    const text = read(file);
    const problem = problemOf(text);
    if (problem !== undefined) throw new Error(`nats.tls.caFile ${file} ${problem}`);
    this.last = text;
  }

  /** The CA as the file holds it now, or the last good one when it holds none that parses. */
  current(): string | undefined {
    if (this.file === '') return undefined;
    let text: string;
    try {
      text = this.read(this.file);
    } catch (err) {
      this.log.warn(
        { file: this.file, err: String(err) },
        'cannot read nats.tls.caFile; replicas keep the CA read before',
      );
      return this.last;
    }
    if (text === this.last) return this.last;
    const problem = problemOf(text);
    if (problem !== undefined) {
      this.log.warn(
        { file: this.file, problem },
        'nats.tls.caFile changed to no CA; replicas keep the CA read before',
      );
      return this.last;
    }
    this.last = text;
    this.log.info(
      { file: this.file },
      'nats.tls.caFile changed: each instance’s replicas get it at its next reconcile',
    );
    return text;
  }
}

/** Why `text` is no CA bundle, or undefined when it holds at least one certificate and every block parses. */
function problemOf(text: string): string | undefined {
  const certificates = readCertificates(text);
  if (certificates === undefined) return 'holds a certificate that does not parse';
  if (certificates.length === 0) return 'holds no PEM certificate';
  return undefined;
}
