// A ConversionReview server as its own process, for bench/webhook.ts to load: `switchyard` is the
// webhook-server's HTTPS server with the 10-rule plan of bench/fleet.ts held for
// `widgets0.example.org`; `floor` is the least any conversion webhook does, a bare HTTPS server
// that parses the review and returns its objects with only `apiVersion` rewritten. Both read
// the certificate from BENCH_CERT / BENCH_KEY and print their port.
//
//   node bench/webhook-review-server.ts switchyard|floor
import { createServer } from 'node:https';
import { pino } from 'pino';
import { API_VERSION } from '../src/api/constants.ts';
import { conversionConfigSchema } from '../src/api/conversion-config.ts';
import { compile } from '../src/engine/compile.ts';
import { targetVersions } from '../src/engine/target-versions.ts';
import { readBody } from '../src/runtime/http-body.ts';
import { WebhookMetrics } from '../src/webhook/metrics.ts';
import type { PlanLookup } from '../src/webhook/plans.ts';
import { ConversionWebhookServer, MAX_REVIEW_BYTES } from '../src/webhook/server.ts';
import { configSpec, target } from './fleet.ts';

const mode = process.argv[2];
const certificate = { cert: process.env.BENCH_CERT ?? '', key: process.env.BENCH_KEY ?? '' };

interface Review {
  apiVersion: string;
  request: { uid: string; desiredAPIVersion: string; objects: Record<string, unknown>[] };
}

function floorServer() {
  const server = createServer(certificate, async (req, res) => {
    const body = await readBody(req, MAX_REVIEW_BYTES, 'ConversionReview');
    if (!body.ok) {
      res.writeHead(body.status).end(body.message);
      return;
    }
    const review = JSON.parse(body.bytes.toString('utf8')) as Review;
    const { uid, desiredAPIVersion, objects } = review.request;
    const answer = {
      apiVersion: review.apiVersion,
      kind: 'ConversionReview',
      response: {
        uid,
        result: { status: 'Success' },
        convertedObjects: objects.map((o) => ({ ...o, apiVersion: desiredAPIVersion })),
      },
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
  });
  return new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)),
  );
}

function switchyardServer() {
  const config = conversionConfigSchema.parse({
    apiVersion: API_VERSION,
    kind: 'CRDConversionConfig',
    metadata: { name: 'widgets0' },
    spec: { targetCRD: { name: 'widgets0.example.org' }, ...configSpec(0) },
  });
  const compiled = compile(config.spec, targetVersions(target(0)));
  if (!compiled.ok) throw new Error(JSON.stringify(compiled.diagnostics));
  const plan: PlanLookup = { kind: 'plan', router: compiled.router, group: 'example.org' };
  const server = new ConversionWebhookServer({
    certificate,
    replica: {
      ready: true,
      readinessNote: () => 'ok',
      lookup: () => Promise.resolve(plan),
      describe: () => ({}),
    },
    metrics: new WebhookMetrics({ processMetrics: false }),
    log: pino({ level: 'warn' }),
  });
  return server.listen(0, '127.0.0.1');
}

const port = mode === 'floor' ? await floorServer() : await switchyardServer();
console.log(port);
process.once('SIGTERM', () => process.exit(0));
