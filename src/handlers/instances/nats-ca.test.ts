import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { x509Issuer } from '../../tls/x509-issuer.ts';
import { NatsCaFile } from './nats-ca.ts';

let caA = '';
let caB = '';
let dir = '';

beforeAll(async () => {
  const issuer = x509Issuer();
  const validity = { notBeforeMs: Date.now() - 60_000, notAfterMs: Date.now() + 3_600_000 };
  caA = (await issuer.createCa({ commonName: 'bus CA A', ...validity })).certPem;
  caB = (await issuer.createCa({ commonName: 'bus CA B', ...validity })).certPem;
});

afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = '';
});

function caFile(text: string): string {
  dir = mkdtempSync(join(tmpdir(), 'nats-ca-'));
  const file = join(dir, 'ca.crt');
  writeFileSync(file, text);
  return file;
}

function recordingLog() {
  const lines: { level: string; msg: string }[] = [];
  return {
    lines,
    log: {
      info: (_o: unknown, msg: string) => lines.push({ level: 'info', msg }),
      warn: (_o: unknown, msg: string) => lines.push({ level: 'warn', msg }),
    } as unknown as Pick<Logger, 'info' | 'warn'>,
  };
}

describe('NatsCaFile', () => {
  it('without a file: no CA, and nothing is read', () => {
    const ca = new NatsCaFile('', recordingLog().log, () => {
      throw new Error('read');
    });
    expect(ca.current()).toBeUndefined();
  });

  it('a new CA in the file is what the next wake renders, without a restart', () => {
    const file = caFile(caA);
    const { log, lines } = recordingLog();
    const ca = new NatsCaFile(file, log);
    expect(ca.current()).toBe(caA);
    writeFileSync(file, caB);
    expect(ca.current(), 'a CA read only at start would reach the replicas only on a restart').toBe(caB);
    expect(lines.filter((l) => l.level === 'info')).toHaveLength(1);
  });

  it('reads the file at every wake, and says nothing while it is unchanged', () => {
    let reads = 0;
    const { log, lines } = recordingLog();
    const ca = new NatsCaFile('/ca.crt', log, () => {
      reads++;
      return caA;
    });
    for (let i = 0; i < 3; i++) expect(ca.current()).toBe(caA);
    expect(reads).toBe(4);
    expect(lines).toEqual([]);
  });

  it.each([
    ['is removed', (file: string) => rmSync(file)],
    ['is emptied (a writer caught half-way)', (file: string) => writeFileSync(file, '')],
    [
      'holds a block that does not parse',
      (file: string) =>
        writeFileSync(file, '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n'),
    ],
  ])('keeps the last good CA when the file %s, and takes the next good one', (_what, spoil) => {
    const file = caFile(caA);
    const { log, lines } = recordingLog();
    const ca = new NatsCaFile(file, log);
    spoil(file);
    expect(ca.current(), 'replicas rendered with no CA would trust nothing, or dial without TLS').toBe(caA);
    expect(lines.map((l) => l.level)).toEqual(['warn']);
    writeFileSync(file, caB);
    expect(ca.current()).toBe(caB);
  });

  it.each([
    ['a missing file', () => join(tmpdir(), `missing-${process.pid}`, 'ca.crt'), /ENOENT/],
    ['a file with no certificate', () => caFile('password\n'), /holds no PEM certificate/],
  ])('stops the start on %s: there is no CA before it to keep', (_what, path, message) => {
    expect(() => new NatsCaFile(path(), recordingLog().log)).toThrow(message);
  });
});
