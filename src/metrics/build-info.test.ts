import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { WebhookMetrics } from '../webhook/metrics.ts';
import { registerBuildInfo } from './build-info.ts';
import { workerMetricsToServe } from './worker-metrics.ts';

const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const line = `switchyard_build_info{version="${version}",nodejs="${process.version}"} 1`;

describe('switchyard_build_info', () => {
  it('says the release in package.json and the Node.js of the process', async () => {
    const registry = new Registry();
    registerBuildInfo(registry);
    expect(await registry.metrics()).toContain(line);
  });

  it('is served by every worker and by a webhook-server replica', async () => {
    expect(await workerMetricsToServe().metrics()).toContain(line);
    expect(await new WebhookMetrics({ processMetrics: true }).registry.metrics()).toContain(line);
  });
});
