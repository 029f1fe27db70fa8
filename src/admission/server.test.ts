import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Agent, fetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { GROUP } from '../api/constants.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  type IssuedCertificate,
  issueCertificate,
} from '../local-cluster/pki.ts';
import { CertificateReloader, readCertificatePair } from '../runtime/serving-certificate.ts';
import type { ClusterReader } from './cluster-read.ts';
import type { ClusterReads, ClusterState } from './review.ts';
import { ADMISSION_PATH, AdmissionServer } from './server.ts';

const log = pino({ level: 'silent' });
let dir: string;
let ca: CertificateAuthority;
let cert: IssuedCertificate;
let server: AdmissionServer | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'admission-server-'));
  ca = await createCertificateAuthority(dir, 'ca-one');
  cert = await issueCertificate(ca, dir, 'serving-one', {
    commonName: 'admission',
    ipAddresses: ['127.0.0.1'],
  });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  await server?.close();
  server = undefined;
});

const emptyCluster: ClusterState = { instances: [], configs: [] };

async function start(
  reader: ClusterReader,
  options: { maxReviewBytes?: number; readDeadlineMs?: number } = {},
) {
  server = new AdmissionServer({
    certificate: { cert: cert.certPem, key: cert.keyPem },
    reader,
    operatorNamespace: 'switchyard-system',
    log,
    ...options,
  });
  const port = await server.listen(0, '127.0.0.1');
  return `https://127.0.0.1:${port}`;
}

function trusting(caPem: string) {
  return new Agent({ connect: { ca: caPem }, pipelining: 0 });
}

async function post(base: string, body: string, caPem = ca.certPem) {
  const res = await fetch(`${base}${ADMISSION_PATH}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    dispatcher: trusting(caPem),
  });
  const text = await res.text();
  return { status: res.status, text, json: () => JSON.parse(text) };
}

const secondDefault = {
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: {
    uid: 'u-1',
    kind: { group: GROUP, version: 'v1alpha1', kind: 'ConversionWebhookServer' },
    operation: 'CREATE',
    object: { metadata: { name: 'b' }, spec: { default: true } },
  },
};

describe('admission server', () => {
  it('answers a review with the decision over what the reader returned, reading only what it needs', async () => {
    const asked: ClusterReads[] = [];
    const base = await start({
      read: async (reads) => {
        asked.push(reads);
        return {
          ...emptyCluster,
          instances: [{ metadata: { name: 'a' }, spec: { default: true } }],
          allowances: {},
        };
      },
    });
    const res = await post(base, JSON.stringify(secondDefault));
    expect(res.status).toBe(200);
    expect(res.json()).toMatchObject({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u-1', allowed: false, status: { code: 422 } },
    });
    expect(asked).toEqual([{ instances: true, allowancesIn: 'switchyard-system' }]);
  });

  it('answers a body that is not JSON with a 400 that says so', async () => {
    const res = await post(await start({ read: async () => emptyCluster }), '{"apiVersion":');
    expect(res).toMatchObject({ status: 400, text: 'request body is not JSON\n' });
  });

  it('refuses a body over the limit with a 413, without reading it all', async () => {
    const base = await start({ read: async () => emptyCluster }, { maxReviewBytes: 1_000 });
    const res = await post(base, JSON.stringify({ padding: 'x'.repeat(5_000) }));
    expect(res.status).toBe(413);
  });

  it('denies a review it cannot read but whose uid it can, echoing the uid', async () => {
    const base = await start({ read: async () => emptyCluster });
    const res = await post(
      base,
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: { uid: 'u-9' } }),
    );
    expect(res.status).toBe(200);
    expect(res.json().response).toMatchObject({ uid: 'u-9', allowed: false, status: { code: 400 } });
  });

  it('denies, saying to retry, when the cluster cannot be read in time: never admits unchecked', async () => {
    const base = await start({ read: () => new Promise(() => undefined) }, { readDeadlineMs: 50 });
    const res = await post(base, JSON.stringify(secondDefault));
    expect(res.json().response).toMatchObject({
      uid: 'u-1',
      allowed: false,
      status: { code: 503, message: expect.stringMatching(/could not read .*within 50 ms.*retry$/) },
    });
  });

  it('serves /healthz and /readyz, and nothing but POST on the review path', async () => {
    const base = await start({ read: async () => emptyCluster });
    const get = (path: string) => fetch(`${base}${path}`, { dispatcher: trusting(ca.certPem) });
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(200);
    expect((await get(ADMISSION_PATH)).status).toBe(405);
    expect((await get('/mutate')).status).toBe(404);
  });
});

describe('serving certificate reload', () => {
  it('serves a rotated certificate to new connections without a restart, and keeps the last good one on a bad update', async () => {
    const files = { certFile: join(dir, 'tls.crt'), keyFile: join(dir, 'tls.key') };
    await writeFile(files.certFile, cert.certPem);
    await writeFile(files.keyFile, cert.keyPem);
    const base = await start({ read: async () => emptyCluster });
    const reloader = new CertificateReloader(await readCertificatePair(files), {
      files,
      intervalMs: 60_000,
      apply: (pair) => server?.setCertificate(pair),
      log,
    });
    const caTwo = await createCertificateAuthority(dir, 'ca-two');
    const rotated = await issueCertificate(caTwo, dir, 'serving-two', {
      commonName: 'admission',
      ipAddresses: ['127.0.0.1'],
    });
    await writeFile(files.certFile, rotated.certPem);
    await writeFile(files.keyFile, rotated.keyPem);
    await reloader.check();
    expect((await post(base, JSON.stringify(secondDefault), caTwo.certPem)).status).toBe(200);
    await expect(post(base, JSON.stringify(secondDefault), ca.certPem)).rejects.toThrow();

    // A key that does not match the certificate (an update caught half-way) changes nothing.
    await writeFile(files.keyFile, cert.keyPem);
    await reloader.check();
    expect((await post(base, JSON.stringify(secondDefault), caTwo.certPem)).status).toBe(200);
  });
});
