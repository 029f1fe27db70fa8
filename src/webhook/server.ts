// The webhook-server's HTTPS server: thin. The kube-apiserver POSTs a ConversionReview to
// `/convert/<target>`; review.ts reads it and answers with the replica's plan for that target.
//
// Every failure has a clear answer rather than a hung or reset connection: a body too large is
// a 413, one that is not a review a 400, a review that cannot be converted a Failure review for
// its uid (the apiserver shows the message in the user's error). A body that arrives slower
// than the apiserver would wait is cut by the server's request timeout. /readyz answers 200
// once the replica's view has caught up with the bus and its first sync decided what to hold
// (plans still compiling are compiled by the review that needs one), and 503 from the moment
// shutdown starts.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { LIVENESS_PATH, READINESS_PATH } from '../api/constants.ts';
import { splitApiVersion } from '../engine/convert.ts';
import { readBody, sendJson, sendText } from '../runtime/http-body.ts';
import { HttpsService } from '../runtime/https-service.ts';
import type { CertificatePair } from '../runtime/serving-certificate.ts';
import type { WebhookMetrics } from './metrics.ts';
import type { PlanLookup } from './plans.ts';
import { answerConversionReview, parseConversionReview } from './review.ts';

const CONVERT_PREFIX = '/convert/';
export const METRICS_PATH = '/metrics';
export const DEBUG_PLANS_PATH = '/debug/plans';

/**
 * The apiserver sends a whole list response in one review: objects of at most the 1.5 MiB etcd
 * stores each, many of them. 64 MiB bounds the memory one request may take.
 */
export const MAX_REVIEW_BYTES = 64 * 1024 * 1024;

/** The apiserver waits at most 30 s for a conversion webhook; a slower body is not worth a socket. */
const REQUEST_TIMEOUT_MS = 30_000;

/** What the server asks of the replica. */
export interface PlanSource {
  readonly ready: boolean;
  /** The body of a 200 /readyz: "ok", or what a ready replica wants said (its view is behind, plans still compiling). */
  readinessNote(): string;
  lookup(target: string): Promise<PlanLookup>;
  describe(): unknown;
}

export interface WebhookServerOptions {
  certificate: CertificatePair;
  replica: PlanSource;
  metrics: WebhookMetrics;
  log: Logger;
  maxReviewBytes?: number;
}

export class ConversionWebhookServer extends HttpsService {
  private readonly replica: PlanSource;
  private readonly metrics: WebhookMetrics;
  private readonly log: Logger;
  private readonly maxReviewBytes: number;

  constructor(options: WebhookServerOptions) {
    super(options.certificate, REQUEST_TIMEOUT_MS);
    this.replica = options.replica;
    this.metrics = options.metrics;
    this.log = options.log;
    this.maxReviewBytes = options.maxReviewBytes ?? MAX_REVIEW_BYTES;
  }

  protected async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'https://webhook').pathname;
    try {
      if (path === LIVENESS_PATH) return sendText(res, 200, 'ok');
      if (path === READINESS_PATH) return this.readiness(res);
      if (path === METRICS_PATH) return await this.renderMetrics(res);
      if (path === DEBUG_PLANS_PATH) return sendJson(res, this.replica.describe());
      if (!path.startsWith(CONVERT_PREFIX))
        return sendText(res, 404, `no such path ${path}; reviews go to ${CONVERT_PREFIX}<target>`);
      if (req.method !== 'POST') return sendText(res, 405, `${path} takes POST`);
      const target = decodedTarget(path.slice(CONVERT_PREFIX.length));
      if (target === undefined)
        return sendText(
          res,
          400,
          `the target in ${path} is not percent-encoded UTF-8: ${CONVERT_PREFIX}<target>`,
        );
      await this.convert(req, res, target);
    } catch (err) {
      this.log.error({ err, path }, 'request failed');
      if (!res.headersSent) sendText(res, 500, 'internal error');
    }
  }

  private readiness(res: ServerResponse): void {
    if (!this.serving) sendText(res, 503, 'shutting down');
    else if (!this.replica.ready) sendText(res, 503, 'not synced yet: reading the bus');
    else sendText(res, 200, this.replica.readinessNote());
  }

  private async renderMetrics(res: ServerResponse): Promise<void> {
    const { contentType, body } = await this.metrics.render();
    res.writeHead(200, { 'content-type': contentType }).end(body);
  }

  private async convert(req: IncomingMessage, res: ServerResponse, target: string): Promise<void> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    const body = await readBody(req, this.maxReviewBytes, 'ConversionReview');
    if (!body.ok) {
      this.metrics.review(target, '', 'rejected', seconds());
      return sendText(res, body.status, body.message);
    }
    const parsed = parseConversionReview(body.bytes);
    if (!parsed.ok) {
      const { error } = parsed;
      this.log.warn({ target, uid: error.uid, message: error.message }, 'malformed ConversionReview');
      this.metrics.review(target, '', 'rejected', seconds());
      if (error.uid === undefined) return sendText(res, error.status, error.message);
      return sendJson(res, error.answer);
    }
    const review = parsed.value;
    const answer = answerConversionReview(review, target, await this.replica.lookup(target));
    const toVersion = splitApiVersion(review.request.desiredAPIVersion)?.version ?? '';
    const ok = answer.response.result.status === 'Success';
    this.metrics.review(
      target,
      toVersion,
      ok ? 'success' : 'failure',
      seconds(),
      review.request.objects.length,
    );
    if (!ok)
      this.log.info(
        {
          target,
          uid: review.request.uid,
          to: review.request.desiredAPIVersion,
          reason: failureMessage(answer),
        },
        'conversion failed',
      );
    sendJson(res, answer);
  }
}

// A malformed escape (`%`, `%E0%A4%A`) is the client's mistake: a 400, not a 500 logged as the
// server's failure (found by review.fuzz.test.ts).
function decodedTarget(encoded: string): string | undefined {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return undefined;
  }
}

function failureMessage(answer: { response: { result: { status: string; message?: string } } }): string {
  return answer.response.result.message ?? '';
}
