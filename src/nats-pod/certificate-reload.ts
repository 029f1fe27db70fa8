// Whether the NATS server should reload its TLS files: the decision of the reloader sidecar in
// deploy/nats's Pod (reloader.ts does the reading and the signalling).
//
// nats-server re-reads its certificate, key and CA files only on a configuration reload, and a
// reload it cannot apply (a key that does not match the certificate, half a PEM) is refused by the
// server, which keeps the old pair: harmless, but it leaves the renewal unserved until the next
// change. So the sidecar signals only for a reading whose pair would serve: every file present,
// each PEM complete and parsed, the key the certificate's. A reading judged unfit is remembered
// by its content and judged again only once the files change, so a bad Secret is logged once,
// not every poll.
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';

/** The files of the server's Secret (`switchyard-nats-tls`, mounted at /etc/nats-tls). */
export const TLS_FILES = ['tls.crt', 'tls.key', 'ca.crt'] as const;
export type TlsFileName = (typeof TLS_FILES)[number];

/** One reading of the mounted directory: every file's content, or why one could not be read. */
export type TlsReading =
  | { ok: true; files: Readonly<Record<TlsFileName, string>> }
  | { ok: false; reason: string };

/** What the server loads from a reading: the leaf's SHA-256 fingerprint, or why it would not serve. */
export type PairCheck = { ok: true; fingerprint: string; notAfter: string } | { ok: false; reason: string };

export interface ReloaderState {
  /** Each file's hash as the server was last told to load it (or loaded it at its start). */
  served: Readonly<Record<TlsFileName, string>> | undefined;
  /** The served leaf's fingerprint. */
  servedFingerprint: string | undefined;
  /** The key of a reading already refused: not judged, nor logged, again until the files change. */
  refused: string | undefined;
}

export type ReloadDecision =
  /** The files are what the server serves. */
  | { kind: 'unchanged' }
  /** The same unfit reading as the last poll. */
  | { kind: 'still-refused' }
  /** Changed, but a reload would not serve it: no signal. */
  | { kind: 'refuse'; key: string; changed: TlsFileName[]; reason: string }
  /** Changed, and the new pair serves: signal a reload. */
  | {
      kind: 'reload';
      hashes: Record<TlsFileName, string>;
      changed: TlsFileName[];
      from: string | undefined;
      to: string;
      notAfter: string;
    };

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g;
const PEM_BEGIN = /-----BEGIN [A-Z0-9 ]+-----/g;

/** Every complete PEM certificate in `text`; undefined when a block is cut short (a half-written file). */
function certificateBlocks(text: string): string[] | undefined {
  const complete = [...text.matchAll(PEM_BLOCK)];
  if (complete.length !== (text.match(PEM_BEGIN) ?? []).length) return undefined;
  return complete.filter((m) => m[1] === 'CERTIFICATE').map((m) => m[0]);
}

function parseCertificates(text: string, file: TlsFileName): X509Certificate[] | string {
  const blocks = certificateBlocks(text);
  if (blocks === undefined) return `${file}: a PEM block is incomplete`;
  if (blocks.length === 0) return `${file}: no certificate`;
  try {
    return blocks.map((b) => new X509Certificate(b));
  } catch (err) {
    return `${file}: ${(err as Error).message}`;
  }
}

/** Whether the files would serve: complete, parsed, and the key the certificate's. */
export function checkServingPair(files: Readonly<Record<TlsFileName, string>>): PairCheck {
  const chain = parseCertificates(files['tls.crt'], 'tls.crt');
  if (typeof chain === 'string') return { ok: false, reason: chain };
  const ca = parseCertificates(files['ca.crt'], 'ca.crt');
  if (typeof ca === 'string') return { ok: false, reason: ca };
  const [leaf] = chain as [X509Certificate];
  let key: ReturnType<typeof createPrivateKey>;
  try {
    key = createPrivateKey(files['tls.key']);
  } catch (err) {
    return { ok: false, reason: `tls.key: ${(err as Error).message}` };
  }
  if (!leaf.checkPrivateKey(key))
    return { ok: false, reason: 'tls.key is not the key of the certificate in tls.crt' };
  return { ok: true, fingerprint: leaf.fingerprint256, notAfter: new Date(leaf.validTo).toISOString() };
}

export function hashesOf(files: Readonly<Record<TlsFileName, string>>): Record<TlsFileName, string> {
  const hash = (text: string) => createHash('sha256').update(text).digest('hex');
  return {
    'tls.crt': hash(files['tls.crt']),
    'tls.key': hash(files['tls.key']),
    'ca.crt': hash(files['ca.crt']),
  };
}

/** One key for a reading: its files' hashes, or its read error. */
function keyOf(reading: TlsReading, hashes: Record<TlsFileName, string> | undefined): string {
  return hashes
    ? TLS_FILES.map((f) => hashes[f]).join(':')
    : `unreadable: ${reading.ok ? '' : reading.reason}`;
}

/**
 * The state at the sidecar's start: the server started from the same mounted files moments
 * before, so what the directory holds is what it serves. An unfit first reading leaves nothing
 * served, so the first fit one is signalled.
 */
export function initialState(reading: TlsReading): ReloaderState {
  if (!reading.ok) return { served: undefined, servedFingerprint: undefined, refused: undefined };
  const check = checkServingPair(reading.files);
  return {
    served: hashesOf(reading.files),
    servedFingerprint: check.ok ? check.fingerprint : undefined,
    refused: undefined,
  };
}

export function decideReload(state: ReloaderState, reading: TlsReading): ReloadDecision {
  const hashes = reading.ok ? hashesOf(reading.files) : undefined;
  if (hashes && state.served && TLS_FILES.every((f) => hashes[f] === state.served?.[f]))
    return { kind: 'unchanged' };
  const key = keyOf(reading, hashes);
  if (key === state.refused) return { kind: 'still-refused' };
  const changed = hashes ? TLS_FILES.filter((f) => hashes[f] !== state.served?.[f]) : [];
  if (!reading.ok) return { kind: 'refuse', key, changed, reason: reading.reason };
  const check = checkServingPair(reading.files);
  if (!check.ok) return { kind: 'refuse', key, changed, reason: check.reason };
  return {
    kind: 'reload',
    hashes: hashes as Record<TlsFileName, string>,
    changed,
    from: state.servedFingerprint,
    to: check.fingerprint,
    notAfter: check.notAfter,
  };
}

/**
 * The state after acting on `decision`; `signalled` says whether the reload signal reached the
 * server (a failed signal keeps the old state, so the next poll tries again).
 */
export function afterDecision(
  state: ReloaderState,
  decision: ReloadDecision,
  signalled: boolean,
): ReloaderState {
  switch (decision.kind) {
    case 'unchanged':
      return { ...state, refused: undefined };
    case 'still-refused':
      return state;
    case 'refuse':
      return { ...state, refused: decision.key };
    case 'reload':
      return signalled
        ? { served: decision.hashes, servedFingerprint: decision.to, refused: undefined }
        : state;
  }
}

/** The server's pid from its pid_file's text; undefined when it is not one. */
export function parsePid(text: string): number | undefined {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) return undefined;
  const pid = Number(trimmed);
  return pid > 0 && Number.isSafeInteger(pid) ? pid : undefined;
}
