import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface CertificateAuthority {
  certFile: string;
  keyFile: string;
  certPem: string;
}

export interface IssuedCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
  keyPem: string;
}

export interface CertificateRequest {
  commonName: string;
  dnsNames?: string[];
  ipAddresses?: string[];
}

// Node has no X.509 issuance of its own; Debian's openssl does it in a few ms.
async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd });
}

export async function createCertificateAuthority(dir: string, name: string): Promise<CertificateAuthority> {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile], dir);
  await openssl(
    [
      'req',
      '-x509',
      '-new',
      '-key',
      keyFile,
      '-sha256',
      '-days',
      '3650',
      '-subj',
      `/CN=${name}`,
      '-out',
      certFile,
    ],
    dir,
  );
  return { certFile, keyFile, certPem: await readFile(certFile, 'utf8') };
}

function subjectAltNames(req: CertificateRequest): string {
  const names = [
    ...(req.dnsNames ?? []).map((n) => `DNS:${n}`),
    ...(req.ipAddresses ?? []).map((ip) => `IP:${ip}`),
  ];
  return names.length > 0 ? `subjectAltName=${names.join(',')}` : '';
}

/** Issues a certificate signed by `ca`, usable for both serving and client authentication. */
export async function issueCertificate(
  ca: CertificateAuthority,
  dir: string,
  fileStem: string,
  req: CertificateRequest,
): Promise<IssuedCertificate> {
  const keyFile = join(dir, `${fileStem}.key`);
  const csrFile = join(dir, `${fileStem}.csr`);
  const certFile = join(dir, `${fileStem}.crt`);
  const extFile = join(dir, `${fileStem}.ext`);
  await writeFile(
    extFile,
    [
      'basicConstraints=CA:FALSE',
      'keyUsage=digitalSignature,keyEncipherment',
      'extendedKeyUsage=serverAuth,clientAuth',
      subjectAltNames(req),
    ]
      .filter(Boolean)
      .join('\n'),
  );
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile], dir);
  await openssl(['req', '-new', '-key', keyFile, '-subj', `/CN=${req.commonName}`, '-out', csrFile], dir);
  await openssl(
    [
      'x509',
      '-req',
      '-in',
      csrFile,
      '-CA',
      ca.certFile,
      '-CAkey',
      ca.keyFile,
      '-CAcreateserial',
      '-days',
      '3650',
      '-sha256',
      '-extfile',
      extFile,
      '-out',
      certFile,
    ],
    dir,
  );
  return {
    certFile,
    keyFile,
    certPem: await readFile(certFile, 'utf8'),
    keyPem: await readFile(keyFile, 'utf8'),
  };
}

/** An RSA key pair for signing and verifying service-account tokens. */
export async function createServiceAccountKey(dir: string): Promise<{ keyFile: string; pubFile: string }> {
  const keyFile = join(dir, 'service-account.key');
  const pubFile = join(dir, 'service-account.pub');
  await openssl(['genrsa', '-out', keyFile, '2048'], dir);
  await openssl(['rsa', '-in', keyFile, '-pubout', '-out', pubFile], dir);
  return { keyFile, pubFile };
}
