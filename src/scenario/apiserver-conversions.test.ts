import { describe, expect, it } from 'vitest';
import { conversionsFromMetrics, totalOf } from './apiserver-conversions.ts';

const metrics = [
  '# HELP apiserver_crd_conversion_webhook_duration_seconds [ALPHA] CRD webhook conversion duration in seconds',
  '# TYPE apiserver_crd_conversion_webhook_duration_seconds histogram',
  'apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name="a.x.io",from_version="x.io/v1",succeeded="true",to_version="x.io/v2",le="0.005"} 7',
  'apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="a.x.io",from_version="x.io/v1",succeeded="true",to_version="x.io/v2"} 12',
  'apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="a.x.io",from_version="x.io/v2",succeeded="true",to_version="x.io/v1"} 3',
  'apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="a.x.io",from_version="x.io/v1",succeeded="false",to_version="x.io/v2"} 2',
  'apiserver_crd_conversion_webhook_duration_seconds_count{crd_name="b.x.io",from_version="x.io/v1",result="success",to_version="x.io/v2"} 5',
  'apiserver_crd_conversion_webhook_duration_seconds_sum{crd_name="b.x.io",from_version="x.io/v1",result="success",to_version="x.io/v2"} 0.5',
].join('\n');

describe("the apiserver's count of conversion webhook calls", () => {
  it('sums counts per CRD, successes apart from failures, whichever label the apiserver uses', () => {
    const byCrd = conversionsFromMetrics(metrics);
    expect(Object.fromEntries(byCrd)).toEqual({
      'a.x.io': { succeeded: 15, failed: 2 },
      'b.x.io': { succeeded: 5, failed: 0 },
    });
    expect(totalOf(byCrd)).toEqual({ succeeded: 20, failed: 2 });
    expect(totalOf(byCrd, ['b.x.io', 'c.x.io'])).toEqual({ succeeded: 5, failed: 0 });
  });
});
