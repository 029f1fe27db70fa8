import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { pino } from 'pino';
import { Agent, fetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { conversionConfigSchema } from '../api/conversion-config.ts';
import {
  type CertificateAuthority,
  createCertificateAuthority,
  issueCertificate,
} from '../local-cluster/pki.ts';
import { WebhookMetrics } from './metrics.ts';
import { HeldPlans } from './plans.ts';
import { ConversionWebhookServer, type PlanSource } from './server.ts';
import { fromWorld, gizmoTarget, renameConfig } from './test-support.ts';

const log = pino({ level: 'silent' });
const TARGET = 'gizmos.x.io';
let dir: string;
let ca: CertificateAuthority;
let pair: { cert: string; key: string };
let server: ConversionWebhookServer | undefined;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'webhook-server-'));
  ca = await createCertificateAuthority(dir, 'ca');
  const issued = await issueCertificate(ca, dir, 'serving', {
    commonName: 'webhook',
    ipAddresses: ['127.0.0.1'],
  });
  pair = { cert: issued.certPem, key: issued.keyPem };
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const NO_DRAIN = { drainMs: 0 };

afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A replica holding a FieldRename plan for gizmos.x.io (v2 spec.size ↔ v1 spec.replicas). */
function holding(): PlanSource & { ready: boolean } {
  const plans = new HeldPlans('a', NO_DRAIN);
  plans.sync(
    {
      configs: [conversionConfigSchema.parse(renameConfig('g', TARGET, { pin: 'a' }))],
      instances: [{ metadata: { name: 'a' }, spec: {} }],
      targets: new Map([[TARGET, gizmoTarget(TARGET)]]),
      services: new Map(),
    },
    { nowMs: 0, viewCurrent: true, leaseSettled: true },
  );
  plans.compilePending(fromWorld);
  return {
    ready: true,
    readinessNote: () => 'ok',
    lookup: (t) => Promise.resolve(plans.lookup(t, 0, fromWorld)),
    describe: () => ({ servable: [...plans.servable()] }),
  };
}

async function start(replica: PlanSource, metrics = new WebhookMetrics(), maxReviewBytes?: number) {
  server = new ConversionWebhookServer({
    certificate: pair,
    replica,
    metrics,
    log,
    ...(maxReviewBytes && { maxReviewBytes }),
  });
  const port = await server.listen(0, '127.0.0.1');
  return `https://127.0.0.1:${port}`;
}

const agent = () => new Agent({ connect: { ca: ca.certPem }, pipelining: 0 });

async function call(url: string, init: { method?: string; body?: string } = {}) {
  const res = await fetch(url, {
    ...init,
    dispatcher: agent(),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.status, text: await res.text() };
}

const review = (objects: unknown[], desired = 'x.io/v2', uid = 'u-1') =>
  JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'ConversionReview',
    request: { uid, desiredAPIVersion: desired, objects },
  });
const gizmo = (name: string, replicas: number) => ({
  apiVersion: 'x.io/v1',
  kind: 'Gizmo',
  metadata: { name, namespace: 'default' },
  spec: { replicas },
});

describe('the webhook-server', () => {
  it('converts a review with the held plan, echoing the uid, and counts it', async () => {
    const metrics = new WebhookMetrics();
    const base = await start(holding(), metrics);
    const res = await call(`${base}/convert/${TARGET}`, {
      method: 'POST',
      body: review([gizmo('a', 3), gizmo('b', 5)]),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      response: {
        uid: 'u-1',
        result: { status: 'Success' },
        convertedObjects: [
          { apiVersion: 'x.io/v2', spec: { size: 3 } },
          { apiVersion: 'x.io/v2', spec: { size: 5 } },
        ],
      },
    });
    const body = (await call(`${base}/metrics`)).text;
    expect(body).toContain(
      `switchyard_webhook_conversion_reviews_total{target="${TARGET}",to_version="v2",result="success"} 1`,
    );
    expect(body).toContain(`switchyard_webhook_converted_objects_total{target="${TARGET}"} 2`);
  });

  it('fails a review for a target it holds no plan for, with the reason, never converting', async () => {
    const base = await start(holding());
    const res = await call(`${base}/convert/widgets.x.io`, { method: 'POST', body: review([gizmo('a', 3)]) });
    const answer = JSON.parse(res.text);
    expect(answer.response).toMatchObject({ uid: 'u-1', result: { status: 'Failure' } });
    expect(answer.response.result.message).toContain('no config converts it');
    expect(answer.response.convertedObjects).toBeUndefined();
  });

  it('answers 400 to a body that is not a review, a Failure to a malformed review with a uid, 413 past the limit', async () => {
    const base = await start(holding(), new WebhookMetrics(), 4_096);
    expect((await call(`${base}/convert/${TARGET}`, { method: 'POST', body: 'not json' })).status).toBe(400);
    const noObjects = JSON.stringify({
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'ConversionReview',
      request: { uid: 'u-2', desiredAPIVersion: 'x.io/v2' },
    });
    const malformed = await call(`${base}/convert/${TARGET}`, { method: 'POST', body: noObjects });
    expect(malformed.status).toBe(200);
    expect(JSON.parse(malformed.text).response).toMatchObject({ uid: 'u-2', result: { status: 'Failure' } });
    const big = review(Array.from({ length: 200 }, (_, i) => gizmo(`g${i}`, i)));
    expect((await call(`${base}/convert/${TARGET}`, { method: 'POST', body: big })).status).toBe(413);
  });

  it('is live at once, ready only once the replica has synced, and not ready once closing', async () => {
    const replica = { ...holding(), ready: false };
    const base = await start(replica);
    expect((await call(`${base}/healthz`)).status).toBe(200);
    expect((await call(`${base}/readyz`)).status).toBe(503);
    replica.ready = true;
    expect((await call(`${base}/readyz`)).status).toBe(200);
    expect(JSON.parse((await call(`${base}/debug/plans`)).text)).toEqual({ servable: [TARGET] });
    expect((await call(`${base}/convert/${TARGET}`)).status, 'GET on a review path').toBe(405);
    expect((await call(`${base}/elsewhere`)).status).toBe(404);
  });
});

describe('the webhook-server under arbitrary bodies', () => {
  it('answers every body with a review, a 400 or a 413, and keeps serving', { timeout: 60_000 }, async () => {
    const base = await start(holding(), new WebhookMetrics(), 64 * 1024);
    const dispatcher = agent();
    const valid = JSON.parse(review([gizmo('a', 3)])) as Record<string, unknown>;
    const bodies = fc.oneof(
      fc.string({ maxLength: 2_000 }),
      fc.json({ maxDepth: 6 }),
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify({ ...valid, request: v })),
      fc
        .jsonValue({ maxDepth: 4 })
        .map((v) =>
          JSON.stringify({ ...valid, request: { uid: 'u-f', desiredAPIVersion: 'x.io/v2', objects: [v] } }),
        ),
      fc.integer({ min: 1, max: 200_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
      fc.integer({ min: 60_000, max: 200_000 }).map((size) => 'x'.repeat(size)),
    );
    await fc.assert(
      fc.asyncProperty(bodies, async (body) => {
        const res = await fetch(`${base}/convert/${TARGET}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
          dispatcher,
        });
        const text = await res.text();
        expect([200, 400, 413]).toContain(res.status);
        if (res.status === 200) {
          const answer = JSON.parse(text);
          expect(answer.kind).toBe('ConversionReview');
          expect(['Success', 'Failure']).toContain(answer.response.result.status);
        } else expect(text.trim().length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
    expect((await call(`${base}/healthz`)).status).toBe(200);
  });
});
