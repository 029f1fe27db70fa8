import { describe, expect, it } from 'vitest';
import { x509Issuer } from '../tls/x509-issuer.ts';
import { WebhookMetrics } from './metrics.ts';

describe('the webhook-server metrics', () => {
  it('renders reviews, latency, plans and Lease publishes in the Prometheus text format', async () => {
    const m = new WebhookMetrics();
    m.review('gizmos.x.io', 'v2', 'success', 0.002, 10);
    m.review('gizmos.x.io', 'v2', 'failure', 0.001);
    m.review('gizmos.x.io', 'v2', 'rejected', 5);
    m.plans(3, 1, 7);
    m.observeLease(() => ({ publishes: 2, renewals: 5, lastEncodedBytes: 118 }));
    const { contentType, body } = await m.render();
    expect(contentType).toMatch(/^text\/plain/);
    expect(body).toContain(
      'switchyard_webhook_conversion_reviews_total{target="gizmos.x.io",to_version="v2",result="success"} 1',
    );
    expect(body).toContain('switchyard_webhook_converted_objects_total{target="gizmos.x.io"} 10');
    expect(body).toContain('# TYPE switchyard_webhook_conversion_review_seconds histogram');
    expect(body).toContain('switchyard_webhook_conversion_review_seconds_count{result="failure"} 1');
    expect(body).toContain(
      'switchyard_webhook_conversion_review_seconds_bucket{le="0.001",result="failure"} 1',
    );
    expect(body).toContain(
      'switchyard_webhook_conversion_review_seconds_bucket{le="0.001",result="success"} 0',
    );
    expect(body).toContain(
      'switchyard_webhook_conversion_review_seconds_bucket{le="0.0025",result="success"} 1',
    );
    expect(body).toContain(
      'switchyard_webhook_conversion_review_seconds_bucket{le="+Inf",result="success"} 1',
    );
    expect(body).toContain('switchyard_webhook_conversion_review_seconds_sum{result="success"} 0.002');
    expect(body).toContain('switchyard_webhook_conversion_review_seconds_bucket{le="1",result="rejected"} 0');
    expect(body).toContain(
      'switchyard_webhook_conversion_review_seconds_bucket{le="+Inf",result="rejected"} 1',
    );
    expect(body).toContain('switchyard_webhook_plans_held 3');
    expect(body).toContain('switchyard_webhook_compile_failures 1');
    expect(body).toContain('switchyard_webhook_plans_pending_compile 7');
    expect(body).toContain('switchyard_webhook_lease_publishes_total{kind="set"} 2');
    expect(body).toContain('switchyard_webhook_lease_publishes_total{kind="renew"} 5');
    expect(body).toContain('switchyard_webhook_lease_served_set_bytes 118');
  });

  it('keeps counting across scrapes: counters only grow', async () => {
    const m = new WebhookMetrics();
    const line =
      'switchyard_webhook_conversion_reviews_total{target="t.x.io",to_version="v1",result="success"}';
    m.review('t.x.io', 'v1', 'success', 0.001, 2);
    expect((await m.render()).body).toContain(`${line} 1`);
    expect((await m.render()).body).toContain(`${line} 1`);
    m.review('t.x.io', 'v1', 'success', 0.001, 3);
    m.review('t.x.io', 'v1', 'success', 0.001, 0);
    const { body } = await m.render();
    expect(body).toContain(`${line} 3`);
    expect(body).toContain('switchyard_webhook_converted_objects_total{target="t.x.io"} 5');
  });

  it('keeps one registry per replica', async () => {
    const a = new WebhookMetrics();
    const b = new WebhookMetrics();
    a.plans(5, 0, 0);
    expect((await b.render()).body).toContain('switchyard_webhook_plans_held 0');
  });

  it('reports when the served certificate expires, and follows a reload', async () => {
    const m = new WebhookMetrics();
    const notAfter = (days: number) => Math.floor((Date.now() + days * 86_400_000) / 1000) * 1000;
    const issue = async (ms: number) =>
      (
        await x509Issuer().createCa({
          commonName: 'serving',
          notBeforeMs: Date.now() - 60_000,
          notAfterMs: ms,
        })
      ).certPem;
    const first = notAfter(30);
    m.servingCertificate(await issue(first));
    expect((await m.render()).body).toContain(
      `switchyard_serving_certificate_expiry_timestamp_seconds ${first / 1000}`,
    );
    const renewed = notAfter(90);
    m.servingCertificate(await issue(renewed));
    expect((await m.render()).body).toContain(
      `switchyard_serving_certificate_expiry_timestamp_seconds ${renewed / 1000}`,
    );
  });
});
