import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkTlsFilesReadable, explainTlsFailure, natsClientTls } from './tls.ts';

const NONE = { caFile: '', certFile: '', keyFile: '' };
const PLAIN = ['nats://nats.switchyard.svc:4222'];

describe('natsClientTls', () => {
  it('leaves TLS to the server when nothing is configured and no URL says tls://', () => {
    expect(natsClientTls(NONE, PLAIN)).toBeUndefined();
    expect(natsClientTls(undefined, PLAIN)).toBeUndefined();
  });

  it('a configured CA requires TLS and verifies the server against that CA only', () => {
    expect(natsClientTls({ ...NONE, caFile: '/etc/nats/tls/ca.crt' }, PLAIN)).toEqual({
      caFile: '/etc/nats/tls/ca.crt',
    });
  });

  it('a tls:// URL, in any position of a cluster list, requires TLS verified against the system CAs', () => {
    expect(natsClientTls(NONE, ['nats://a:4222', 'TLS://b:4222'])).toEqual({});
  });

  it('a client certificate goes with its key, and requires TLS', () => {
    expect(natsClientTls({ caFile: '/ca', certFile: '/c', keyFile: '/k' }, PLAIN)).toEqual({
      caFile: '/ca',
      certFile: '/c',
      keyFile: '/k',
    });
    expect(() => natsClientTls({ ...NONE, certFile: '/c' }, PLAIN)).toThrow(
      /certFile and nats.tls.keyFile go together: certFile is set/,
    );
    expect(() => natsClientTls({ ...NONE, keyFile: '/k' }, PLAIN)).toThrow(/keyFile is set/);
  });
});

describe('checkTlsFilesReadable', () => {
  it('names the key and the file that is missing', () => {
    expect(() => checkTlsFilesReadable({ caFile: '/nonexistent/ca.crt' })).toThrow(
      'cannot read nats.tls.caFile /nonexistent/ca.crt: ENOENT',
    );
  });

  it('names a file it may not read (unless run as root, which reads anything)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-tls-'));
    const key = join(dir, 'tls.key');
    writeFileSync(key, 'x');
    chmodSync(key, 0o000);
    const check = () => checkTlsFilesReadable({ certFile: join(dir, 'tls.crt'), keyFile: key });
    // The certificate is checked first and is missing.
    expect(check).toThrow(/nats.tls.certFile .*tls.crt: ENOENT/);
    writeFileSync(join(dir, 'tls.crt'), 'x');
    if (process.getuid?.() === 0) expect(check).not.toThrow();
    else expect(check).toThrow(/nats.tls.keyFile .*tls.key: EACCES/);
  });

  it('accepts no TLS at all', () => {
    expect(() => checkTlsFilesReadable(undefined)).not.toThrow();
  });
});

describe('explainTlsFailure', () => {
  const refused = Object.assign(new Error('self-signed certificate in certificate chain'), {
    code: 'SELF_SIGNED_CERT_IN_CHAIN',
  });

  it('says which trust the server certificate failed, keeping the reason and the cause', () => {
    const err = explainTlsFailure(refused, { caFile: '/etc/nats/tls/ca.crt' }) as Error;
    expect(err.message).toMatch(
      /certificate was refused \(SELF_SIGNED_CERT_IN_CHAIN\): it must chain to nats.tls.caFile \/etc\/nats\/tls\/ca.crt .*self-signed/,
    );
    expect(err.cause).toBe(refused);
  });

  it('finds the code on a wrapped cause, and names the system CAs when no CA is configured', () => {
    const wrapped = new Error('connection failed', { cause: refused });
    expect((explainTlsFailure(wrapped, undefined) as Error).message).toMatch(/the system’s CAs/);
  });

  it('returns any other error as it is', () => {
    const other = Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
    expect(explainTlsFailure(other, { caFile: '/ca' })).toBe(other);
  });
});
