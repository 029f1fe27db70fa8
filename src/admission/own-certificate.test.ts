// The keeper's loop over passes: nothing is served before a valid pair exists, a changed pair
// is handed on once, and a failed or unfinished pass is retried at the short interval. And one
// pass against an apiserver in memory: two replicas racing on a fresh install, a webhook
// configuration that comes later, a lost serving Secret, and the read-only mode.
import { X509Certificate } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema.ts';
import { createKubeClients } from '../kube/clients.ts';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { CertificateKeeper, type CertificatePass, certificatePass } from './own-certificate.ts';

const log = pino({ level: 'silent' });
const A = { cert: 'cert-a', key: 'key-a' };
const B = { cert: 'cert-b', key: 'key-b' };

/** A keeper over scripted passes; stops itself after the last one. */
function keeperOver(passes: (CertificatePass | Error)[]) {
  const applied: unknown[] = [];
  const waits: number[] = [];
  const stop = new AbortController();
  let calls = 0;
  let last = performance.now();
  const keeper = new CertificateKeeper({
    pass: async () => {
      const now = performance.now();
      if (calls > 0) waits.push(Math.round(now - last));
      last = now;
      const next = passes[calls++];
      if (calls >= passes.length) stop.abort();
      if (next instanceof Error) throw next;
      return next ?? { pair: undefined, published: true, patched: false };
    },
    apply: (pair) => applied.push(pair),
    log,
    intervalMs: 500,
    retryMs: 5,
  });
  return { keeper, applied, waits, run: () => keeper.run(stop.signal) };
}

describe('CertificateKeeper', () => {
  it('serves the first valid pair, then hands on only a changed one', async () => {
    const k = keeperOver([
      { pair: undefined, published: true, patched: false },
      { pair: A, published: true, patched: true },
      { pair: A, published: true, patched: false },
      { pair: B, published: true, patched: false },
    ]);
    await k.run();
    await expect(k.keeper.first).resolves.toEqual(A);
    expect(k.applied, 'the first pair is the server’s own; only the rotation is applied').toEqual([B]);
  });

  it('retries soon after a failure, a missing pair or a missing webhook configuration; waits the interval when settled', async () => {
    const k = keeperOver([
      new Error('apiserver down'),
      { pair: undefined, published: true, patched: false },
      { pair: A, published: false, patched: false },
      { pair: A, published: true, patched: true },
      { pair: A, published: true, patched: false },
    ]);
    await k.run();
    const [failed, missing, unpublished, settled] = k.waits;
    for (const short of [failed, missing, unpublished]) expect(short).toBeLessThan(250);
    expect(settled).toBeGreaterThanOrEqual(490);
  });
});

/**
 * An apiserver of two kinds in memory, as strict as the real one where a race is decided: a POST
 * of an existing name is 409, a write carrying another resourceVersion is 409. Every response
 * waits a little, so two passes started together interleave (both read, then both write).
 */
interface Stored {
  metadata: { name?: string; resourceVersion?: string };
  data?: Record<string, string>;
  webhooks?: { clientConfig: { caBundle?: string } }[];
}

function fakeApiserver() {
  const objects = new Map<string, Stored>();
  const writes: string[] = [];
  const conflicts: string[] = [];
  let version = 0;
  const store = (path: string, obj: Stored) => {
    version++;
    const stored = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(version) } };
    objects.set(path, stored);
    return stored;
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    await new Promise((r) => setTimeout(r, 5));
    const answer = (code: number, obj: unknown) => {
      res.writeHead(code, { 'content-type': 'application/json' });
      res.end(JSON.stringify(obj));
    };
    const status = (code: number, reason: string) => {
      if (code === 409) conflicts.push(`${req.method} ${path}`);
      return answer(code, { kind: 'Status', code, reason, message: reason });
    };
    const current = objects.get(path);
    if (req.method === 'GET') return current ? answer(200, current) : status(404, 'NotFound');
    if (req.method === 'POST') {
      const item = `${path}/${body.metadata.name}`;
      if (objects.has(item)) return status(409, 'AlreadyExists');
      writes.push(`create ${item}`);
      return answer(201, store(item, body));
    }
    if (req.method === 'PATCH' && req.headers['content-type'] === 'application/apply-patch+yaml') {
      const precondition = body.metadata.resourceVersion;
      if (precondition !== undefined && precondition !== current?.metadata.resourceVersion)
        return status(409, 'Conflict');
      writes.push(`apply ${path}`);
      return answer(200, store(path, { ...current, ...body }));
    }
    if (req.method === 'PATCH' && current) {
      const next = structuredClone(current);
      for (const op of body as { op: string; path: string; value: string }[]) {
        if (op.path === '/metadata/resourceVersion') {
          if (op.value !== current.metadata.resourceVersion) return status(409, 'Conflict');
          continue;
        }
        const [, , index] = op.path.split('/');
        const webhook = next.webhooks?.[Number(index)];
        if (webhook === undefined) return status(422, 'Invalid');
        webhook.clientConfig.caBundle = op.value;
      }
      writes.push(`patch ${path}`);
      return answer(200, store(path, next));
    }
    return status(404, 'NotFound');
  });
  return { server, objects, writes, conflicts };
}

const SECRETS_PATH = '/api/v1/namespaces/switchyard-system/secrets';
const CONFIG_PATH =
  '/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/switchyard-admission';

describe('certificatePass against an apiserver', () => {
  let api: ReturnType<typeof fakeApiserver>;
  let clients: ReturnType<typeof createKubeClients>;

  beforeEach(async () => {
    api = fakeApiserver();
    api.server.listen(0, '127.0.0.1');
    await once(api.server, 'listening');
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [
        {
          name: 'fake',
          server: `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`,
          skipTLSVerify: true,
        },
      ],
      users: [{ name: 'admission' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'admission' }],
      currentContext: 'fake',
    });
    clients = createKubeClients({
      kubeConfig: kc,
      component: 'admission',
      kubernetes: configSchema.parse({}).kubernetes,
    });
  });

  afterEach(async () => {
    await clients.close();
    api.server.close();
  });

  const configuration = (webhooks: number) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'switchyard-admission', resourceVersion: '1' },
    webhooks: Array.from({ length: webhooks }, () => ({ clientConfig: {} })),
  });
  const secret = (name: string) => {
    const data = api.objects.get(`${SECRETS_PATH}/${name}`)?.data ?? {};
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, Buffer.from(String(v), 'base64').toString()]),
    );
  };
  const pass = (issue = true) =>
    certificatePass({ writes: clients.writes, namespace: 'switchyard-system', issue, issuer: x509Issuer() })(
      new AbortController().signal,
    );

  it('two replicas on a fresh install: one CA, one certificate, both serve it, the caBundle holds the CA', async () => {
    api.objects.set(CONFIG_PATH, configuration(2));
    const [a, b] = await Promise.all([pass(), pass()]);
    expect(api.conflicts.length, 'the two passes did not race').toBeGreaterThan(0);
    expect(api.writes.filter((w) => w.startsWith('create')).sort(), 'each Secret created once').toEqual([
      `create ${SECRETS_PATH}/switchyard-admission-ca`,
      `create ${SECRETS_PATH}/switchyard-admission-tls`,
    ]);
    const serving = secret('switchyard-admission-tls');
    expect(a.pair?.cert).toBe(serving['tls.crt']);
    expect(b.pair).toEqual(a.pair);
    expect(a.published && b.published).toBe(true);
    const ca = new X509Certificate(secret('switchyard-admission-ca')['tls.crt'] ?? '');
    expect(new X509Certificate(serving['tls.crt'] ?? '').checkIssued(ca)).toBe(true);
    const published = api.objects
      .get(CONFIG_PATH)
      ?.webhooks?.map((w) => Buffer.from(w.clientConfig.caBundle ?? '', 'base64').toString());
    expect(published).toEqual([serving['ca.crt'], serving['ca.crt']]);

    api.writes.length = 0;
    await pass();
    expect(api.writes, 'a settled pass writes nothing').toEqual([]);
  });

  it('waits for the webhook configuration without failing, and publishes once it exists', async () => {
    const early = await pass();
    expect(early).toMatchObject({ published: false, patched: false });
    expect(early.pair).toBeDefined();
    api.objects.set(CONFIG_PATH, configuration(1));
    expect(await pass()).toMatchObject({ published: true, patched: true, pair: early.pair });
  });

  it('re-issues a deleted serving Secret from the same CA, leaving the caBundle alone', async () => {
    api.objects.set(CONFIG_PATH, configuration(1));
    const first = await pass();
    const ca = secret('switchyard-admission-ca')['tls.crt'];
    api.objects.delete(`${SECRETS_PATH}/switchyard-admission-tls`);
    api.writes.length = 0;
    const second = await pass();
    expect(second.pair?.cert).not.toBe(first.pair?.cert);
    expect(secret('switchyard-admission-ca')['tls.crt']).toBe(ca);
    expect(api.writes).toEqual([`create ${SECRETS_PATH}/switchyard-admission-tls`]);
  });

  it('with issuing off, only reads: the Secret’s pair if it is valid, nothing otherwise', async () => {
    expect((await pass(false)).pair).toBeUndefined();
    await pass(true);
    const served = secret('switchyard-admission-tls');
    api.writes.length = 0;
    expect((await pass(false)).pair).toEqual({ cert: served['tls.crt'], key: served['tls.key'] });
    const path = `${SECRETS_PATH}/switchyard-admission-tls`;
    const stored = api.objects.get(path) ?? { metadata: {} };
    api.objects.set(path, {
      ...stored,
      data: { ...stored.data, 'tls.key': Buffer.from('garbage').toString('base64') },
    });
    expect((await pass(false)).pair, 'a key that does not match is not served').toBeUndefined();
    expect(api.writes).toEqual([]);
  });
});
