// The watcher process as it runs in a pod: `switchyard watch` records the
// project's resources on the bus through its informers client, and stops
// cleanly on SIGTERM.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ApiextensionsV1Api, EventsV1Api } from '@kubernetes/client-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOwnBus } from '../../test/support/bus.ts';
import { committedCrds, crdWithSpec, ensureCrd } from '../../test/support/crds.ts';
import { useLocalCluster } from '../../test/support/local-cluster.ts';
import { awaitRecord, createWebhookServer, deleteWebhookServer } from '../../test/support/records.ts';
import { escapeToken } from '../bus/subjects.ts';
import { DEFAULT_TOPOLOGY } from '../bus/topology.ts';
import { PROJECT_ROOT } from '../local-cluster/cluster.ts';
import { ManagedProcess } from '../local-cluster/managed-process.ts';
import { natsFlags } from '../local-cluster/nats-client.ts';
import { hostPortVariable } from '../local-cluster/node-agent/pod-env.ts';
import { waitFor } from '../local-cluster/wait.ts';
import { HEALTH_PORT } from '../runtime/health-server.ts';

const cluster = useLocalCluster();
const admin = cluster.kubeConfig('admin');
let watcher: ManagedProcess;

beforeAll(async () => {
  for (const crd of await committedCrds()) await ensureCrd(admin, crd);
  watcher = new ManagedProcess(
    {
      name: 'watchers',
      command: process.execPath,
      args: [join(PROJECT_ROOT, 'src/cli/main.ts'), 'watch', ...natsFlags(cluster.info)],
      env: {
        ...process.env,
        KUBECONFIG: cluster.info.kubeConfigs.admin,
        SWITCHYARD_LOG_LEVEL: 'debug',
        [hostPortVariable(HEALTH_PORT)]: '0',
      },
      logFile: join(cluster.info.dir, 'logs', 'watchers-process.log'),
    },
    pino({ level: 'warn' }),
  );
});

afterAll(async () => {
  await watcher.stop();
  await deleteWebhookServer(admin, 'recorded-by-process');
  await admin
    .makeApiClient(ApiextensionsV1Api)
    .deleteCustomResourceDefinition({ name: 'noises.oversized.switchyard.dev' })
    .catch(() => undefined);
});

describe('switchyard watch', () => {
  it('records a ConversionWebhookServer on the record stream', async () => {
    await createWebhookServer(admin, 'recorded-by-process');
    const { last } = await awaitRecord(cluster.info, 'k8s.webhookserver._.recorded-by-process');
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

  it('records a Warning Event on an object too large for the bus, and records it without content', async () => {
    // A server of its own with a 64 KiB max_payload, so a CRD the apiserver stores easily does not fit.
    const bus = await startOwnBus(DEFAULT_TOPOLOGY, 'max_payload: 65536');
    const small = new ManagedProcess(
      {
        name: 'watchers-small-payload',
        command: process.execPath,
        args: [join(PROJECT_ROOT, 'src/cli/main.ts'), 'watch', `--nats.url=${bus.server.url}`],
        env: {
          ...process.env,
          KUBECONFIG: cluster.info.kubeConfigs.admin,
          [hostPortVariable(HEALTH_PORT)]: '0',
        },
        logFile: join(cluster.info.dir, 'logs', 'watchers-small-payload.log'),
      },
      pino({ level: 'warn' }),
    );
    try {
      const name = 'noises.oversized.switchyard.dev';
      const properties = Object.fromEntries(
        Array.from({ length: 150 }, (_, i) => [
          `f${i}`,
          { type: 'string', description: randomBytes(1_000).toString('base64') },
        ]),
      );
      await admin.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({
        body: crdWithSpec('noises', 'oversized.switchyard.dev', properties),
      });
      const events = admin.makeApiClient(EventsV1Api);
      const event = await waitFor('a RecordTooLarge Event', async () =>
        (await events.listNamespacedEvent({ namespace: 'default' })).items.find(
          (e) => e.reason === 'RecordTooLarge' && e.regarding?.name === name,
        ),
      );
      expect(event).toMatchObject({
        type: 'Warning',
        action: 'Record',
        reportingController: expect.stringContaining('switchyard'),
      });
      const { last } = await awaitRecord({ natsUrl: bus.server.url }, `k8s.crd._.${escapeToken(name)}`);
      expect(last.json<{ omitted?: { reason: string } }>().omitted?.reason).toBe('too-large');
    } finally {
      await small.stop();
      await bus.stop();
    }
  });
});
