// The watcher process as it runs in a pod: `switchyard watch` records the
// project's resources on the bus through its informers client, and stops
// cleanly on SIGTERM.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { committedCrds, ensureCrd } from '../../test/support/crds.ts';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { API_VERSION, GROUP, VERSION } from '../api/constants.ts';
import { STREAMS } from '../bus/topology.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { ManagedProcess } from '../local-cluster/managed-process.ts';
import { waitFor } from '../local-cluster/wait.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
const custom = admin.makeApiClient(CustomObjectsApi);
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
    await custom.createClusterCustomObject({
      group: GROUP,
      version: VERSION,
      plural: 'conversionwebhookservers',
      body: {
        apiVersion: API_VERSION,
        kind: 'ConversionWebhookServer',
        metadata: { name: 'recorded-by-process' },
        spec: {},
      },
    });
    const nc = await connect({ servers: cluster.info.natsUrl });
    try {
      const jsm = await jetstreamManager(nc);
      const subject = 'k8s.webhookserver._.recorded-by-process';
      const message = await waitFor(
        'the record on the stream',
        async () => (await jsm.streams.getMessage(STREAMS.records, { last_by_subj: subject })) ?? undefined,
        { timeoutMs: 30_000 },
      );
      expect(message.json<{ op: string; object: { metadata: { name: string } } }>()).toMatchObject({
        op: 'upsert',
        object: { metadata: { name: 'recorded-by-process' } },
      });
    } finally {
      await nc.close();
    }
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
