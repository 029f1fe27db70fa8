// The watcher process as it runs in a pod: `switchyard watch` records the
// project's resources on the bus through its informers client, and stops
// cleanly on SIGTERM.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedCrds, ensureCrd } from '../../test/support/crds.ts';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { awaitRecord, createWebhookServer } from '../../test/support/records.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { ManagedProcess } from '../local-cluster/managed-process.ts';
import { waitFor } from '../local-cluster/wait.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
let watcher: ManagedProcess;

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  watcher = new ManagedProcess(
    {
      name: 'watchers',
      command: process.execPath,
      args: [join(PROJECT_ROOT, 'src/cli/main.ts'), 'watch', `--nats.url=${cluster.info.natsUrl}`],
      env: { ...process.env, KUBECONFIG: cluster.info.kubeConfigs.admin, SWITCHYARD_LOG_LEVEL: 'debug' },
      logFile: join(cluster.info.dir, 'logs', 'watchers-process.log'),
    },
    pino({ level: 'warn' }),
  );
});

afterAll(async () => {
  await watcher.stop();
});

describe('switchyard watch', () => {
  it('records a ConversionWebhookServer on the record stream', async () => {
    await createWebhookServer(admin, 'recorded-by-process');
    const { last } = await awaitRecord(cluster.info.natsUrl, 'k8s.webhookserver._.recorded-by-process');
    expect(last.json<{ op: string; object: { metadata: { name: string } } }>()).toMatchObject({
      op: 'upsert',
      object: { metadata: { name: 'recorded-by-process' } },
    });
  });

  it('lists and watches with its informers client’s User-Agent', async () => {
    const requests = await waitFor('the watcher’s watch in the audit log', async () => {
      const entries = (await readFile(cluster.info.auditLog, 'utf8'))
        .split('\n')
        .filter((l) => l.includes('conversionwebhookservers') && l.includes('switchyard/watchers'))
        .map((l) => JSON.parse(l) as { verb: string; userAgent: string });
      return entries.some((e) => e.verb === 'watch') && entries.some((e) => e.verb === 'list')
        ? entries
        : undefined;
    });
    expect(new Set(requests.map((r) => r.userAgent))).toEqual(new Set(['switchyard/watchers/informers']));
  });

  it('exits cleanly on SIGTERM', async () => {
    await watcher.stop(10_000);
    expect(await watcher.whenExited()).toBe(0);
  });
});
