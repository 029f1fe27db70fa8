// TLS to NATS, as the client takes it (`nats.tls.*`, docs/bus.md “TLS to NATS”).
//
// The server sends its INFO in clear and the client upgrades the connection (nats-server's default;
// `handshake_first` would refuse every client that does not start with TLS, so it is not used).
// The client always verifies the server: its certificate must chain to nats.tls.caFile (the
// system's CAs without one) and carry the host name or IP address it was dialled by; no option
// turns that off. The files are read by the client at every connect and reconnect, so a rotated
// CA bundle or client certificate is picked up without a restart; they are checked once here at
// start so a missing or unreadable file is named at once instead of failing every reconnect.
import { accessSync, constants } from 'node:fs';

/** `nats.tls` of the configuration: paths, empty when unset. */
export interface NatsTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** What `connect()` of @nats-io/transport-node takes as `tls`; absent: the server decides. */
export interface NatsClientTls {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  /** The name the certificate must carry when it differs from the host dialled (a forwarded port). */
  servername?: string;
}

/**
 * The client's `tls` option. TLS is required (a server without it is refused) when a CA or a
 * client certificate is configured or a URL says `tls://`; otherwise the client upgrades only when
 * the server asks for it, and then verifies against the system's CAs.
 */
export function natsClientTls(
  files: NatsTlsFiles | undefined,
  servers: readonly string[],
): NatsClientTls | undefined {
  const { caFile = '', certFile = '', keyFile = '' } = files ?? {};
  if ((certFile === '') !== (keyFile === ''))
    throw new Error(
      `nats.tls.certFile and nats.tls.keyFile go together: ${certFile ? 'certFile' : 'keyFile'} is set, the other is empty`,
    );
  const urlRequiresTls = servers.some((s) => s.trim().toLowerCase().startsWith('tls://'));
  if (!caFile && !certFile && !urlRequiresTls) return undefined;
  return {
    ...(caFile ? { caFile } : {}),
    ...(certFile ? { certFile, keyFile } : {}),
  };
}

/** Fails, naming the key and the file, when a configured file cannot be read. */
export function checkTlsFilesReadable(tls: NatsClientTls | undefined): void {
  const files = [
    ['nats.tls.caFile', tls?.caFile],
    ['nats.tls.certFile', tls?.certFile],
    ['nats.tls.keyFile', tls?.keyFile],
  ] as const;
  for (const [key, file] of files) {
    if (!file) continue;
    try {
      accessSync(file, constants.R_OK);
    } catch (err) {
      throw new Error(`cannot read ${key} ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
}

/** Node's codes for a server certificate the client does not trust or that names another host. */
const VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_SIGNATURE_FAILURE',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/**
 * A connect failure said plainly when it is the server's certificate that was refused (the
 * client's own message is the bare OpenSSL reason); any other error is returned as it is.
 */
export function explainTlsFailure(err: unknown, tls: NatsClientTls | undefined): unknown {
  const code = verifyCodeOf(err);
  if (code === undefined) return err;
  const trust = tls?.caFile ? `nats.tls.caFile ${tls.caFile}` : 'the system’s CAs (nats.tls.caFile is empty)';
  const reason = err instanceof Error ? err.message : String(err);
  const name = tls?.servername ?? 'the host of nats.url';
  return new Error(
    `the NATS server's certificate was refused (${code}): it must chain to ${trust} and name ${name}; ${reason}`,
    { cause: err },
  );
}

/** The verification code on the error or on one of its causes (the client may wrap it). */
function verifyCodeOf(err: unknown): string | undefined {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== undefined && VERIFY_CODES.has(code)) return code;
  }
  return undefined;
}
