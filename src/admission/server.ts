// The admission webhook's HTTPS server: thin. It reads the AdmissionReview, reads what
// review.ts says the decision needs (cluster-read.ts), and answers with review.ts's response.
//
// Every failure has a clear answer rather than a hung or reset connection: a body that is not
// JSON, or too large, is a 400/413 (the apiserver applies the webhook's failurePolicy, Fail,
// and shows the status); a review that cannot be read but names its uid is answered as a denied
// review for that uid; a cluster read that fails or takes too long is a denial that says to
// retry. Nothing here ever admits a write it could not check.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { systemClock } from '../runtime/clock.ts';
import { readBody, sendJson, sendText } from '../runtime/http-body.ts';
import { HttpsService } from '../runtime/https-service.ts';
import type { CertificatePair } from '../runtime/serving-certificate.ts';
import { type ClusterReader, describeReadError } from './cluster-read.ts';
import {
  type AdmissionRequest,
  type AdmissionResponse,
  badRequest,
  deny,
  parseReview,
  readsFor,
  review,
  reviewOf,
  unavailable,
} from './review.ts';

/** The path the ValidatingWebhookConfiguration calls (deploy/admission/webhook.yaml). */
export const ADMISSION_PATH = '/validate';

/**
 * A review carries the object and, on an update, the stored one: two objects of at most the
 * 1.5 MiB etcd stores, plus the request's own fields. A larger body is not the apiserver's.
 */
export const MAX_REVIEW_BYTES = 4 * 1024 * 1024;

/**
 * The apiserver waits `timeoutSeconds` (10 in deploy/admission/webhook.yaml) for an answer. The
 * cluster read gets half of that, so a slow apiserver yields this server's own denial, saying
 * to retry, instead of a timeout the writer must interpret.
 */
export const READ_DEADLINE_MS = 5_000;

/** Arriving slower than the apiserver would ever wait for an answer: not worth holding a socket for. */
const REQUEST_TIMEOUT_MS = 10_000;

export interface AdmissionServerOptions {
  certificate: CertificatePair;
  reader: ClusterReader;
  /** Switchyard's own namespace: where instances run by default, and where their allowances live. */
  operatorNamespace: string;
  log: Logger;
  maxReviewBytes?: number;
  readDeadlineMs?: number;
}

export class AdmissionServer extends HttpsService {
  private readonly reader: ClusterReader;
  private readonly operatorNamespace: string;
  private readonly log: Logger;
  private readonly maxReviewBytes: number;
  private readonly readDeadlineMs: number;

  constructor(options: AdmissionServerOptions) {
    super(options.certificate, REQUEST_TIMEOUT_MS);
    this.reader = options.reader;
    this.operatorNamespace = options.operatorNamespace;
    this.log = options.log;
    this.maxReviewBytes = options.maxReviewBytes ?? MAX_REVIEW_BYTES;
    this.readDeadlineMs = options.readDeadlineMs ?? READ_DEADLINE_MS;
  }

  protected async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'https://admission').pathname;
    if (path === '/healthz') return sendText(res, 200, 'ok');
    if (path === '/readyz')
      return this.serving ? sendText(res, 200, 'ok') : sendText(res, 503, 'shutting down');
    if (path !== ADMISSION_PATH)
      return sendText(res, 404, `no such path ${path}; reviews go to ${ADMISSION_PATH}`);
    if (req.method !== 'POST') return sendText(res, 405, `${ADMISSION_PATH} takes POST`);
    try {
      await this.admit(req, res);
    } catch (err) {
      this.log.error({ err }, 'admission request failed');
      if (!res.headersSent) sendText(res, 500, 'internal error');
    }
  }

  private async admit(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, this.maxReviewBytes, 'review');
    if (!body.ok) return sendText(res, body.status, body.message);
    let value: unknown;
    try {
      value = JSON.parse(body.bytes.toString('utf8'));
    } catch {
      return sendText(res, 400, 'request body is not JSON');
    }
    const parsed = parseReview(value);
    if (!parsed.ok) {
      const { uid, message } = parsed.error;
      this.log.warn({ uid, message }, 'malformed AdmissionReview');
      if (uid === undefined) return sendText(res, 400, message);
      return sendJson(res, reviewOf(deny(uid, badRequest(message))));
    }
    const started = systemClock.monotonic();
    const response = await this.decide(parsed.value);
    this.log.info(
      {
        ...describe(parsed.value),
        allowed: response.allowed,
        ms: Math.round(systemClock.monotonic() - started),
      },
      response.allowed ? 'admitted' : `denied: ${response.status?.message}`,
    );
    sendJson(res, reviewOf(response));
  }

  private async decide(request: AdmissionRequest): Promise<AdmissionResponse> {
    try {
      const cluster = await withDeadline(
        this.reader.read(readsFor(request, this.operatorNamespace)),
        this.readDeadlineMs,
      );
      return review(request, cluster, this.operatorNamespace);
    } catch (err) {
      this.log.warn({ err, uid: request.uid }, 'could not read the cluster to decide');
      return deny(
        request.uid,
        unavailable(
          `Switchyard admission could not read the current objects to check this write (${describeReadError(err)}); nothing was written, retry`,
        ),
      );
    }
  }
}

function describe(request: AdmissionRequest) {
  const name = (request.object as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return { uid: request.uid, operation: request.operation, kind: request.kind.kind, name };
}

async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the apiserver within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
