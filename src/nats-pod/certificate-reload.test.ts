import { beforeAll, describe, expect, it } from 'vitest';
import { x509Issuer } from '../tls/x509-issuer.ts';
import {
  afterDecision,
  checkServingPair,
  decideReload,
  initialState,
  parsePid,
  type ReloaderState,
  type TlsFileName,
  type TlsReading,
} from './certificate-reload.ts';

type Files = Record<TlsFileName, string>;
const issuer = x509Issuer();
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 0, 1);
let first: Files;
let renewed: Files;

async function pairFrom(ca: { certPem: string; keyPem: string }): Promise<Files> {
  const leaf = await issuer.issueServing({
    ca,
    dnsNames: ['nats.switchyard-system.svc'],
    notBeforeMs: NOW,
    notAfterMs: NOW + 365 * DAY,
  });
  return { 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem, 'ca.crt': ca.certPem };
}

beforeAll(async () => {
  const ca = await issuer.createCa({
    commonName: 'test NATS CA',
    notBeforeMs: NOW,
    notAfterMs: NOW + 3650 * DAY,
  });
  first = await pairFrom(ca);
  renewed = await pairFrom(ca);
});

const read = (files: Files): TlsReading => ({ ok: true, files });

describe('checkServingPair', () => {
  it('accepts a complete pair whose key is the certificate’s, and names its fingerprint', () => {
    const check = checkServingPair(first);
    expect(check).toMatchObject({
      ok: true,
      fingerprint: expect.stringMatching(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/),
    });
  });

  it.each([
    [
      'a key of another certificate',
      () => ({ ...renewed, 'tls.key': first['tls.key'] }),
      /not the key of the certificate/,
    ],
    [
      'a certificate cut short',
      () => ({ ...first, 'tls.crt': first['tls.crt'].slice(0, 200) }),
      /tls\.crt: a PEM block is incomplete/,
    ],
    ['an empty certificate file', () => ({ ...first, 'tls.crt': '' }), /tls\.crt: no certificate/],
    ['a key cut short', () => ({ ...first, 'tls.key': first['tls.key'].slice(0, 60) }), /tls\.key/],
    [
      'a CA file cut short',
      () => ({ ...first, 'ca.crt': first['ca.crt'].slice(0, 100) }),
      /ca\.crt: a PEM block is incomplete/,
    ],
  ])('refuses %s: the server would keep its old pair', (_what, files, reason) => {
    const check = checkServingPair(files());
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.reason).toMatch(reason);
  });
});

describe('decideReload', () => {
  let start: ReloaderState;
  beforeAll(() => {
    start = initialState(read(first));
  });

  it('starts from what the server loaded at its start, and signals nothing while the files stay', () => {
    expect(start.servedFingerprint).toBe((checkServingPair(first) as { fingerprint: string }).fingerprint);
    expect(decideReload(start, read(first))).toEqual({ kind: 'unchanged' });
  });

  it('signals a renewed pair, naming what changed and the fingerprints old → new', () => {
    const decision = decideReload(start, read(renewed));
    expect(decision).toMatchObject({
      kind: 'reload',
      changed: ['tls.crt', 'tls.key'],
      from: start.servedFingerprint,
      to: (checkServingPair(renewed) as { fingerprint: string }).fingerprint,
    });
    const after = afterDecision(start, decision, true);
    expect(after.servedFingerprint).not.toBe(start.servedFingerprint);
    expect(decideReload(after, read(renewed))).toEqual({ kind: 'unchanged' });
  });

  it('signals a new CA file alone too: the server re-reads all three', () => {
    const decision = decideReload(
      start,
      read({ ...first, 'ca.crt': `${first['ca.crt']}${renewed['tls.crt']}` }),
    );
    expect(decision).toMatchObject({ kind: 'reload', changed: ['ca.crt'] });
  });

  it('never signals a mismatched pair, and judges it once until the files change again', () => {
    const mismatched = read({ ...renewed, 'tls.key': first['tls.key'] });
    const decision = decideReload(start, mismatched);
    expect(decision).toMatchObject({
      kind: 'refuse',
      changed: ['tls.crt'],
      reason: expect.stringMatching(/not the key/),
    });
    const refused = afterDecision(start, decision, false);
    expect(decideReload(refused, mismatched)).toEqual({ kind: 'still-refused' });
    // The kubelet's next sync completes the pair: now it is signalled.
    expect(decideReload(refused, read(renewed))).toMatchObject({ kind: 'reload' });
  });

  it('never signals an unreadable directory (a file missing mid-swap)', () => {
    const unreadable: TlsReading = { ok: false, reason: 'ENOENT: tls.key' };
    const decision = decideReload(start, unreadable);
    expect(decision).toMatchObject({ kind: 'refuse', reason: 'ENOENT: tls.key' });
    expect(decideReload(afterDecision(start, decision, false), unreadable)).toEqual({
      kind: 'still-refused',
    });
  });

  it('keeps the old state when the signal failed, so the next poll signals again', () => {
    const decision = decideReload(start, read(renewed));
    const after = afterDecision(start, decision, false);
    expect(after).toEqual(start);
    expect(decideReload(after, read(renewed))).toMatchObject({ kind: 'reload' });
  });

  it('after an unreadable start, signals the first pair that serves', () => {
    const empty = initialState({ ok: false, reason: 'ENOENT' });
    expect(decideReload(empty, read(first))).toMatchObject({ kind: 'reload', from: undefined });
  });
});

describe('parsePid', () => {
  it.each([
    ['1234\n', 1234],
    ['  7 ', 7],
    ['', undefined],
    ['0', undefined],
    ['-5', undefined],
    ['12ab', undefined],
  ])('%j → %s', (text, pid) => {
    expect(parsePid(text)).toBe(pid);
  });
});
